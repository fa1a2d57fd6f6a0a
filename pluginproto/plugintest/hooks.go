package plugintest

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
	"github.com/plughost/plughost/internal/pluginwire"
	"github.com/plughost/plughost/pluginproto"
)

// ErrHookFailed: the hook could not decide (its HookFunc returned an error
// or panicked), as the host's client reports it; the host then applies the
// hook's on_error. ErrBadHookAnswer: the answer breaks the contract's
// rules, which the host refuses (a Hide outside OnDefinitions, a Rewrite
// that is not a JSON object, a reason over 4 KiB).
var (
	ErrHookFailed    = errors.New("the hook failed")
	ErrBadHookAnswer = pluginwire.ErrBadHookAnswer
)

// Hook asks p's hooks one question in-process, as the host asks over the
// plugin's Hooks stream, and returns the answer the host would take:
//
//	a, err := plugintest.Hook(ctx, p, &pluginproto.HookRequest{
//		Point: pluginproto.BeforeCall, Hook: "no-rm", Kind: "tool", Name: "shell", Provider: "shell",
//		Arguments: json.RawMessage(`{"cmd":"rm -rf /"}`),
//	})
//
// A point p does not offer (Offers().Hooks) is an error naming it, as the
// host never asks it; a HookFunc's error or panic wraps ErrHookFailed;
// an answer the host refuses wraps ErrBadHookAnswer.
func Hook(ctx context.Context, p *pluginproto.Plugin, q *pluginproto.HookRequest) (pluginproto.HookAnswer, error) {
	if offered := p.Offers().Hooks; !slices.Contains(offered, q.Point) {
		return pluginproto.HookAnswer{}, fmt.Errorf("hook %q at %s: the plugin offers no hook there (it offers %v): the host would not ask it", q.Hook, q.Point, offered)
	}
	msg := &pluginpb.HookCall{Point: string(q.Point), Hook: q.Hook, Kind: q.Kind, Name: q.Name, Exposed: q.Exposed, Uri: q.URI,
		Provider: q.Provider, Definition: q.Definition, Arguments: q.Arguments, Result: q.Result}
	if c := q.Caller; c != nil {
		msg.Caller = &pluginpb.Caller{Subject: c.Subject, ClientId: c.ClientID, Issuer: c.Issuer, Scopes: c.Scopes, Claims: c.Claims, Local: c.Local}
	}
	a := pluginhost.Of(p).Hook(ctx, msg)
	if a.GetError() != "" {
		return pluginproto.HookAnswer{}, fmt.Errorf("hook %q at %s: %w: %s", q.Hook, q.Point, ErrHookFailed, a.GetError())
	}
	if err := pluginwire.CheckHookAnswer(string(q.Point), a); err != nil {
		return pluginproto.HookAnswer{}, fmt.Errorf("hook %q at %s: %w", q.Hook, q.Point, err)
	}
	return pluginproto.HookAnswer{Decision: decisions[a.GetDecision()], Reason: a.GetReason(), Rewritten: a.GetRewritten()}, nil
}

// decisions are the wire's decisions in the SDK's words.
var decisions = map[pluginpb.HookAnswer_Decision]pluginproto.HookDecision{
	pluginpb.HookAnswer_PASS: pluginproto.HookPass, pluginpb.HookAnswer_REFUSE: pluginproto.HookRefuse,
	pluginpb.HookAnswer_REWRITE: pluginproto.HookRewrite, pluginpb.HookAnswer_HIDE: pluginproto.HookHide,
}
