package mcp

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/plughost/plughost/internal/jsonrpc"
)

// Params: each entry of the method table names its method's params type
// (request[callParams], notification[cancelParams]), and the table decodes
// and checks the params once, before the handler runs, handing it a typed
// value. A params type decodes itself: its decode reads the raw params
// object (nil when absent; an object otherwise, which jsonrpc.Decode
// checked) and returns the error to answer with, -32602 naming what is
// wrong, in the order the checks below make them. What decode keeps
// aliases the message, unless it says it copies.

// params is what the table asks of a params type P: a *P decodes the
// params of method into itself.
type params[P any] interface {
	*P
	decode(method string, raw []byte) *jsonrpc.Error
}

// noParams are the params of a method that takes none (any are ignored).
type noParams struct{}

func (*noParams) decode(string, []byte) *jsonrpc.Error { return nil }

// cancelParams are the params of notifications/cancelled.
type cancelParams struct {
	id []byte // requestId, a valid id
}

func (p *cancelParams) decode(method string, raw []byte) *jsonrpc.Error {
	p.id = jsonrpc.Member(raw, "requestId")
	if p.id == nil || !jsonrpc.ValidID(p.id) {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, method+" without a valid requestId")
	}
	return nil
}

// levelParams are the params of logging/setLevel.
type levelParams struct {
	level int // an index into levels
}

func (p *levelParams) decode(_ string, raw []byte) *jsonrpc.Error {
	name, ok := jsonrpc.Unquote(jsonrpc.Member(raw, "level"))
	if p.level = levelIndex(name); ok && p.level >= 0 {
		return nil
	}
	m := "invalid params: level must be a string"
	if ok {
		m = "invalid params: unknown level " + strconv.Quote(name)
	}
	return jsonrpc.NewError(jsonrpc.CodeInvalidParams, m+"; want one of "+strings.Join(levels[:], ", "))
}

// cursorParams are the params of a list request.
type cursorParams struct {
	cursor string // "" when absent
}

func (p *cursorParams) decode(_ string, raw []byte) *jsonrpc.Error {
	c := jsonrpc.Member(raw, "cursor")
	if c == nil {
		return nil
	}
	var ok bool
	if p.cursor, ok = jsonrpc.Unquote(c); !ok {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: cursor must be a string")
	}
	return nil
}

// uriParams are the params of resources/read, resources/subscribe and
// resources/unsubscribe.
type uriParams struct {
	uri string // never empty
}

func (p *uriParams) decode(method string, raw []byte) *jsonrpc.Error {
	var u []byte
	for k, v := range jsonrpc.Members(raw) {
		switch {
		case jsonrpc.KeyIs(k, "uri"):
			u = v
		case jsonrpc.KeyIs(k, "_meta"):
			if err := checkMeta(v); err != nil {
				return err
			}
		}
	}
	var ok bool
	p.uri, ok = jsonrpc.Unquote(u)
	switch {
	case !ok:
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: "+method+" needs uri, a string")
	case p.uri == "":
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: uri must not be empty")
	}
	return nil
}

// namedParams are the params of a request naming what it runs
// (tools/call, prompts/get): name, arguments and _meta.
type namedParams struct {
	name string
	args []byte // nil when absent; JSON null stands for absent too
	meta []byte // _meta, an object with a valid progressToken if any; nil when absent
}

func (p *namedParams) decode(method string, raw []byte) *jsonrpc.Error {
	var name []byte
	for k, v := range jsonrpc.Members(raw) {
		switch {
		case jsonrpc.KeyIs(k, "name"):
			name = v
		case jsonrpc.KeyIs(k, "arguments"):
			p.args = v
		case jsonrpc.KeyIs(k, "_meta"):
			if err := checkMeta(v); err != nil {
				return err
			}
			p.meta = v
		}
	}
	var ok bool
	p.name, ok = jsonrpc.Unquote(name)
	switch {
	case !ok:
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: "+method+" needs name, a string")
	case p.args != nil && !jsonrpc.IsObject(p.args) && string(p.args) != "null":
		// null is "no arguments" to some clients: the catalog defaults it.
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: arguments must be an object")
	}
	return nil
}

