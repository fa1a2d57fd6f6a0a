package pii

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/plughost/plughost/pluginproto"
)

func kinds(text string, f Finder) []string {
	var out []string
	for _, x := range f.Find(text) {
		out = append(out, string(x.Kind)+":"+text[x.Start:x.End])
	}
	return out
}

var all = Finder{Kinds: Kinds, Region: "US"}

func TestFindsEachKind(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"write to jane.doe+tag@mail.example.co.uk today", "email:jane.doe+tag@mail.example.co.uk"},
		{"card 4111 1111 1111 1111 expires", "card:4111 1111 1111 1111"},
		{"amex 3782-822463-10005", "card:3782-822463-10005"},
		{"pay to DE89 3704 0044 0532 0130 00 please", "iban:DE89 3704 0044 0532 0130 00"},
		{"GB82WEST12345698765432", "iban:GB82WEST12345698765432"},
		{"call (415) 555-2671 now", "phone:(415) 555-2671"},
		{"or +44 20 7946 0958.", "phone:+44 20 7946 0958"},
		{"Zürich: +41 44 668 18 00", "phone:+41 44 668 18 00"},
	} {
		if got := strings.Join(kinds(c.text, all), "|"); got != c.want {
			t.Errorf("Find(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

func TestChecksRejectLookalikes(t *testing.T) {
	for _, text := range []string{
		"card 4111 1111 1111 1112",                  // fails Luhn
		"order 1234567812345670",                    // Luhn-valid but no issuer prefix
		"DE89 3704 0044 0532 0130 01",               // fails mod-97
		"id 4155552671 and 2026-11-28 12:30:00",     // a bare run of digits, a date
		"version 1.22.3.4 at 192.168.100.200",       // dotted numbers
		"npm i @types/node; git@ is not an address", // no local part or domain
		"sha 9fceb02d0ae598e95dc970b74767f19372d61af8",
		"user@localhost",                                     // one label
		"doi 10.1101/2024.01.20.23288905 and v2.20.23288905", // a DOI, a version (found in a real tool's description)
	} {
		if got := kinds(text, all); len(got) > 0 {
			t.Errorf("Find(%q) = %q, want nothing", text, got)
		}
	}
}

func TestRegionGovernsNationalNumbers(t *testing.T) {
	text := "Berlin office: 030 22730027"
	if got := kinds(text, Finder{Kinds: Kinds, Region: "DE"}); len(got) != 1 || got[0] != "phone:030 22730027" {
		t.Fatalf("DE: %q", got)
	}
	if got := kinds(text, Finder{Kinds: Kinds}); len(got) != 0 {
		t.Fatalf("no region: %q, want nothing (national numbers need a region)", got)
	}
}

func TestGuardRedactsResultsInPlace(t *testing.T) {
	g := NewGuard(Settings{Region: "US"})
	result := `{"content":[{"type":"text","text":"Contact: jane@example.com, (415) 555-2671"}],"structuredContent":{"iban":"DE89370400440532013000","n":3}}`
	a, err := g.Hook(context.Background(), &pluginproto.HookRequest{Point: pluginproto.AfterCall, Result: json.RawMessage(result)})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"content":[{"type":"text","text":"Contact: [redacted: email], [redacted: phone]"}],"structuredContent":{"iban":"[redacted: iban]","n":3}}`
	if a.Decision != pluginproto.HookRewrite || string(a.Rewritten) != want {
		t.Fatalf("answer %v %s\nwant %s", a.Decision, a.Rewritten, want)
	}
	if !strings.Contains(a.Reason, "email at $.content[0].text") || strings.Contains(a.Reason, "jane@") {
		t.Fatalf("reason %q: want kinds and places, never the data", a.Reason)
	}
}

func TestGuardSettings(t *testing.T) {
	env := map[string]string{EnvAction: "refuse", EnvKinds: "card", EnvRegion: "de"}
	set, err := SettingsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if set.Region != "DE" {
		t.Fatalf("region %q", set.Region)
	}
	g := NewGuard(set)
	q := &pluginproto.HookRequest{Point: pluginproto.AfterRead, Result: json.RawMessage(`{"contents":[{"uri":"x","text":"jane@example.com 4111111111111111"}]}`)}
	a, _ := g.Hook(context.Background(), q)
	if a.Decision != pluginproto.HookRefuse || !strings.Contains(a.Reason, "card at $.contents[0].text") || strings.Contains(a.Reason, "email") {
		t.Fatalf("answer %+v", a)
	}
	for k, v := range map[string]string{EnvAction: "mask", EnvKinds: "ssn", EnvRegion: "XX", EnvMaxBytes: "-1"} {
		_, err := SettingsFromEnv(func(name string) string {
			if name == k {
				return v
			}
			return ""
		})
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: err = %v, want one naming the variable", k, v, err)
		}
	}
	before := &pluginproto.HookRequest{Point: pluginproto.BeforeCall, Arguments: json.RawMessage(`{"to":"jane@example.com"}`)}
	if a, _ := NewGuard(Settings{}).Hook(context.Background(), before); a.Decision != pluginproto.HookPass {
		t.Fatalf("before_call: %+v, want pass (results only)", a)
	}
}

// The host asks a hook many questions at once: the guard (and
// libphonenumber's lazily loaded metadata under it) is safe for
// concurrent use; run with -race.
func TestGuardIsSafeForConcurrentUse(t *testing.T) {
	g := NewGuard(Settings{Region: "FR"})
	result := json.RawMessage(`{"content":[{"type":"text","text":"+33 1 42 68 53 00, +81 3-3224-9999, jane@example.com, 4111 1111 1111 1111"}]}`)
	done := make(chan error)
	for range 8 {
		go func() {
			var err error
			for range 20 {
				a, e := g.Hook(context.Background(), &pluginproto.HookRequest{Point: pluginproto.AfterCall, Result: result})
				want := `{"content":[{"type":"text","text":"[redacted: phone], [redacted: phone], [redacted: email], [redacted: card]"}]}`
				if e != nil || string(a.Rewritten) != want {
					err = fmt.Errorf("%+v %v", a, e)
				}
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
