package config

import (
	"strings"
	"testing"

	"github.com/plughost/plughost/host/ratelimit"
	"github.com/plughost/plughost/host/tool"
)

// TestParseRateLimits: the caller block, a rule with its match compiled
// (it decides for the callers it matches), tool blocks in both.
func TestParseRateLimits(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`
limits {
  in_flight = 8
  caller {
    rate          = 0.01
    burst         = 100
    calls_per_day = 10000
    tool "files__write" {
      rate = 0.5
    }
  }
  rule "contractors" {
    match = "has(caller.claims.groups) && 'contractors' in caller.claims.groups"
    rate  = 5
    tool "files__write" {
      calls_per_day = 10
    }
  }
}
`), "plughost.hcl")
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Limits.Callers
	if cfg.Limits.InFlight != 8 || p == nil || len(p.Rules) != 1 {
		t.Fatalf("limits %+v", cfg.Limits)
	}
	want := ratelimit.Limits{Rate: 0.01, Burst: 100, CallsPerDay: 10000, Tools: map[string]ratelimit.Limits{"files__write": {Rate: 0.5}}}
	if c := p.Caller; c.Rate != want.Rate || c.Burst != want.Burst || c.CallsPerDay != want.CallsPerDay || c.Tools["files__write"].Rate != 0.5 {
		t.Errorf("caller block %+v, want %+v", c, want)
	}
	r := p.Rules[0]
	if r.Name != "contractors" || r.Limits.Rate != 5 || r.Limits.Tools["files__write"].CallsPerDay != 10 {
		t.Errorf("rule %+v", r)
	}
	carl := &tool.Caller{Subject: "carl", Claims: map[string]any{"groups": []any{"contractors"}}}
	if ok, err := r.Match.Matches(carl, &tool.Item{}, nil); !ok || err != nil {
		t.Errorf("the rule does not match a contractor: %v", err)
	}
	if ok, _ := r.Match.Matches(&tool.Caller{Subject: "alice"}, &tool.Item{}, nil); ok {
		t.Error("the rule matches alice")
	}
}

// TestParseRateLimitsErrors: each mistake names the file, line and
// column, and what was expected.
func TestParseRateLimitsErrors(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"limits {\n  caller {\n    rate = 0\n  }\n}\n":                                                        `plughost.hcl:3,12-13: Invalid rate; rate must be requests per second, a number from 0.01 to 100000`,
		"limits {\n  caller {\n    burst = 5\n  }\n}\n":                                                       `plughost.hcl:3,5-10: Invalid burst; burst is the burst of a rate: set rate too`,
		"limits {\n  caller {\n    calls_per_day = 1.5\n  }\n}\n":                                             `plughost.hcl:3,21-24: Invalid calls_per_day; calls_per_day must be a whole number from 1 to 1000000000`,
		"limits {\n  caller {}\n  caller {}\n}\n":                                                             `plughost.hcl:3,3-9: Duplicate caller block`,
		"limits {\n  rule \"x\" {\n    rate = 1\n  }\n}\n":                                                    `plughost.hcl:2,12-12: Missing required argument; The argument "match" is required`,
		"limits {\n  rule \"x\" {\n    match = \"caller.\"\n  }\n}\n":                                         `plughost.hcl:3,13-22: Invalid match; plughost.hcl:3:21: rule "limits x": Syntax error`,
		"limits {\n  rule \"x\" {\n    match = \"item.name == 'a'\"\n  }\n}\n":                                `match may read only caller`,
		"limits {\n  rule \"x\" {\n    match = \"true\"\n  }\n  rule \"x\" {\n    match = \"true\"\n  }\n}\n": `plughost.hcl:5,8-11: Duplicate rule`,
		"limits {\n  rule \"caller\" {\n    match = \"true\"\n  }\n}\n":                                       `Duplicate rule`,
		"limits {\n  caller {\n    tool \"a\" {\n      tool \"b\" {}\n    }\n  }\n}\n":                        `plughost.hcl:4,7-11: Unsupported block type`,
		"limits {\n  caller {\n    tool \"a\" {}\n    tool \"a\" {}\n  }\n}\n":                                `plughost.hcl:4,10-13: Duplicate tool block`,
	} {
		_, err := Parse([]byte(src), "plughost.hcl")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", src, err, want)
		}
	}
}
