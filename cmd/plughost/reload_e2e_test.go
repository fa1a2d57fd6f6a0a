package main

import (
	"context"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Configuration reloads (issue 35): a real serve, over HTTP with two
// OAuth callers and over stdio, its configuration rewritten while sessions
// are open and a call is in flight.

// renameOver writes src to a new file and renames it over path, as an
// editor or a configuration manager does.
func renameOver(t *testing.T, path, src string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".new-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// awaitCount waits until the log says substr n times (at most 60 s).
func awaitCount(t *testing.T, b *lineBuffer, substr string, n int) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		b.mu.Lock()
		got, changed := strings.Count(b.buf.String(), substr), b.changed
		b.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("the log said %q %d times, not %d:\n%s", substr, got, n, b)
		}
	}
}

// heldClient is a session whose client holds each elicitation until told
// to answer: the call that asked stays in flight meanwhile.
type heldClient struct {
	cs      *mcp.ClientSession
	changed chan struct{} // one per tools/list_changed
	asked   chan struct{} // one per elicitation received
	answer  chan struct{} // one answers one elicitation
}

func newHeldClient() (*heldClient, *mcp.Client) {
	c := &heldClient{changed: make(chan struct{}, 16), asked: make(chan struct{}, 4), answer: make(chan struct{}, 4)}
	return c, mcp.NewClient(&mcp.Implementation{Name: "plughost-e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { c.changed <- struct{}{} },
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.asked <- struct{}{}
			select {
			case <-c.answer:
				return &mcp.ElicitResult{Action: "accept"}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	})
}

func (c *heldClient) tools(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := c.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// callHeld starts wait_for_user, which asks the client and stays in
// flight until c.answer; the result's text comes on the channel.
func (c *heldClient) callHeld(t *testing.T) <-chan string {
	done := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait_for_user"})
		if err != nil {
			done <- "error: " + err.Error()
			return
		}
		done <- text(res)
	}()
	await(t, c.asked, "the elicitation of the call in flight")
	return done
}

// TestReloadOverHTTP: serve --http with alice (a writer) and bob (not)
// connected, alice's call in flight. The file renamed over lets bob see
// sleep: bob gets list_changed and the new view, alice (whose view is the
// same) none, and her call completes in the session that goes on. A file that does not parse is
// refused (the watch, then SIGHUP): the log names file:line, the rules in
// force stay, and plughost_config_reloads_total counts each result.
func TestReloadOverHTTP(t *testing.T) {
	t.Parallel()
	as := startOIDCProvider(t)
	const resource = "https://mcp.example.com/mcp"
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "plughost.hcl")
	auth := strings.TrimSuffix(as.AuthBlock(resource, "mcp:tools"), "}\n") + "  pass_claims = [\"groups\"]\n}\n"
	const writersSleep = `
access {
  rule "only writers sleep" {
    deny = "item.name == 'sleep' && !(has(caller.claims.groups) && 'writers' in caller.claims.groups)"
  }
}
`
	const anyoneSleeps = `
access {
  rule "carol reads no notes" {
    deny = "item.name == 'read_note' && caller.subject == 'carol'"
  }
}
`
	renameOver(t, cfgPath, auth+writersSleep)
	h := startHTTPHostWith(t, []string{"--config", cfgPath, "--metrics-listen", "127.0.0.1:0"})
	metricsAt := metricsURL.FindStringSubmatch(h.stderr.String())
	if metricsAt == nil {
		t.Fatalf("no metrics URL in the log:\n%s", h.stderr)
	}

	connect := func(who string) *heldClient {
		hc := h.httpClient(nil)
		hc.Transport = bearer{hc.Transport, as.Token(t, who, resource, "mcp:tools")}
		c, client := newHeldClient()
		cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: h.base + "/mcp", HTTPClient: hc}, sessionEra)
		if err != nil {
			t.Fatalf("connect as %s: %v", who, err)
		}
		t.Cleanup(func() { cs.Close() })
		c.cs = cs
		return c
	}
	alice, bob := connect(oidcAlice), connect(oidcBob)
	// Plugins added once both are connected: one list_changed each.
	for _, p := range []string{"echo", "askplugin"} {
		copyPlugin(t, p, h.pluginDir, p)
		await(t, alice.changed, "alice's list_changed for "+p)
		await(t, bob.changed, "bob's list_changed for "+p)
	}
	if got := bob.tools(t); slices.Contains(got, "sleep") || !slices.Contains(got, "read_note") {
		t.Fatalf("bob's tools under the first rules: %v", got)
	}
	held := alice.callHeld(t)

	// Anyone sleeps now: bob's view changes, alice's does not.
	renameOver(t, cfgPath, auth+anyoneSleeps)
	h.stderr.await(t, "configuration reloaded")
	await(t, bob.changed, "bob's list_changed for the new rules")
	if got := bob.tools(t); !slices.Contains(got, "sleep") {
		t.Errorf("bob's tools under the new rules: %v, want sleep", got)
	}
	if n := len(bob.changed); n != 0 {
		t.Errorf("bob got %d more list_changed", n)
	}
	alice.answer <- struct{}{}
	select {
	case got := <-held:
		if got != "accept" {
			t.Errorf("alice's call in flight during the reload: %q, want accept", got)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("alice's call in flight never completed")
	}
	// Alice was not told: the first list_changed she gets is for a plugin
	// added after the reload (one for the reload would have come first).
	copyPlugin(t, "clock", h.pluginDir, "clock")
	await(t, alice.changed, "alice's list_changed for clock")
	if got := alice.tools(t); !slices.Contains(got, "get_current_time") {
		t.Errorf("alice's first list_changed after the reload is not clock's: tools %v", got)
	}
	if n := len(alice.changed); n != 0 {
		t.Errorf("alice got %d more list_changed", n)
	}

	// A file that does not parse: refused, by the watch and by SIGHUP.
	renameOver(t, cfgPath, auth+writersSleep+"limits {\n  in_flight = \n}\n")
	h.stderr.await(t, "configuration refused")
	if err := h.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	awaitCount(t, h.stderr, "configuration refused", 2)
	line := strings.Count(auth+writersSleep, "\n") + 2
	if want := cfgPath + ":" + strconv.Itoa(line); !strings.Contains(h.stderr.String(), want) {
		t.Errorf("the refusal does not name %s:\n%s", want, h.stderr)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if res, err := bob.cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 1}}); err != nil || res.IsError {
		t.Errorf("bob's sleep after the refused file (the rules in force let him): %v %v", res, err)
	}
	if res, err := alice.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still"}}); err != nil || text(res) != "still" {
		t.Errorf("alice's session after the reloads: %v %v", res, err)
	}
	fams := scrape(t, http.DefaultClient, metricsAt[1])
	got := map[string]float64{}
	if f := fams["plughost_config_reloads_total"]; f != nil {
		for _, m := range f.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	if want := map[string]float64{"applied": 1, "refused": 2, "failed": 0}; !maps.Equal(got, want) {
		t.Errorf("plughost_config_reloads_total: %v, want %v", got, want)
	}
}

