package serve

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/tool"
)

// reloadProvider offers two tools, "open" and "secret", answering nothing.
type reloadProvider struct{}

func (reloadProvider) Name() string { return "p" }
func (reloadProvider) Tools() []tool.Def {
	return []tool.Def{
		{Name: "open", JSON: json.RawMessage(`{"name":"open","inputSchema":{"type":"object"}}`)},
		{Name: "secret", JSON: json.RawMessage(`{"name":"secret","inputSchema":{"type":"object"}}`)},
	}
}
func (reloadProvider) CallTool(context.Context, *tool.Call) (json.RawMessage, error) {
	return json.RawMessage(`{"content":[]}`), nil
}

// sinkLines is a session's sink: every message written, and a signal per
// write.
type sinkLines struct {
	mu    sync.Mutex
	lines []string
	wrote chan struct{}
}

func newSink() *sinkLines { return &sinkLines{wrote: make(chan struct{}, 64)} }

func (s *sinkLines) Write(b []byte) error {
	s.mu.Lock()
	s.lines = append(s.lines, string(b))
	s.mu.Unlock()
	s.wrote <- struct{}{}
	return nil
}

func (s *sinkLines) count(substr string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.lines {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

// writeConfig renames a new file over path, as an editor or a
// configuration manager does.
func writeConfig(t *testing.T, path, src string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// A rule that hides the tool secret from one subject.
func hideSecretFrom(subject string) string {
	return `access {
  rule "secret is not for ` + subject + `" {
    deny = "item.name == 'secret' && caller.subject == '` + subject + `'"
  }
}
`
}

// TestReloadSwapsRulesAndRefusesABrokenFile: a host serving two callers'
// sessions reloads its file: the caller whose view changed gets
// list_changed and sees the new view, the other gets none; a change that
// waits for the next start is named; a file that does not parse is
// refused whole, naming its line, the rules in force stay, and the
// metrics count each result.
func TestReloadSwapsRulesAndRefusesABrokenFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "plughost.hcl")
	writeConfig(t, path, hideSecretFrom("bob"))
	h, log := startReloading(t, path)
	alice, bob := h.open(t, "alice"), h.open(t, "bob")
	tools := func(s session) string { return s.request(t, "tools/list", `{}`) }
	if got := tools(bob); strings.Contains(got, `"secret"`) || !strings.Contains(got, `"open"`) {
		t.Fatalf("bob's tools under the first rules: %s", got)
	}
	settled := func(s session) { // nothing due: a list_changed decided by the reload is written
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if err := s.s.Drain(ctx); err != nil {
			t.Fatal(err)
		}
	}
	settled(alice)
	settled(bob)

	// The rules now hide secret from carol alone: bob's view changes,
	// alice's does not. The tasks' ttl waits for the next start.
	writeConfig(t, path, hideSecretFrom("carol")+"tasks {\n  ttl = \"2h\"\n}\n")
	if err := h.Reload(); err != nil {
		t.Fatal(err)
	}
	settled(alice)
	settled(bob)
	if n := bob.sink.count("notifications/tools/list_changed"); n != 1 {
		t.Errorf("bob got %d tools/list_changed, want 1", n)
	}
	if got := tools(bob); !strings.Contains(got, `"secret"`) {
		t.Errorf("bob's tools under the new rules: %s", got)
	}
	if n := alice.sink.count("list_changed"); n != 0 {
		t.Errorf("alice, whose view did not change, got %d list_changed", n)
	}
	if said := log.String(); !strings.Contains(said, "applied at the next start: settings=tasks.ttl") {
		t.Errorf("the log does not name tasks.ttl as waiting for the next start:\n%s", said)
	}

	// A file that does not parse is refused whole, naming file:line.
	writeConfig(t, path, hideSecretFrom("bob")+"limits {\n  in_flight = \n}\n")
	err := h.Reload()
	if err == nil || !strings.Contains(err.Error(), path+":7") {
		t.Errorf("reloading a broken file: %v; want a refusal naming %s:7", err, path)
	}
	if got := tools(bob); !strings.Contains(got, `"secret"`) {
		t.Errorf("bob's tools after the refused file: %s; the rules in force should stay", got)
	}

	// No rules at all: both saw everything already, neither is told.
	// Then rules again, hiding secret from alice: she alone is.
	writeConfig(t, path, "")
	if err := h.Reload(); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, path, hideSecretFrom("alice"))
	if err := h.Reload(); err != nil {
		t.Fatal(err)
	}
	settled(alice)
	settled(bob)
	if n := alice.sink.count("notifications/tools/list_changed"); n != 1 {
		t.Errorf("alice got %d tools/list_changed once rules hide secret from her, want 1", n)
	}
	if got := tools(alice); strings.Contains(got, `"secret"`) {
		t.Errorf("alice's tools under rules that hide secret from her: %s", got)
	}
	if n := bob.sink.count("list_changed"); n != 1 {
		t.Errorf("bob got %d list_changed in all, want the first alone", n)
	}
	for result, want := range map[string]float64{"applied": 3, "refused": 1, "failed": 0} {
		if got := reloads(t, h.Host, result); got != want {
			t.Errorf("plughost_config_reloads_total{result=%q} = %v, want %v", result, got, want)
		}
	}
}

