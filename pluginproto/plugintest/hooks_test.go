package plugintest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/plughost/plughost/pluginproto"
	"github.com/plughost/plughost/pluginproto/plugintest"
)

func noRM() *pluginproto.Plugin {
	p := pluginproto.New("no-rm", "1.0.0")
	p.Logger().SetLevel(0)
	p.AddHook(func(_ context.Context, q *pluginproto.HookRequest) (pluginproto.HookAnswer, error) {
		switch {
		case q.Hook == "broken":
			panic("a bug")
		case q.Hook == "hider":
			return pluginproto.Hide("hidden"), nil
		case strings.Contains(string(q.Arguments), "rm -rf"):
			return pluginproto.Refuse("no recursive deletes"), nil
		}
		return pluginproto.Pass(), nil
	}, pluginproto.BeforeCall)
	return p
}

func TestHook(t *testing.T) {
	p := noRM()
	a, err := plugintest.Hook(t.Context(), p, &pluginproto.HookRequest{Point: pluginproto.BeforeCall, Hook: "no-rm",
		Arguments: json.RawMessage(`{"cmd":"rm -rf /"}`)})
	if err != nil || a.Decision != pluginproto.HookRefuse || a.Reason != "no recursive deletes" {
		t.Fatalf("Hook = %+v, %v", a, err)
	}
	a, err = plugintest.Hook(t.Context(), p, &pluginproto.HookRequest{Point: pluginproto.BeforeCall, Hook: "no-rm", Arguments: json.RawMessage(`{"cmd":"ls"}`)})
	if err != nil || a.Decision != pluginproto.HookPass {
		t.Fatalf("Hook = %+v, %v", a, err)
	}
	if _, err := plugintest.Hook(t.Context(), p, &pluginproto.HookRequest{Point: pluginproto.BeforeCall, Hook: "broken"}); !errors.Is(err, plugintest.ErrHookFailed) || !strings.Contains(err.Error(), "a bug") {
		t.Errorf("a panicking hook: %v", err)
	}
	if _, err := plugintest.Hook(t.Context(), p, &pluginproto.HookRequest{Point: pluginproto.BeforeCall, Hook: "hider"}); !errors.Is(err, plugintest.ErrBadHookAnswer) {
		t.Errorf("a hide at before_call: %v", err)
	}
	if _, err := plugintest.Hook(t.Context(), p, &pluginproto.HookRequest{Point: pluginproto.AfterCall, Hook: "no-rm"}); err == nil || !strings.Contains(err.Error(), "offers no hook there") {
		t.Errorf("a point not offered: %v", err)
	}
}
