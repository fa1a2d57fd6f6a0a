package pluginproto

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func TestAddHookOffersItsPointsInOrder(t *testing.T) {
	p := New("guard", "1")
	pass := func(context.Context, *HookRequest) (HookAnswer, error) { return Pass(), nil }
	p.AddHook(pass, OnDefinitions, AfterCall)
	p.AddHook(pass, BeforeCall)
	if got, want := p.Offers().Hooks, []HookPoint{BeforeCall, AfterCall, OnDefinitions}; !slices.Equal(got, want) {
		t.Fatalf("Offers().Hooks = %v, want %v", got, want)
	}
	for name, add := range map[string]func(){
		"nil":     func() { p.AddHook(nil, BeforeCall) },
		"none":    func() { p.AddHook(pass) },
		"unknown": func() { p.AddHook(pass, "before_lunch") },
	} {
		func() {
			defer func() {
				if v := recover(); v == nil || !strings.HasPrefix(v.(string), "pluginproto: AddHook:") {
					t.Errorf("%s: AddHook recovered %v, want a panic naming AddHook", name, v)
				}
			}()
			add()
		}()
	}
}
