package pluginproto

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/plughost/plughost/internal/pluginhost"
)

// sampleTen asks the client's LLM for ten tokens.
func sampleTen(ctx context.Context, r *Request) error {
	_, err := r.Sample(ctx, SampleParams{Messages: []Message{{Role: "user", Content: Text("hi")}}, MaxTokens: 10})
	return err
}

// A handler's error that wraps the error of a request the client did not
// declare the capability for answers the call with a
// *CapabilityRequiredError naming every such capability; a handler that
// handles it degrades; the bare sentinel names no capability, so it stays
// an isError result.
func TestHandlerCapabilityErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		caps    string
		handler Handler
		// required is the capabilities the call says it needs; "" means
		// the call answers result.
		required, message, result string
	}{
		"returned as it is": {
			caps: `{}`,
			handler: func(ctx context.Context, r *Request) (*Result, error) {
				return nil, sampleTen(ctx, r)
			},
			required: `{"sampling":{}}`,
			message:  "sampling/createMessage: the client did not declare the capability sampling",
		},
		"wrapped": {
			caps: `{"elicitation":{}}`,
			handler: func(ctx context.Context, r *Request) (*Result, error) {
				_, err := r.Elicit(ctx, ElicitParams{Message: "sign in", URL: "https://example.com/login"})
				return nil, fmt.Errorf("cannot sign in: %w", err)
			},
			required: `{"elicitation":{"url":{}}}`,
			message:  "cannot sign in: elicitation/create: the client did not declare the capability elicitation.url",
		},
		"several, joined": {
			caps: `{}`,
			handler: func(ctx context.Context, r *Request) (*Result, error) {
				_, errRoots := r.Roots(ctx)
				_, errForm := r.Elicit(ctx, ElicitParams{Message: "?"})
				_, errURL := r.Elicit(ctx, ElicitParams{Message: "sign in", URL: "https://example.com/login"})
				return nil, errors.Join(errRoots, sampleTen(ctx, r), errForm, errURL)
			},
			required: `{"elicitation":{"form":{},"url":{}},"roots":{},"sampling":{}}`,
		},
		"wins over the requests awaiting an answer": {
			caps: `{"roots":{}}`,
			handler: func(ctx context.Context, r *Request) (*Result, error) {
				_, errRoots := r.Roots(ctx) // asked: ErrInputRequired
				return nil, errors.Join(errRoots, sampleTen(ctx, r))
			},
			required: `{"sampling":{}}`,
		},
		"handled": {
			caps: `{}`,
			handler: func(ctx context.Context, r *Request) (*Result, error) {
				if err := sampleTen(ctx, r); errors.Is(err, ErrClientUnsupported) {
					return TextResult("no LLM: done without"), nil
				}
				return TextResult("?"), nil
			},
			result: `{"content":[{"type":"text","text":"no LLM: done without"}]}`,
		},
		"the bare sentinel": {
			caps: `{}`,
			handler: func(context.Context, *Request) (*Result, error) {
				return nil, fmt.Errorf("my own check: %w", ErrClientUnsupported)
			},
			result: `{"content":[{"type":"text","text":"my own check: the client did not declare the capability"}],"isError":true}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := New("test", "0")
			p.AddTool(Tool{Name: "t"}, tc.handler)
			res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "t", ClientCapabilities: json.RawMessage(tc.caps)})
			if tc.required == "" {
				if err != nil || string(res) != tc.result {
					t.Errorf("CallTool = %s, %v; want %s", res, err, tc.result)
				}
				return
			}
			var cr *CapabilityRequiredError
			if !errors.As(err, &cr) {
				t.Fatalf("CallTool = %s, %v; want a *CapabilityRequiredError", res, err)
			}
			if string(cr.Capabilities) != tc.required {
				t.Errorf("Capabilities = %s, want %s", cr.Capabilities, tc.required)
			}
			if tc.message != "" && cr.Message != tc.message {
				t.Errorf("Message = %q, want %q", cr.Message, tc.message)
			}
		})
	}
}

// A key misused fails the call even when the handler also returned a
// capability error: the misuse is a bug of the handler's.
func TestHandlerCapabilityErrorAfterMisusedKey(t *testing.T) {
	t.Parallel()
	p := New("test", "0")
	p.AddTool(Tool{Name: "t"}, func(ctx context.Context, r *Request) (*Result, error) {
		_, _ = r.RootsKeyed(ctx, "12")
		return nil, sampleTen(ctx, r)
	})
	res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "t", ClientCapabilities: json.RawMessage(`{"roots":{}}`)})
	if err != nil {
		t.Fatalf("CallTool = %s, %v; want an isError result", res, err)
	}
	var r struct{ IsError bool }
	if json.Unmarshal(res, &r) != nil || !r.IsError {
		t.Errorf("CallTool = %s; want an isError result naming the misused key", res)
	}
}

func TestCapabilityRequiredErrorText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  *CapabilityRequiredError
		want string
	}{
		{&CapabilityRequiredError{Capabilities: json.RawMessage(`{"roots":{}}`), Message: "roots/list: no"}, "roots/list: no"},
		{&CapabilityRequiredError{Capabilities: json.RawMessage(`{"roots":{}}`)}, `the call needs client capabilities the client did not declare: {"roots":{}}`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}