// checkMeta checks a request's _meta: an object, whose progressToken, if
// any, is a string or an integer.
func checkMeta(meta []byte) *jsonrpc.Error {
	if !jsonrpc.IsObject(meta) {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: _meta must be an object")
	}
	if tok := jsonrpc.Member(meta, "progressToken"); tok != nil && !jsonrpc.ValidID(tok) {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: progressToken must be a string or an integer")
	}
	return nil
}

// callParams are the params of tools/call: namedParams, and what its
// _meta carries.
type callParams struct {
	namedParams
	token []byte // _meta.progressToken; nil when absent
	// traceParent and traceState are _meta's W3C trace context, unchecked
	// (setTrace checks them); "" when absent.
	traceParent, traceState string
}

func (p *callParams) decode(method string, raw []byte) *jsonrpc.Error {
	if err := p.namedParams.decode(method, raw); err != nil {
		return err
	}
	p.token = jsonrpc.Member(p.meta, "progressToken")
	p.traceParent, _ = jsonrpc.Unquote(jsonrpc.Member(p.meta, "traceparent"))
	p.traceState, _ = jsonrpc.Unquote(jsonrpc.Member(p.meta, "tracestate"))
	return nil
}

// promptParams are the params of prompts/get: namedParams whose arguments
// are strings.
type promptParams struct{ namedParams }

func (p *promptParams) decode(method string, raw []byte) *jsonrpc.Error {
	if err := p.namedParams.decode(method, raw); err != nil {
		return err
	}
	if string(p.args) == "null" {
		p.args = nil // as absent: the catalog defaults it
	}
	return checkStringMap(p.args, "arguments")
}

// checkStringMap checks that obj, when not nil, is an object of strings,
// as prompt arguments are.
func checkStringMap(obj []byte, what string) *jsonrpc.Error {
	if obj == nil {
		return nil
	}
	if !jsonrpc.IsObject(obj) {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: "+what+" must be an object")
	}
	for k, v := range jsonrpc.Members(obj) {
		if _, ok := jsonrpc.Unquote(v); !ok {
			name, _ := jsonrpc.Unquote(k)
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: "+what+" must be an object of strings; "+
				strconv.Quote(name)+" is not a string")
		}
	}
	return nil
}

const needComplete = "invalid params: completion/complete needs ref (an object) and argument (an object with name and value, strings)"

// completeParams are the params of completion/complete, checked and
// handed to the catalog as the client sent them.
type completeParams struct {
	raw json.RawMessage // a compact copy of the params
}

func (p *completeParams) decode(_ string, raw []byte) *jsonrpc.Error {
	var ref, arg, ctx []byte
	for k, v := range jsonrpc.Members(raw) {
		switch {
		case jsonrpc.KeyIs(k, "ref"):
			ref = v
		case jsonrpc.KeyIs(k, "argument"):
			arg = v
		case jsonrpc.KeyIs(k, "context"):
			ctx = v
		case jsonrpc.KeyIs(k, "_meta"):
			if err := checkMeta(v); err != nil {
				return err
			}
		}
	}
	if !jsonrpc.IsObject(ref) || !jsonrpc.IsObject(arg) {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, needComplete)
	}
	switch typ, _ := jsonrpc.Unquote(jsonrpc.Member(ref, "type")); typ {
	case "ref/prompt":
		if _, ok := jsonrpc.Unquote(jsonrpc.Member(ref, "name")); !ok {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: a ref/prompt needs name, a string")
		}
	case "ref/resource":
		if _, ok := jsonrpc.Unquote(jsonrpc.Member(ref, "uri")); !ok {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: a ref/resource needs uri, a string")
		}
	default:
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, `invalid params: ref.type must be "ref/prompt" or "ref/resource"`)
	}
	_, nameOK := jsonrpc.Unquote(jsonrpc.Member(arg, "name"))
	_, valueOK := jsonrpc.Unquote(jsonrpc.Member(arg, "value"))
	if !nameOK || !valueOK {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: argument needs name and value, strings")
	}
	if ctx != nil {
		if !jsonrpc.IsObject(ctx) {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: context must be an object")
		}
		if err := checkStringMap(jsonrpc.Member(ctx, "arguments"), "context.arguments"); err != nil {
			return err
		}
	}
	p.raw, _ = jsonrpc.AppendJSON(nil, raw) // the transport's bytes: copy
	return nil
}

