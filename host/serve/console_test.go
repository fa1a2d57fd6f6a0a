package serve

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plughost/plughost/host/console"
	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/host/trust"
)

// consoleWait bounds each wait of the console tests: plugins are real
// processes on a possibly loaded machine.
const consoleWait = time.Minute

// consoleHost is a serving host over plugins/echo in trust mode pinned
// (never approved: quarantined), with an audit log, metrics (as under
// --http) and an access rule that shows the catalog to alice only; src
// is its console.Source, and changes receives a wake-up at each console
// event and catalog change.
type consoleHost struct {
	t         *testing.T
	h         *Host
	src       *consoleSource
	config    string // the configuration file
	trustFile string
	changes   chan struct{}
	mu        sync.Mutex
	events    []console.Event // every event Watch told of, in order, until awaitEvent consumes them
}

const consoleConfig = `plugins {
  start = "eager"
  cache = false
}
sandbox {
  disabled = true
}
trust {
  mode = "pinned"
  file = "TRUST"
}
audit {
  file = "AUDIT"
}
access {
  rule "alice only" {
    deny = "caller.subject != 'alice'"
  }
}
`

// Not parallel: it sets XDG_STATE_HOME and XDG_CACHE_HOME, which the
// host reads.
func startConsoleHost(t *testing.T) *consoleHost {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "echo"), "../../plugins/echo").CombinedOutput(); err != nil {
		t.Fatalf("building plugins/echo: %v\n%s", err, out)
	}
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	state := t.TempDir()
	c := &consoleHost{t: t, config: filepath.Join(state, "plughost.hcl"), trustFile: filepath.Join(state, "trust.json"),
		changes: make(chan struct{}, 1)}
	hcl := strings.NewReplacer("TRUST", c.trustFile, "AUDIT", filepath.Join(state, "audit.log")).Replace(consoleConfig)
	if err := os.WriteFile(c.config, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	log := &lockedBuffer{}
	h, err := Start(&Options{Plugins: dir, Workspace: t.TempDir(), Config: c.config, Serving: true, HTTP: true, Observe: &ObserveOptions{}, LogLevel: "debug", Version: "test"}, log)
	if err != nil {
		t.Fatal(err)
	}
	c.h, c.src = h, &consoleSource{h}
	stopWatch := c.src.Watch(func(e console.Event) {
		c.mu.Lock()
		c.events = append(c.events, e) // kept all: a test of a few plugin starts makes a few dozen
		c.mu.Unlock()
		c.wake()
	})
	stopCatalog := h.catalog.Subscribe(func(tool.Change) { c.wake() })
	t.Cleanup(func() {
		stopWatch()
		stopCatalog()
		h.Stop()
		if t.Failed() {
			t.Log(log.String())
		}
	})
	select {
	case <-h.Manager().Ready():
	case <-time.After(consoleWait):
		t.Fatal("the plugins did not load")
	}
	return c
}

func (c *consoleHost) wake() {
	select {
	case c.changes <- struct{}{}:
	default:
	}
}

// await waits, at each console event or catalog change, until the
// plugin name's console view satisfies cond.
func (c *consoleHost) await(name, what string, cond func(console.Plugin) bool) console.Plugin {
	c.t.Helper()
	deadline := time.After(consoleWait)
	for {
		for _, p := range c.src.Plugins() {
			if p.Name == name && cond(p) {
				return p
			}
		}
		select {
		case <-c.changes:
		case <-deadline:
			c.t.Fatalf("%s: not within %v; plugins: %+v", what, consoleWait, c.src.Plugins())
		}
	}
}

// awaitEvent waits until Watch has told of plugin's kind, consuming the
// events up to it.
func (c *consoleHost) awaitEvent(plugin, kind string) {
	c.t.Helper()
	deadline := time.After(consoleWait)
	for {
		c.mu.Lock()
		for i, e := range c.events {
			if e.Plugin == plugin && e.Kind == kind {
				c.events = c.events[i+1:]
				c.mu.Unlock()
				return
			}
		}
		c.mu.Unlock()
		select {
		case <-c.changes:
		case <-deadline:
			c.t.Fatalf("Watch did not tell of %s %s within %v", plugin, kind, consoleWait)
		}
	}
}

func toolNames(ds []console.Definition) []string {
	var names []string
	for _, d := range ds {
		names = append(names, d.Name)
	}
	return names
}