// TestReloadOverStdio: plughost serve over stdio, the local user's view
// hiding sleep; the file rewritten and SIGHUP sent while a call is in
// flight: the session gets list_changed and sees sleep, the call
// completes; a change that waits for the next start is named.
func TestReloadOverStdio(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "plughost.hcl")
	renameOver(t, cfgPath, `
access {
  rule "the local user does not sleep" {
    deny = "item.name == 'sleep' && caller.local"
  }
}
`)
	pluginDir := t.TempDir()
	stderr := newLineBuffer()
	cmd := exec.Command(bin.plughost, "serve", "--plugins", pluginDir, "--workspace", t.TempDir(), "--config", cfgPath, "--log-level", "debug")
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
	cmd.Stderr = stderr
	c, client := newHeldClient()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, sessionEra)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr)
	}
	c.cs = cs
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("closing the session: %v", err)
		}
		if leftover := processesUnder(pluginDir); len(leftover) > 0 {
			t.Errorf("plugin processes outlived the host: %v", leftover)
		}
		if t.Failed() {
			t.Logf("plughost stderr:\n%s", stderr)
		}
	})
	for _, p := range []string{"echo", "askplugin"} {
		copyPlugin(t, p, pluginDir, p)
		await(t, c.changed, "list_changed for "+p)
	}
	if got := c.tools(t); slices.Contains(got, "sleep") {
		t.Fatalf("tools under the first rules: %v", got)
	}
	held := c.callHeld(t)

	renameOver(t, cfgPath, `
access {
  rule "no one reads notes" {
    deny = "item.name == 'read_note'"
  }
}
tasks {
  ttl = "2h"
}
`)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	stderr.await(t, "SIGHUP: reloading the configuration")
	stderr.await(t, "configuration reloaded")
	await(t, c.changed, "list_changed for the new rules")
	if got := c.tools(t); !slices.Contains(got, "sleep") || slices.Contains(got, "read_note") {
		t.Errorf("tools under the new rules: %v", got)
	}
	stderr.await(t, "applied at the next start: settings=tasks.ttl")
	c.answer <- struct{}{}
	select {
	case got := <-held:
		if got != "accept" {
			t.Errorf("the call in flight during the reload: %q, want accept", got)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the call in flight never completed")
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 1}})
	if err != nil || res.IsError {
		t.Errorf("sleep under the new rules: %v %v", res, err)
	}
}