// initParams are the params of initialize the server reads.
type initParams struct {
	version string     // protocolVersion as requested
	caps    clientCaps // what capabilities declared
	client  []any      // clientInfo's name and version, for the log
	info    string     // clientInfo as "name/version", for Options.OnCallEnd
}

func (ip *initParams) decode(_ string, raw []byte) *jsonrpc.Error {
	var p struct {
		ProtocolVersion *string          `json:"protocolVersion"`
		Capabilities    *json.RawMessage `json:"capabilities"`
		ClientInfo      *struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
	}
	if raw == nil || json.Unmarshal(raw, &p) != nil || p.ProtocolVersion == nil {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams,
			"invalid params: initialize needs protocolVersion (a string), capabilities (an object) and clientInfo (an object with name and version)")
	}
	ip.version = *p.ProtocolVersion
	if p.Capabilities != nil {
		if !jsonrpc.IsObject(*p.Capabilities) {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: capabilities must be an object")
		}
		ip.caps = parseClientCaps(*p.Capabilities)
	} else {
		ip.caps.raw = emptyObject
	}
	if p.ClientInfo != nil {
		ip.client = []any{"client", p.ClientInfo.Name, "client_version", p.ClientInfo.Version}
		ip.info = clientName(p.ClientInfo.Name, p.ClientInfo.Version)
	}
	return nil
}

// listenParams are the params of subscriptions/listen.
type listenParams struct {
	lists uint32   // the list kinds asked (listBit)
	uris  []string // resourceSubscriptions, each once
	tasks []string // taskIds (the tasks extension), each once
}

func (p *listenParams) decode(_ string, raw []byte) *jsonrpc.Error {
	n := jsonrpc.Member(raw, "notifications")
	if n == nil || !jsonrpc.IsObject(n) {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: subscriptions/listen needs notifications, an object naming what to receive")
	}
	var f struct {
		Tools     *bool     `json:"toolsListChanged"`
		Resources *bool     `json:"resourcesListChanged"`
		Prompts   *bool     `json:"promptsListChanged"`
		URIs      *[]string `json:"resourceSubscriptions"`
		Tasks     []string  `json:"taskIds"`
	}
	if err := json.Unmarshal(n, &f); err != nil {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: notifications: the list_changed members must be booleans, "+
			"resourceSubscriptions and taskIds arrays of strings")
	}
	for _, id := range f.Tasks {
		if id == "" {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: taskIds: a task id must not be empty")
		}
		if !slices.Contains(p.tasks, id) {
			p.tasks = append(p.tasks, id)
		}
	}
	for _, k := range []struct {
		b   *bool
		bit uint32
	}{{f.Tools, listTools}, {f.Resources, listResources}, {f.Prompts, listPrompts}} {
		if k.b != nil && *k.b {
			p.lists |= k.bit
		}
	}
	if f.URIs != nil {
		for _, u := range *f.URIs {
			if u == "" {
				return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: resourceSubscriptions: a URI must not be empty")
			}
			if !slices.Contains(p.uris, u) {
				p.uris = append(p.uris, u)
			}
		}
	}
	return nil
}

// taskParams are the params of tasks/get, tasks/update and tasks/cancel:
// a taskId, a string, and for tasks/update inputResponses, an object of
// objects.
type taskParams struct {
	method    string
	id        string
	responses json.RawMessage // tasks/update's inputResponses, owned
}

func (p *taskParams) decode(method string, raw []byte) *jsonrpc.Error {
	p.method = method
	var ok bool
	if p.id, ok = jsonrpc.Unquote(jsonrpc.Member(raw, "taskId")); !ok || p.id == "" {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: "+method+" needs taskId, a non-empty string")
	}
	if method != "tasks/update" {
		return nil
	}
	resp := jsonrpc.Member(raw, "inputResponses")
	if !jsonrpc.IsObject(resp) {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: tasks/update needs inputResponses, an object (key → the client's result)")
	}
	for k, v := range jsonrpc.Members(resp) {
		if !jsonrpc.IsObject(v) {
			key, _ := jsonrpc.Unquote(k)
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: inputResponses["+strconv.Quote(key)+
				"] is not an object (a CreateMessageResult, ElicitResult or ListRootsResult)")
		}
	}
	p.responses, _ = jsonrpc.AppendJSON(nil, resp) // the transport's bytes: copy
	return nil
}
