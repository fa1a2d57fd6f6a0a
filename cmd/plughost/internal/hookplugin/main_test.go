package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/plughost/plughost/pluginproto"
)

// Each behaviour answers as the package documents (crash and flood are
// tried through the host, in host/manager's tests).
func TestBehaviours(t *testing.T) {
	log := t.TempDir() + "/q.jsonl"
	t.Setenv("HOOKPLUGIN_LOG", log)
	t.Setenv("HOOKPLUGIN_ARGS", `{"path":"/safe"}`)
	t.Setenv("HOOKPLUGIN_SLEEP", "1ms")
	result := json.RawMessage(`{"content":[{"type":"text","text":"the secret is 42"}]}`)
	for _, tc := range []struct {
		q         pluginproto.HookRequest
		decision  pluginproto.HookDecision
		reason    string
		rewritten string
		err       string
	}{
		{q: pluginproto.HookRequest{Point: pluginproto.BeforeCall, Hook: "pass"}, decision: pluginproto.HookPass},
		{q: pluginproto.HookRequest{Point: pluginproto.BeforeCall, Hook: "refuse-2"}, decision: pluginproto.HookRefuse, reason: "refused by the test hook"},
		{q: pluginproto.HookRequest{Point: pluginproto.BeforeCall, Hook: "refuse_word", Arguments: json.RawMessage(`{"a":"a secret"}`)}, decision: pluginproto.HookRefuse, reason: `mentions "secret"`},
		{q: pluginproto.HookRequest{Point: pluginproto.BeforeCall, Hook: "refuse_word", Arguments: json.RawMessage(`{}`)}, decision: pluginproto.HookPass},
		{q: pluginproto.HookRequest{Point: pluginproto.BeforeCall, Hook: "rewrite", Arguments: json.RawMessage(`{"path":"/etc","n":1}`)},
			decision: pluginproto.HookRewrite, reason: "arguments rewritten by the test hook", rewritten: `{"n":1,"path":"/safe"}`},
		{q: pluginproto.HookRequest{Point: pluginproto.AfterCall, Hook: "redact", Result: result},
			decision: pluginproto.HookRewrite, reason: `redacted "secret"`, rewritten: `{"content":[{"type":"text","text":"the [redacted] is 42"}]}`},
		{q: pluginproto.HookRequest{Point: pluginproto.OnDefinitions, Hook: "hide", Definition: json.RawMessage(`{"name":"x","description":"reads your secret"}`)},
			decision: pluginproto.HookHide, reason: `mentions "secret"`},
		{q: pluginproto.HookRequest{Point: pluginproto.OnDefinitions, Hook: "hide", Definition: json.RawMessage(`{"name":"x"}`)}, decision: pluginproto.HookPass},
		{q: pluginproto.HookRequest{Point: pluginproto.BeforeCall, Hook: "sleep"}, decision: pluginproto.HookPass},
		{q: pluginproto.HookRequest{Point: pluginproto.BeforeCall, Hook: "error"}, err: "could not decide"},
		{q: pluginproto.HookRequest{Point: pluginproto.BeforeCall, Hook: "dance"}, err: `no behaviour "dance"`},
	} {
		a, err := answer(context.Background(), &tc.q)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want an error naming %q", tc.q.Hook, err, tc.err)
			}
			continue
		}
		if err != nil || a.Decision != tc.decision || a.Reason != tc.reason || string(a.Rewritten) != tc.rewritten {
			t.Errorf("%s: %+v (%s), %v; want %v %q %s", tc.q.Hook, a, a.Rewritten, err, tc.decision, tc.reason, tc.rewritten)
		}
	}
	b, err := os.ReadFile(log)
	if err != nil || strings.Count(string(b), "\n") != 11 {
		t.Errorf("HOOKPLUGIN_LOG holds %d lines (%v), want one per question", strings.Count(string(b), "\n"), err)
	}
}
