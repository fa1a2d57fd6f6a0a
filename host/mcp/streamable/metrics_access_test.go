package streamable

import (
	"net/http"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/access"
	"github.com/plughost/plughost/host/oauth/oauthtest"
)

// TestMetricsOnlyToCallersARuleAdmits: GET /metrics on the MCP listener
// serves an OAuth caller only when an access rule admits the item of kind
// metrics (issue 31, attack 5: caller B read the labels of tools the
// rules hide from B, and A's call counts); without rules no OAuth caller
// reads them; the static token (the operator's scraper) does.
func TestMetricsOnlyToCallersARuleAdmits(t *testing.T) {
	t.Parallel()
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("plughost_up 1\n")) })
	ops, err := access.Compile([]access.Source{{Name: "ops read metrics", Expr: "item.kind != 'metrics' || caller.subject == 'ops'"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, rules := range map[string]*access.Rules{"no rules": nil, "a rule for ops": ops} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			as := oauthtest.New(t)
			hs, _ := startOAuth(t, as, &Options{Token: "static", Metrics: metrics, MetricsAllowed: rules.MetricsAllowed})
			get := func(token string) (int, string) {
				status, _, body := hs.roundtrip(req{"GET", PathMetrics, map[string]string{"Authorization": "Bearer " + token}, ""})
				return status, body
			}
			if status, body := get(as.Mint(t, oauthtest.Token{Audience: testResource, Scope: "mcp:tools", Subject: "bob"})); status != http.StatusForbidden ||
				!strings.Contains(body, "no access rule lets this caller read the metrics") {
				t.Errorf("bob: %d %s, want 403 naming the rule kind", status, body)
			}
			wantOps := http.StatusForbidden
			if rules != nil {
				wantOps = http.StatusOK
			}
			if status, body := get(as.Mint(t, oauthtest.Token{Audience: testResource, Scope: "mcp:tools", Subject: "ops"})); status != wantOps {
				t.Errorf("ops: %d %s, want %d", status, body, wantOps)
			}
			if status, body := get("static"); status != http.StatusOK || body != "plughost_up 1\n" {
				t.Errorf("the static token: %d %q, want the metrics", status, body)
			}
		})
	}
}
