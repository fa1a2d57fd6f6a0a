package serve

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/ratelimit"
	"github.com/plughost/plughost/host/tool"
)

// TestReloadRateLimits: a reload swaps the caller limits for the next
// request: a caller at its burst under the old limits passes under new
// ones that allow more, and limits removed limit nothing.
func TestReloadRateLimits(t *testing.T) {
	parse := func(src string) *config.Config {
		cfg, err := config.Parse([]byte(src), "plughost.hcl")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	old := parse("limits {\n  caller {\n    rate = 0.01\n    burst = 1\n  }\n}\n")
	rate, err := openRateLimits(old, &observer{}, func(string) string { return "" }, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	h := &Host{rate: rate, log: hclog.NewNullLogger()}
	req := ratelimit.Request{Caller: &tool.Caller{Subject: "alice"}, Key: "alice", Tool: "echo", Call: true}
	check := func() *ratelimit.Refusal { return h.rateLimiter().Check(context.Background(), req) }
	if check() != nil || check() == nil {
		t.Fatal("under the old limits, want one pass and a refusal")
	}
	if err := h.reloadRateLimits(old, parse("limits {\n  caller {\n    rate = 0.01\n    burst = 2\n  }\n}\n")); err != nil {
		t.Fatal(err)
	}
	if ref := check(); ref != nil {
		t.Errorf("after raising the burst to 2: %v", ref)
	}
	if check() == nil {
		t.Error("the burst of 2 let a third request through")
	}
	if err := h.reloadRateLimits(old, parse("")); err != nil {
		t.Fatal(err)
	}
	if ref := check(); ref != nil || h.rateLimiter().Active() {
		t.Errorf("with the caller block removed: %v", ref)
	}
}
