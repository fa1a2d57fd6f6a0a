package pluginclient

import (
	"fmt"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/pluginpb"
	"github.com/plughost/plughost/internal/pluginwire"
	"github.com/plughost/plughost/pluginproto"
)

// inputRequired checks a plugin's InputRequired and returns it as an
// *InputRequiredError, or an error wrapping ErrInvalidResult naming the
// problem. what names the request ("call \"x\"").
func inputRequired(what string, ir *pluginpb.InputRequired) error {
	if err := pluginwire.CheckInputRequired(what, ir); err != nil {
		return err
	}
	return &pluginproto.InputRequiredError{Requests: ir.GetRequests(), State: ir.GetRequestState()}
}

// inputPB converts the host's Input for the wire; nil stays nil. A
// Responses that is not a JSON object is an error.
func inputPB(in *pluginhost.Input) (*pluginpb.Input, error) {
	if in == nil {
		return nil, nil
	}
	if len(in.Responses) > 0 && !pluginwire.IsObject(in.Responses) {
		return nil, fmt.Errorf("input responses is not a JSON object: %.80q", in.Responses)
	}
	m := &pluginpb.Input{Responses: in.Responses, RequestState: in.State}
	if len(in.Errors) > 0 {
		m.Errors = make(map[string]*pluginpb.InputError, len(in.Errors))
		for k, e := range in.Errors {
			m.Errors[k] = &pluginpb.InputError{Code: int32(e.Code), Message: e.Message}
		}
	}
	return m, nil
}

// callerPB converts who a call acts for for the wire; nil stays nil.
func callerPB(c *pluginproto.Caller) *pluginpb.Caller {
	if c == nil {
		return nil
	}
	return &pluginpb.Caller{Subject: c.Subject, ClientId: c.ClientID, Issuer: c.Issuer, Scopes: c.Scopes, Claims: c.Claims, Local: c.Local}
}

// callCapabilityError is the host's view of a CallError carrying
// required_capabilities: a *CapabilityRequiredError, or an error wrapping
// ErrInvalidResult when they are not a JSON object.
func callCapabilityError(tool string, e *pluginpb.CallError) error {
	caps := e.GetRequiredCapabilities()
	if !pluginwire.IsObject(caps) {
		return fmt.Errorf("call %q: %w: required_capabilities is not a JSON object: %.80q", tool, ErrInvalidResult, caps)
	}
	return &pluginproto.CapabilityRequiredError{Capabilities: caps, Message: e.GetMessage()}
}
