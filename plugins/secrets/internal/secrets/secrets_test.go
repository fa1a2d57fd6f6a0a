package secrets

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/plughost/plughost/internal/toolsearcheval"
	"github.com/plughost/plughost/pluginproto"
)

// Test credentials are put together at run time so that no scanner of
// this repository mistakes the test for a leak.
var (
	githubPAT = "gh" + "p_" + "R8fK2mQ9xL4vT7wZ1nB5cJ3hY6pD0sA2gE8u"
	awsKeyID  = "AK" + "IA" + "Z5V2QHX4TRN7LM3P"
	slackBot  = "xo" + "xb-" + "2718281828459-3141592653589-Zq8Xk2Lm9Rt4Vw7Yp1Nc"
	apiKey    = "8f3kPq2LmZ9xR7tW4vB1nC6y"
	pemKey    = "-----BEGIN RSA PRIVATE" + " KEY-----\nMIIEowIBAAKCAQEA1x8Zq3kL9mR2vT7wN4pB6cY0hJ5sD8fG2aE3uX9iO1lK7mQ4\nrT6vW8yZ2bN5cM1xL3kJ9hG7fD5sA3qW1eR8tY6uI4oP2aS0dF9gH7jK5lZ3xC1v\n-----END RSA PRIVATE" + " KEY-----"
)

func guard(t testing.TB, set Settings) *Guard {
	t.Helper()
	rules, err := Default(set.Disabled...)
	if err != nil {
		t.Fatal(err)
	}
	return NewGuard(rules, set)
}

func TestDefaultRuleSetLoads(t *testing.T) {
	rules, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if rules.Len() < 200 {
		t.Fatalf("%d rules apply; gitleaks ships over 200", rules.Len())
	}
	t.Logf("%d gitleaks rules apply; left out as bound to a file path: %v", rules.Len(), rules.Skipped())
}

func TestScanFindsGitleaksCredentials(t *testing.T) {
	rules, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ text, rule string }{
		{"token " + githubPAT + " for the CI", "github-pat"},
		{"aws id: " + awsKeyID, "aws-access-token"},
		{"SLACK=" + slackBot, "slack-bot-token"},
		{pemKey, "private-key"},
		{`api_key = "` + apiKey + `"`, "generic-api-key"},
	} {
		fs := rules.Scan(c.text, 0)
		if len(fs) == 0 || fs[0].Rule != c.rule {
			t.Errorf("Scan(%.30q…) = %+v, want rule %s", c.text, fs, c.rule)
			continue
		}
		if got := c.text[fs[0].Start:fs[0].End]; !strings.Contains(c.text, got) || len(got) < 16 {
			t.Errorf("%s: span %q is not the secret", c.rule, got)
		}
	}
}

func TestScanLeavesOrdinaryTextAlone(t *testing.T) {
	rules, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{
		"The password must be at least 12 characters long.",
		`{"api_key": "${API_KEY}"}`,                       // a placeholder: gitleaks' global allowlist
		"request id 550e8400-e29b-41d4-a716-446655440000", // a UUID
		"Use the access token from your settings page to authenticate.",
		"commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed the auth bug",
	} {
		if fs := rules.Scan(text, 0); len(fs) > 0 {
			t.Errorf("Scan(%q) = %+v, want nothing", text, fs)
		}
	}
}

func call(point pluginproto.HookPoint, args, result string) *pluginproto.HookRequest {
	q := &pluginproto.HookRequest{Point: point, Hook: "secrets", Kind: "tool", Name: "t", Provider: "p"}
	if args != "" {
		q.Arguments = json.RawMessage(args)
	}
	if result != "" {
		q.Result = json.RawMessage(result)
	}
	return q
}

func TestArgumentsWithACredentialAreRefusedNamingRuleAndPlace(t *testing.T) {
	g := guard(t, Settings{})
	a, err := g.Hook(context.Background(), call(pluginproto.BeforeCall, `{"repo":"acme/site","auth":{"token":"`+githubPAT+`"}}`, ""))
	if err != nil {
		t.Fatal(err)
	}
	if a.Decision != pluginproto.HookRefuse {
		t.Fatalf("decision %v, want refuse", a.Decision)
	}
	if !strings.Contains(a.Reason, "github-pat at $.auth.token") || strings.Contains(a.Reason, githubPAT) {
		t.Fatalf("reason %q: want the rule and path, never the secret", a.Reason)
	}
}

func TestMemberNameGivesGenericRuleItsContext(t *testing.T) {
	g := guard(t, Settings{})
	a, err := g.Hook(context.Background(), call(pluginproto.BeforeCall, `{"api_key":"`+apiKey+`","query":"weather"}`, ""))
	if err != nil {
		t.Fatal(err)
	}
	if a.Decision != pluginproto.HookRefuse || !strings.Contains(a.Reason, "generic-api-key at $.api_key") {
		t.Fatalf("answer %+v, want a refusal for generic-api-key at $.api_key", a)
	}
}

