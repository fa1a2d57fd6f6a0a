package catalog

import (
	"errors"

	"github.com/plughost/plughost/host/tool"
)

// A provider that needs the client's input answers a call, read or prompt
// get with a *tool.InputRequired; the protocol layer gets the client's
// answers and retries the request with tool.Input. Minutes may pass in
// between (a person fills in a form), and the providers may change
// meanwhile. The answers and the provider's opaque state are that
// provider's alone, so the catalog names the provider in the
// InputRequired (asked) and sends the retry to it or nowhere (retryTo).

// asked returns err with provider stamped on it when it is an
// *tool.InputRequired: a copy whose Provider is provider (the provider's
// own value is left alone). Any other err is returned as it is.
func asked(err error, provider string) error {
	var ir *tool.InputRequired
	if !errors.As(err, &ir) {
		return err
	}
	stamped := *ir
	stamped.Provider = provider
	return &stamped
}

// retryTo returns nil when a request may go to the provider that serves
// it now: it carries no input, input from that provider, or input that
// names no provider and carries no state (a stateless client's answers
// sent without a requestState: nothing of a provider's travels with
// them). Otherwise the
// error, wrapping tool.ErrGone, names both providers. what names the
// request ("tool \"x\""), serving is the name of the provider that serves
// it now ("" for none), again says what the client may do ("call it
// again").
func retryTo(input *tool.Input, what, serving, again string) error {
	switch {
	case input == nil || input.Provider == "" && input.State == "" || input.Provider != "" && input.Provider == serving:
		return nil
	case serving == "":
		return tool.Errorf(tool.ErrGone, "%s: no provider serves it any more, so the client's input cannot reach the provider that asked for it (%q)",
			what, input.Provider)
	case input.Provider == "":
		return tool.Errorf(tool.ErrGone, "%s: the retry carries a provider's state but does not name the provider that asked for the client's input, so it cannot go to provider %q: %s",
			what, serving, again)
	}
	return tool.Errorf(tool.ErrGone, "%s: provider %q, which asked for the client's input, no longer serves it (provider %q does): %s",
		what, input.Provider, serving, again)
}
