package docs

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/host/tool"
)

// The Go example of plugin-authors.md's "Guardrail hooks" builds, and
// answers as the section says when the host's client asks it: a recursive
// delete refused, an e-mail address redacted, the rest passed.
func TestHookExampleRuns(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("plugin-authors.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(src), "\n## Guardrail hooks\n")
	if !ok {
		t.Fatal(`plugin-authors.md has no "Guardrail hooks" section`)
	}
	blocks, _ := split(section)
	if len(blocks) == 0 || blocks[0].lang != "go" {
		t.Fatal(`"Guardrail hooks" does not start with a go block`)
	}
	// Built as a package of this module (an overlay puts the example's
	// file there), so that it uses this pluginproto.
	tmp := t.TempDir()
	example := filepath.Join(tmp, "main.go")
	if err := os.WriteFile(example, []byte(blocks[0].body), 0o644); err != nil {
		t.Fatal(err)
	}
	pkg, err := filepath.Abs(filepath.Join("internal", "hookexample"))
	if err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(pkg, "main.go"): example}})
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "no-rm")
	if out, err := exec.Command("go", "build", "-overlay", overlayFile, "-o", bin, "./internal/hookexample").CombinedOutput(); err != nil {
		t.Fatalf("the example does not build: %v\n%s", err, out)
	}

	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: pluginclient.Handshake, VersionedPlugins: pluginclient.PluginSets(nil),
		Cmd: exec.Command(bin), AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: os.Stderr}),
	})
	t.Cleanup(pc.Kill)
	rpc, err := pc.Client()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := rpc.Dispense(pluginclient.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	c := raw.(*pluginclient.Client)
	if _, err := c.Describe(t.Context(), "docs"); err != nil {
		t.Fatal(err)
	}
	item := tool.Item{Kind: tool.ItemTool, Name: "shell", Provider: "shell"}
	for _, tc := range []struct {
		q         tool.HookCall
		decision  tool.HookDecision
		rewritten string
	}{
		{tool.HookCall{Point: tool.BeforeCall, Hook: "no-rm", Item: item, Arguments: json.RawMessage(`{"cmd":"rm -rf /"}`)}, tool.HookRefuse, ""},
		{tool.HookCall{Point: tool.BeforeCall, Hook: "no-rm", Item: item, Arguments: json.RawMessage(`{"cmd":"ls"}`)}, tool.HookPass, ""},
		{tool.HookCall{Point: tool.AfterCall, Hook: "no-rm", Item: item, Result: json.RawMessage(`{"content":[{"type":"text","text":"mail ann@example.com"}]}`)},
			tool.HookRewrite, `{"content":[{"type":"text","text":"mail [email]"}]}`},
	} {
		a, err := c.Hook(t.Context(), &tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if a.Decision != tc.decision || string(a.Rewritten) != tc.rewritten {
			t.Errorf("%s %s: %+v (%s), want %s %s", tc.q.Point, tc.q.Arguments, a, a.Rewritten, tc.decision, tc.rewritten)
		}
	}
}
