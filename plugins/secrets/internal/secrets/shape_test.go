package secrets

import (
	"slices"
	"testing"

	"github.com/plughost/plughost/internal/toolsearcheval"
)

func TestGenericRuleIsGated(t *testing.T) {
	rules, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	gated := rules.Gated()
	t.Logf("%d of %d rules gated", len(gated), rules.Len())
	for _, r := range rules.rules {
		if r.id == "generic-api-key" {
			if r.gate == nil {
				t.Fatal("generic-api-key has no gate")
			}
			t.Logf("generic-api-key gate: suffixes %v, %d steps", r.gate.suffix, len(r.gate.steps))
			return
		}
	}
	t.Fatal("no generic-api-key rule")
}

// Gates only skip rules that could not have matched: on real tool texts
// and on credentials in the shapes gitleaks' generic rules look for,
// scanning with gates finds exactly what scanning without them finds.
func TestGatesChangeNoFinding(t *testing.T) {
	gated, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	ungated, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	ungated.noGates = true
	texts := []string{typicalResult, typicalArguments}
	for _, f := range []string{"api_key", "ACCESS_TOKEN", "db.password", "client-secret", "auth", "Twitter API key", "jira_token", "slack creds"} {
		for _, op := range []string{"=", ": ", " => ", ":=", `": "`, " = '", "\t,"} {
			texts = append(texts, f+op+apiKey, "export "+f+op+apiKey+";\n", "x "+f+op+"short", f+"  \n"+op+apiKey)
		}
	}
	data, err := toolsearcheval.Load() // 527 real tools' definitions
	if err != nil {
		t.Fatalf("the tool corpus (../shared/toolsearch beside the repository): %v", err)
	}
	for _, s := range data.Servers {
		for _, tool := range s.Tools {
			texts = append(texts, string(tool.Def))
		}
	}
	found := 0
	for _, text := range texts {
		a, b := gated.Scan(text, 0), ungated.Scan(text, 0)
		if !slices.Equal(a, b) {
			t.Errorf("Scan(%.60q): gated %+v, ungated %+v", text, a, b)
		}
		found += len(a)
	}
	t.Logf("%d texts, %d findings, identical with and without gates", len(texts), found)
}
