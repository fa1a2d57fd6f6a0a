package serve

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/plughost/plughost/host/audit"
	"github.com/plughost/plughost/host/hooks"
	"github.com/plughost/plughost/host/metrics"
	"github.com/plughost/plughost/host/tool"
)

// Every decision is counted; all but a pass are audit lines naming the
// caller; nothing names the caller in a metric.
func TestHookDecided(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	o := &observer{metrics: metrics.New(nil), audit: audit.New(&buf, nil)}
	item := tool.Item{Kind: tool.ItemTool, Name: "fetch", Exposed: "fetch", Provider: "web"}
	alice := &tool.Caller{Subject: "alice", ClientID: "claude"}
	o.hookDecided(&hooks.Decision{Hook: "secrets", Point: tool.BeforeCall, Item: item, Caller: alice, Decision: tool.HookPass})
	o.hookDecided(&hooks.Decision{Hook: "secrets", Point: tool.AfterCall, Item: item, Caller: alice, Decision: tool.HookRewrite, Reason: "redacted 1 key"})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `"event":"hook","hook":"secrets","point":"after_call","kind":"tool","item":"fetch","provider":"web","decision":"rewrite","reason":"redacted 1 key","caller":{"sub":"alice","client":"claude"}`) {
		t.Errorf("audit lines %q", lines)
	}
	want := "plughost_hook_decisions_total{decision=\"pass\",hook=\"secrets\"} 1\nplughost_hook_decisions_total{decision=\"rewrite\",hook=\"secrets\"} 1\n"
	if err := testutil.GatherAndCompare(o.metrics.Registry(), strings.NewReader("# HELP plughost_hook_decisions_total Decisions of the configured hooks, by hook and decision (pass, refuse, rewrite, hide, error, timeout, would_refuse, would_rewrite, would_hide).\n# TYPE plughost_hook_decisions_total counter\n"+want), "plughost_hook_decisions_total"); err != nil {
		t.Error(err)
	}
	(&observer{}).hookDecided(&hooks.Decision{Hook: "h", Decision: tool.HookRefuse}) // neither metrics nor audit: nothing to do
}

// A lateAsker fails every question until it is given an asker.
func TestLateAsker(t *testing.T) {
	t.Parallel()
	var l lateAsker
	if _, err := l.AskHook(context.Background(), "p", &tool.HookCall{}); !errors.Is(err, errNoAsker) {
		t.Errorf("before set: %v", err)
	}
	l.set(passing{})
	if a, err := l.AskHook(context.Background(), "p", &tool.HookCall{}); err != nil || a.Decision != tool.HookPass {
		t.Errorf("after set: %v, %v", a, err)
	}
}

type passing struct{}

func (passing) AskHook(context.Context, string, *tool.HookCall) (*tool.HookAnswer, error) {
	return &tool.HookAnswer{Decision: tool.HookPass}, nil
}