func TestResultIsRedactedInPlace(t *testing.T) {
	g := guard(t, Settings{})
	result := `{"content":[{"type":"text","text":"deploy with ` + awsKeyID + ` then notify ` + slackBot + `"}],` +
		`"structuredContent":{"count":2,"key":"` + githubPAT + `"},"isError":false}`
	a, err := g.Hook(context.Background(), call(pluginproto.AfterCall, `{}`, result))
	if err != nil {
		t.Fatal(err)
	}
	if a.Decision != pluginproto.HookRewrite {
		t.Fatalf("decision %v, want rewrite", a.Decision)
	}
	got := string(a.Rewritten)
	want := `{"content":[{"type":"text","text":"deploy with [redacted: aws-access-token] then notify [redacted: slack-bot-token]"}],` +
		`"structuredContent":{"count":2,"key":"[redacted: github-pat]"},"isError":false}`
	if got != want {
		t.Fatalf("rewritten\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(a.Reason, "3 credentials") {
		t.Fatalf("reason %q", a.Reason)
	}
}

func TestPrivateKeyInEscapedTextIsRedacted(t *testing.T) {
	g := guard(t, Settings{})
	text, _ := json.Marshal("here is the key:\n" + pemKey + "\nkeep it safe")
	a, err := g.Hook(context.Background(), call(pluginproto.AfterRead, "", `{"contents":[{"uri":"file:///k","text":`+string(text)+`}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Contents []struct{ Text string } }
	if err := json.Unmarshal(a.Rewritten, &r); err != nil || a.Decision != pluginproto.HookRewrite {
		t.Fatalf("answer %+v, %v", a, err)
	}
	if got := r.Contents[0].Text; got != "here is the key:\n[redacted: private-key]\nkeep it safe" {
		t.Fatalf("text %q", got)
	}
}

func TestSettingsChooseTheAction(t *testing.T) {
	g := guard(t, Settings{Arguments: Redact, Results: Refuse})
	a, _ := g.Hook(context.Background(), call(pluginproto.BeforeCall, `{"t":"`+githubPAT+`"}`, ""))
	if a.Decision != pluginproto.HookRewrite || string(a.Rewritten) != `{"t":"[redacted: github-pat]"}` {
		t.Fatalf("arguments: %+v", a)
	}
	a, _ = g.Hook(context.Background(), call(pluginproto.AfterGet, "", `{"messages":[{"role":"user","content":{"type":"text","text":"`+githubPAT+`"}}]}`))
	if a.Decision != pluginproto.HookRefuse {
		t.Fatalf("result: %+v", a)
	}
}

func TestDisabledRuleIsLeftOut(t *testing.T) {
	g := guard(t, Settings{Disabled: []string{"generic-api-key"}})
	a, _ := g.Hook(context.Background(), call(pluginproto.BeforeCall, `{"api_key":"`+apiKey+`"}`, ""))
	if a.Decision != pluginproto.HookPass {
		t.Fatalf("answer %+v, want pass with generic-api-key disabled", a)
	}
	if _, err := Default("no-such-rule"); err == nil || !strings.Contains(err.Error(), `"no-such-rule"`) {
		t.Fatalf("err = %v, want one naming the unknown rule", err)
	}
}

func TestBinaryContentAndOversizeDocuments(t *testing.T) {
	g := guard(t, Settings{MaxBytes: 200})
	img := `{"content":[{"type":"image","mimeType":"image/png","data":"` + githubPAT + `"}]}`
	if a, err := g.Hook(context.Background(), call(pluginproto.AfterCall, "", img)); err != nil || a.Decision != pluginproto.HookPass {
		t.Fatalf("image data: %+v, %v; want pass (binary content is not scanned)", a, err)
	}
	big := `{"text":"` + strings.Repeat("x", 300) + `"}`
	_, err := g.Hook(context.Background(), call(pluginproto.AfterCall, "", big))
	if err == nil || !strings.Contains(err.Error(), "over "+EnvMaxBytes+" (200)") {
		t.Fatalf("err = %v, want one naming the limit", err)
	}
}

func TestURIWithACredentialIsRefused(t *testing.T) {
	g := guard(t, Settings{})
	q := &pluginproto.HookRequest{Point: pluginproto.BeforeRead, URI: "https://api.example.com/repos?token=" + githubPAT}
	if a, _ := g.Hook(context.Background(), q); a.Decision != pluginproto.HookRefuse {
		t.Fatalf("answer %+v", a)
	}
}

func TestSettingsFromEnv(t *testing.T) {
	env := map[string]string{EnvArguments: "redact", EnvMaxBytes: "1024", EnvDisable: "generic-api-key, jwt"}
	s, err := SettingsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if s.Arguments != Redact || s.Results != Redact || s.MaxBytes != 1024 || strings.Join(s.Disabled, "|") != "generic-api-key|jwt" {
		t.Fatalf("settings %+v", s)
	}
	env = map[string]string{EnvResults: "drop"}
	if _, err := SettingsFromEnv(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), EnvResults) {
		t.Fatalf("err = %v, want one naming %s", err, EnvResults)
	}
}

func TestParseRefusesUnknownKeys(t *testing.T) {
	_, err := Parse([]byte("[[rules]]\nid = \"x\"\nregex = 'x'\nkeywords = [\"x\"]\nrequired = [{ id = \"y\" }]\n"))
	if err == nil || !strings.Contains(err.Error(), "rules.required") {
		t.Fatalf("err = %v, want one naming rules.required", err)
	}
}

// The 527 real tool definitions of ../shared/toolsearch hold no
// credential; the guard passes every one as a result would be passed.
func TestRealToolTextsHoldNoCredentials(t *testing.T) {
	data, err := toolsearcheval.Load()
	if err != nil {
		t.Fatalf("the tool corpus (../shared/toolsearch beside the repository): %v", err)
	}
	g := guard(t, Settings{})
	for _, s := range data.Servers {
		for _, tool := range s.Tools {
			a, err := g.Hook(context.Background(), call(pluginproto.AfterCall, "", string(tool.Def)))
			if err != nil || a.Decision != pluginproto.HookPass {
				t.Errorf("%s: %+v %v", tool.ID, a, err)
			}
		}
	}
}
