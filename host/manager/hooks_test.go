package manager

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/host/tool"
)

var (
	hookPluginOnce sync.Once
	hookPluginBin  string
	hookPluginErr  error
)

// hookPlugin builds cmd/plughost/internal/hookplugin (the test hook
// plugin) once.
func hookPlugin(t *testing.T) string {
	t.Helper()
	hookPluginOnce.Do(func() {
		dir, err := os.MkdirTemp("", "manager-hookplugin")
		if err != nil {
			hookPluginErr = err
			return
		}
		hookPluginBin = filepath.Join(dir, "hookplugin")
		out, err := exec.Command("go", "build", "-o", hookPluginBin, "../../cmd/plughost/internal/hookplugin").CombinedOutput()
		if err != nil {
			hookPluginErr = errors.New("building the hook plugin: " + err.Error() + ": " + string(out))
		}
	})
	if hookPluginErr != nil {
		t.Fatal(hookPluginErr)
	}
	return hookPluginBin
}

// The plugin is told the claims of Options.PassClaims only; a plugin that
// does not serve the point, or is not loaded, is refused naming why; one
// that crashes fails the question at once.
func TestAskHookRefusalsAndFailures(t *testing.T) {
	t.Parallel()
	bin := hookPlugin(t)
	dir := t.TempDir()
	log := filepath.Join(t.TempDir(), "questions.jsonl")
	writeScript(t, filepath.Join(dir, "guard"), "HOOKPLUGIN_POINTS=before_call,on_definitions HOOKPLUGIN_LOG="+log+" exec "+bin)
	h := start(t, dir, Options{PassClaims: []string{"team"}})
	h.expect("set", "guard")

	caller := &tool.Caller{Subject: "ann", Claims: map[string]any{"team": "ops", "email": "ann@example.com"}}
	a, err := h.m.AskHook(t.Context(), "guard", &tool.HookCall{Point: tool.BeforeCall, Hook: "pass", Caller: caller,
		Item: tool.Item{Kind: tool.ItemTool, Name: "x", Provider: "other"}, Arguments: json.RawMessage(`{}`)})
	if err != nil || a.Decision != tool.HookPass {
		t.Fatalf("pass: %+v, %v", a, err)
	}
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	sc.Scan()
	_ = f.Close()
	var seen struct {
		Caller struct {
			Subject string
			Claims  json.RawMessage
		}
	}
	if err := json.Unmarshal(sc.Bytes(), &seen); err != nil || seen.Caller.Subject != "ann" || string(seen.Caller.Claims) != `{"team":"ops"}` {
		t.Fatalf("the hook saw %s (%v); want the caller with the team claim only", sc.Bytes(), err)
	}

	_, err = h.m.AskHook(t.Context(), "guard", &tool.HookCall{Point: tool.AfterCall, Hook: "pass"})
	if !errors.Is(err, tool.ErrRefused) || !strings.Contains(err.Error(), "serves no hook at after_call") {
		t.Fatalf("a point not offered: %v", err)
	}
	_, err = h.m.AskHook(t.Context(), "nosuch", &tool.HookCall{Point: tool.BeforeCall, Hook: "pass"})
	if !errors.Is(err, tool.ErrRefused) || !strings.Contains(err.Error(), "no plugin nosuch") {
		t.Fatalf("a plugin not loaded: %v", err)
	}
	_, err = h.m.AskHook(t.Context(), "guard", &tool.HookCall{Point: tool.BeforeCall, Hook: "flood"})
	if !errors.Is(err, pluginclient.ErrHookFailed) || !strings.Contains(err.Error(), "over the host's MaxResultSize") {
		t.Fatalf("a hook that floods: %v", err)
	}
	_, err = h.m.AskHook(t.Context(), "guard", &tool.HookCall{Point: tool.BeforeCall, Hook: "crash"})
	if !errors.Is(err, pluginclient.ErrPluginClosed) || !strings.Contains(err.Error(), "plugin guard") {
		t.Fatalf("a hook that crashed: %v", err)
	}
}

// A hook plugin that crashed too often is parked, and a question to it is
// refused at once saying so.
func TestAskHookRefusesAParkedPlugin(t *testing.T) {
	t.Parallel()
	bin := hookPlugin(t)
	dir := t.TempDir()
	copyFile(t, bin, filepath.Join(dir, "guard"), 0o755)
	h := start(t, dir, Options{CrashLimit: 1})
	h.expect("set", "guard")
	if _, err := h.m.AskHook(t.Context(), "guard", &tool.HookCall{Point: tool.BeforeCall, Hook: "crash"}); !errors.Is(err, pluginclient.ErrPluginClosed) {
		t.Fatalf("a hook that crashed: %v", err)
	}
	h.expect("remove", "guard")
	_, err := h.m.AskHook(t.Context(), "guard", &tool.HookCall{Point: tool.BeforeCall, Hook: "pass"})
	if !errors.Is(err, tool.ErrRefused) || !strings.Contains(err.Error(), "plugin guard is parked") {
		t.Fatalf("a question to a parked plugin: %v", err)
	}
}