// reloads is plughost_config_reloads_total{result} of h's metrics.
func reloads(t *testing.T, h *Host, result string) float64 {
	t.Helper()
	families, err := h.obs.metrics.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "plughost_config_reloads_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no plughost_config_reloads_total{result=%q}", result)
	return 0
}

// TestReloadMovesTheAuditLog: the audit block's new file takes the lines
// of the calls after the reload, with their arguments when the block
// says so; the old file keeps those before.
func TestReloadMovesTheAuditLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "plughost.hcl")
	writeConfig(t, path, "audit {\n  file = \"a.jsonl\"\n}\n")
	h, _ := startReloading(t, path)
	s := h.open(t, "alice")
	s.request(t, "tools/call", `{"name":"open","arguments":{"before":1}}`)
	writeConfig(t, path, "audit {\n  file = \"b.jsonl\"\n  arguments = true\n}\n")
	if err := h.Reload(); err != nil {
		t.Fatal(err)
	}
	s.request(t, "tools/call", `{"name":"open","arguments":{"after":2}}`)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read("a.jsonl"); strings.Count(got, "\n") != 1 || !strings.Contains(got, `"tool":"open"`) || strings.Contains(got, `"before"`) {
		t.Errorf("the first file: %q; want the call before the reload, without its arguments", got)
	}
	if got := read("b.jsonl"); strings.Count(got, "\n") != 1 || !strings.Contains(got, `{"after":2}`) {
		t.Errorf("the second file: %q; want the call after the reload, with its arguments", got)
	}
}

// TestReloadReopensTheAuditLog: a reload that leaves the audit block as
// it was reopens its file, so that a rotation (the file renamed, then
// SIGHUP) reaches the host: the calls after it go to a new file of the
// same name, those before stay in the renamed one.
func TestReloadReopensTheAuditLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "plughost.hcl")
	writeConfig(t, path, "audit {\n  file = \"audit.jsonl\"\n}\n")
	h, _ := startReloading(t, path)
	s := h.open(t, "alice")
	s.request(t, "tools/call", `{"name":"open","arguments":{}}`)
	if err := os.Rename(filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "audit.jsonl.1")); err != nil {
		t.Fatal(err)
	}
	if err := h.Reload(); err != nil {
		t.Fatal(err)
	}
	s.request(t, "tools/call", `{"name":"open","arguments":{}}`)
	s.request(t, "tools/call", `{"name":"open","arguments":{}}`)
	for name, want := range map[string]int{"audit.jsonl.1": 1, "audit.jsonl": 2} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(b), `"tool":"open"`); got != want {
			t.Errorf("%s holds %d calls, want %d:\n%s", name, got, want, b)
		}
	}
}

// reloading is a host started from a configuration file, as serve starts
// one, whose catalog holds reloadProvider, with one MCP server.
type reloading struct {
	*Host
	srv *mcp.Server
}

// startReloading starts it; the log it writes is the builder's.
func startReloading(t *testing.T, path string) (*reloading, *lockedLog) {
	t.Helper()
	log := &lockedLog{}
	h, err := Start(&Options{Plugins: t.TempDir(), Workspace: t.TempDir(), Config: path, LogLevel: "info", Serving: true, HTTP: true,
		Observe: &ObserveOptions{}}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Stop() })
	// The provider's burst of changes is told before any session opens:
	// one told later would be a list_changed no reload made.
	told := make(chan struct{}, 1)
	cancel := h.catalog.Subscribe(func(tool.Change) {
		select {
		case told <- struct{}{}:
		default:
		}
	})
	h.catalog.Set(reloadProvider{})
	select {
	case <-told:
	case <-time.After(time.Minute):
		t.Fatal("the catalog never told of its provider")
	}
	cancel()
	return &reloading{h, h.serveWith(mcp.NewServer(h.catalog, h.mcpOptions()))}, log
}

// session is an initialized session of one caller, its notifications in
// sink.
type session struct {
	s    *mcp.Session
	sink *sinkLines
}

// open opens the session of the caller of subject.
func (h *reloading) open(t *testing.T, subject string) session {
	sink := newSink()
	s := h.srv.OpenSession(mcp.SessionConn{Notify: sink, Peer: mcp.Peer{Caller: mcp.Caller{Issuer: "https://as.example", Subject: subject}}})
	t.Cleanup(s.Close)
	s.Handle(t.Context(), []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`), sink)
	s.Handle(t.Context(), []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), sink)
	return session{s, sink}
}

// request sends one request and returns what was written for it.
func (s session) request(t *testing.T, method, params string) string {
	out := newSink()
	s.s.Handle(t.Context(), []byte(`{"jsonrpc":"2.0","id":2,"method":"`+method+`","params":`+params+`}`), out)
	return strings.Join(out.lines, "")
}

// lockedLog is the host's log (it logs from many goroutines).
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