// A quarantined plugin shows as such with its digest; approving another
// digest than the file's is refused (console.ErrChanged) and changes
// nothing; approving its digest writes the approval with the person's
// name, audits it, and the host starts the plugin at once: its tools
// appear, and Watch tells of it. Revoking stops serving it.
func TestConsoleApproveRevoke(t *testing.T) {
	c := startConsoleHost(t)
	p := c.await("echo", "echo quarantined", func(p console.Plugin) bool { return p.State == "quarantined" })
	if p.TrustMode != "pinned" || p.TrustState != "pending" || !strings.HasPrefix(p.Digest, "sha256:") || p.TrustReason == "" || len(p.Tools) != 0 {
		t.Errorf("quarantined echo = %+v, want mode pinned, pending, its digest and why, no tools", p)
	}

	if p.Listing != "" {
		t.Errorf("quarantined echo, never run, would pin %s, want nothing", p.Listing)
	}
	err := c.src.Approve(t.Context(), "echo", "sha256:0000", "", "alice via https://id.example")
	if !errors.Is(err, console.ErrChanged) {
		t.Fatalf("Approve of a stale digest = %v, want ErrChanged", err)
	}
	if _, err := os.Stat(c.trustFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused approval wrote the trust file (%v)", err)
	}
	if err := c.src.Approve(t.Context(), "nope", p.Digest, "", "alice"); err == nil || errors.Is(err, console.ErrChanged) {
		t.Errorf("Approve of an unknown plugin = %v, want an error naming it", err)
	}

	// The trust files' watch stops: the approval must apply by itself,
	// not when (or if) the file system tells of the write.
	lt := c.h.plugins.trust
	lt.mu.Lock()
	lt.stopWatch()
	lt.stopWatch, lt.ended = nil, true
	lt.mu.Unlock()

	if err := c.src.Approve(t.Context(), "echo", p.Digest, p.Listing, "alice via https://id.example"); err != nil {
		t.Fatal(err)
	}
	f, err := trust.ReadFile(c.trustFile)
	if err != nil {
		t.Fatal(err)
	}
	if e := f.Plugins["echo"]; e.Digest != p.Digest || e.ApprovedBy != "alice via https://id.example" {
		t.Errorf("trust file entry = %+v, want digest %s approved by alice via https://id.example", e, p.Digest)
	}
	p = c.await("echo", "echo running with its tools", func(p console.Plugin) bool {
		return p.State == "running" && slices.Contains(toolNames(p.Tools), "echo")
	})
	if p.PID == 0 || p.TrustState != "approved" {
		t.Errorf("approved echo = %+v, want a pid and trust state approved", p)
	}
	c.awaitEvent("echo", "started")
	if got := toolNames(c.src.Catalog(&console.Caller{Subject: "alice"}).Tools); !slices.Contains(got, "echo") {
		t.Errorf("alice's catalog = %q, want echo's tools", got)
	}
	if got := c.src.Catalog(&console.Caller{Subject: "bob"}).Tools; len(got) != 0 {
		t.Errorf("bob's catalog = %+v, want none (the rule denies him)", got)
	}
	audit := strings.Join(c.src.Audit(200), "\n")
	if !strings.Contains(audit, `"event":"approve","plugin":"echo","digest":"`+p.Digest+`","by":"alice via https://id.example"`) {
		t.Errorf("audit lines lack the approval by alice:\n%s", audit)
	}

	// The approval is made to pin another text of echo's tool than echo
	// lists: the tool is held, with its diff; approving it again pins
	// what is listed (from the held file) and serves it.
	defs, ok := c.h.manager.Definitions("echo")
	if !ok {
		t.Fatal("echo listed nothing")
	}
	for i, d := range defs {
		if d.Kind == trust.KindTool && d.Name == "echo" {
			var m map[string]any
			if err := json.Unmarshal(d.JSON, &m); err != nil {
				t.Fatal(err)
			}
			m["description"] = "The approved text."
			defs[i].JSON, _ = json.Marshal(m)
		}
	}
	pins, err := trust.PinDefinitions(defs)
	if err != nil {
		t.Fatal(err)
	}
	if err := trust.Update(c.trustFile, func(f *trust.File) error {
		e := f.Plugins["echo"]
		e.Definitions = pins
		f.Plugins["echo"] = e
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c.src.applyTrust()
	p = c.await("echo", "echo's tool held", func(p console.Plugin) bool { return len(p.Held) == 1 })
	if h := p.Held[0]; h.Kind != "tool" || h.Name != "echo" || h.State != "changed" ||
		!slices.Contains(h.Diff, "- description: The approved text.") || !slices.ContainsFunc(h.Diff, func(l string) bool { return strings.HasPrefix(l, "+ description: ") }) ||
		len(h.Words) == 0 {
		t.Errorf("held = %+v, want echo's tool changed, its diff from the approved text", h)
	}
	// The held file is written, then the event sent: awaited, not
	// assumed (the status shows the tool held first).
	c.awaitEvent("echo", "held")
	p = c.await("echo", "echo's page after the held file", func(console.Plugin) bool { return true })
	// echo lists its tool again, otherwise, while the person reads the
	// diff (its held file written anew, its file unchanged): the listing
	// the page showed is not what an approval would pin now.
	heldDir := trust.HeldDir(c.trustFile)
	rec := trust.ReadHeld(heldDir, "echo", p.Digest)
	if rec == nil || p.Listing == "" {
		t.Fatalf("no held file for echo (%v) or no listing on its page (%q)", rec, p.Listing)
	}
	listed := *rec
	listed.Definitions = slices.Clone(rec.Definitions)
	for i, d := range rec.Definitions {
		if d.Kind == trust.KindTool && d.Name == "echo" {
			rec.Definitions[i].Definition = json.RawMessage(`{"name":"echo","description":"Now also reads ~/.ssh.","inputSchema":{"type":"object"}}`)
		}
	}
	if err := trust.WriteHeld(heldDir, *rec); err != nil {
		t.Fatal(err)
	}
	if err := c.src.Approve(t.Context(), "echo", p.Digest, p.Listing, "alice via https://id.example"); !errors.Is(err, console.ErrChanged) {
		t.Fatalf("Approve of the listing the page showed, after echo listed another = %v, want ErrChanged", err)
	}
	if q := c.await("echo", "echo's page", func(console.Plugin) bool { return true }); q.Listing == p.Listing {
		t.Errorf("the page's listing %s did not change with what echo lists", q.Listing)
	}
	// echo lists as before: the listing the page showed is approved.
	if err := trust.WriteHeld(heldDir, listed); err != nil {
		t.Fatal(err)
	}
	if err := c.src.Approve(t.Context(), "echo", p.Digest, p.Listing, "alice via https://id.example"); err != nil {
		t.Fatal(err)
	}
	c.await("echo", "echo's tool served again", func(p console.Plugin) bool { return len(p.Held) == 0 })
	f, err = trust.ReadFile(c.trustFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(f.Plugins["echo"].Definitions["tool/echo"].Definition); strings.Contains(got, "The approved text.") || got == "" {
		t.Errorf("pinned echo tool after the second approval = %s, want what echo lists", got)
	}

	if err := c.src.Revoke(t.Context(), "bob-not-approved", "alice"); err == nil {
		t.Error("Revoke of a plugin not approved succeeded")
	}
	if err := c.src.Revoke(t.Context(), "echo", "the static token's holder"); err != nil {
		t.Fatal(err)
	}
	c.await("echo", "echo quarantined again", func(p console.Plugin) bool { return p.State == "quarantined" && len(p.Tools) == 0 })
	if got := c.src.Catalog(&console.Caller{Subject: "alice"}).Tools; len(got) != 0 {
		t.Errorf("alice's catalog after the revocation = %+v, want none", got)
	}
	c.awaitEvent("echo", "quarantined")
	if audit := strings.Join(c.src.Audit(200), "\n"); !strings.Contains(audit, `"event":"revoke","plugin":"echo","by":"the static token's holder"`) {
		t.Errorf("audit lines lack the revocation:\n%s", audit)
	}
}

// The other pages' data: an open MCP session, the tasks (none), the calls
// per tool from the metrics, and the configuration with where each
// setting came from.
func TestConsoleSessionsCallsConfig(t *testing.T) {
	c := startConsoleHost(t)
	srv := c.h.serveWith(mcp.NewServer(c.h.catalog, c.h.mcpOptions()))
	s := srv.OpenSession(mcp.SessionConn{Notify: discardSink{}, Peer: mcp.Peer{SessionID: "abcdefghijklmnop", Transport: "streamable-http",
		Caller: mcp.Caller{Subject: "alice"}}})
	sessions := c.src.Sessions()
	if len(sessions) != 1 || sessions[0].ID != "abcdefgh" || sessions[0].Transport != "streamable-http" || sessions[0].Caller != "alice" {
		t.Errorf("Sessions = %+v, want alice's streamable-http session, its id cut to abcdefgh", sessions)
	}
	s.Close()
	if got := c.src.Sessions(); len(got) != 0 {
		t.Errorf("Sessions after it closed = %+v", got)
	}

	if ts, err := c.src.Tasks(t.Context(), 10); err != nil || len(ts) != 0 {
		t.Errorf("Tasks = %+v, %v; want none", ts, err)
	}

	c.h.obs.metrics.CallEnd(&mcp.CallEnd{Tool: "echo", Provider: "echo", Outcome: mcp.OutcomeToolError, Duration: time.Millisecond})
	if got := c.src.Calls(); len(got) != 1 || got[0].Tool != "echo" || got[0].Plugin != "echo" || got[0].Calls != 1 || got[0].Errors != 1 {
		t.Errorf("Calls = %+v, want echo's one failed call", got)
	}

	settings := map[string]console.Setting{}
	for _, st := range c.src.Config() {
		settings[st.Name] = st
	}
	for name, want := range map[string]console.Setting{
		"trust.mode":                    {Name: "trust.mode", Value: `"pinned"`, Source: c.config + ":9"},
		`access.rule "alice only".deny`: {Name: `access.rule "alice only".deny`, Value: `"caller.subject != 'alice'"`, Source: c.config + ":17"},
		"--plugins":                     {Name: "--plugins", Value: c.h.pluginDir, Source: "flag --plugins"},
		"--config":                      {Name: "--config", Value: c.config, Source: "flag --config"},
		"plugin directory":              {Name: "plugin directory", Value: c.h.pluginDir, Source: "flag --plugins"},
	} {
		if got := settings[name]; got != want {
			t.Errorf("setting %s = %+v, want %+v", name, got, want)
		}
	}
}

type discardSink struct{}

func (discardSink) Write([]byte) error { return nil }
