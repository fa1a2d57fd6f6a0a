package wrapped

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/plughost/plughost/host/wrapped/wire"
)

// notified handles the server's notification (on the connection's reading
// goroutine, in the order sent: a call's progress before its result).
func (b *bridge) notified(method string, params json.RawMessage) {
	switch method {
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		b.changed()
	case "notifications/resources/updated":
		b.updated(params)
	case "notifications/message":
		b.logMessage(params)
	case "notifications/progress":
		b.progress(params)
	}
}

// updated passes a resources/updated on. Before the plugin is made, the
// host cannot have subscribed to anything: it is dropped.
func (b *bridge) updated(params json.RawMessage) {
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(params, &p) != nil || p.URI == "" {
		return
	}
	if plugin := b.made.Load(); plugin != nil {
		plugin.ResourceUpdated(p.URI)
	}
}

// logMessage passes the server's log message to the client of the one
// request in flight; with none or several, it cannot tell whose it is,
// and logs it for the operator.
func (b *bridge) logMessage(params json.RawMessage) {
	var p struct {
		Level  string          `json:"level"`
		Logger string          `json:"logger"`
		Data   json.RawMessage `json:"data"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	if len(p.Data) == 0 {
		p.Data = json.RawMessage("null")
	}
	if emit, ok := b.xs.emitters(""); ok && emit.log != nil {
		emit.log(p.Level, p.Data)
		return
	}
	b.log.Info("server log message", "level", p.Level, "logger", p.Logger, "data", string(p.Data))
}

// progress passes a progress notification to the request whose token it
// names (the exchange's id).
func (b *bridge) progress(params json.RawMessage) {
	var p struct {
		ProgressToken any     `json:"progressToken"`
		Progress      float64 `json:"progress"`
		Total         float64 `json:"total"`
		Message       string  `json:"message"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, _ := p.ProgressToken.(string)
	if emit, ok := b.xs.emitters(id); ok && id != "" && emit.progress != nil {
		emit.progress(p.Progress, p.Total, p.Message)
	}
}

// asked answers the server's questions to the client (sampling,
// elicitation, roots) through the request they belong to; anything else
// it asks is not served.
func (b *bridge) asked(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	switch method {
	case "sampling/createMessage", "elicitation/create", "roots/list":
		if string(params) == "null" {
			params = nil // roots/list has none
		}
		return b.xs.ask(ctx, method, params)
	}
	return nil, &wire.Error{Code: wire.CodeMethodNotFound, Message: fmt.Sprintf("plughost does not serve %s", method)}
}
