package pluginwire

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/plughost/plughost/internal/pluginpb"
)

// MaxHookReason bounds a hook's reason, in bytes: a client or the operator
// reads it, so it is a sentence or two, not a document.
const MaxHookReason = 4096

// ErrBadHookAnswer: a hook plugin's answer breaks the contract's rules (a
// hide outside on_definitions, a rewrite that is not a JSON object, a
// decision the contract does not know, a reason over MaxHookReason).
var ErrBadHookAnswer = errors.New("the hook's answer breaks the contract")

// CheckHookAnswer checks a hook's answer to a question at point; an
// answer carrying an error is not checked (the hook could not decide).
// The host's client and package plugintest apply it alike.
func CheckHookAnswer(point string, a *pluginpb.HookAnswer) error {
	if a.GetError() != "" {
		return nil
	}
	if len(a.GetReason()) > MaxHookReason || !utf8.ValidString(a.GetReason()) {
		return fmt.Errorf("%w: its reason is %d bytes (at most %d of valid UTF-8)", ErrBadHookAnswer, len(a.GetReason()), MaxHookReason)
	}
	switch a.GetDecision() {
	case pluginpb.HookAnswer_PASS, pluginpb.HookAnswer_REFUSE:
	case pluginpb.HookAnswer_REWRITE:
		if !IsObject(a.GetRewritten()) {
			return fmt.Errorf("%w: a rewrite must carry a JSON object (the arguments, the result or the definition, whole), got %.80q", ErrBadHookAnswer, a.GetRewritten())
		}
	case pluginpb.HookAnswer_HIDE:
		if point != "on_definitions" {
			return fmt.Errorf("%w: hide answers a question at on_definitions only, not at %s", ErrBadHookAnswer, point)
		}
	default:
		return fmt.Errorf("%w: unknown decision %d", ErrBadHookAnswer, a.GetDecision())
	}
	return nil
}
