package audit

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHookLine(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		d    HookDecision
		want string
	}{
		"a refusal with a caller": {HookDecision{Time: at, Hook: "secrets", Point: "before_call", Kind: "tool", Item: "fetch", Provider: "fetch",
			Decision: "refuse", Reason: "an AWS access key in url", Subject: "alice", ClientID: "claude"},
			`{"time":"2026-11-28T03:00:00Z","event":"hook","hook":"secrets","point":"before_call","kind":"tool","item":"fetch","provider":"fetch","decision":"refuse","reason":"an AWS access key in url","caller":{"sub":"alice","client":"claude"}}`},
		"a definition hidden": {HookDecision{Time: at, Hook: "defs", Point: "on_definitions", Kind: "tool", Item: "add", Provider: "rug",
			Decision: "hide", Reason: "hidden instructions"},
			`{"time":"2026-11-28T03:00:00Z","event":"hook","hook":"defs","point":"on_definitions","kind":"tool","item":"add","provider":"rug","decision":"hide","reason":"hidden instructions"}`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			New(&buf, nil).Hook(tc.d)
			if diff := cmp.Diff(tc.want+"\n", buf.String()); diff != "" {
				t.Errorf("line (-want +got):\n%s", diff)
			}
		})
	}
}
