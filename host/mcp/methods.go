package mcp

import (
	"slices"
	"strings"

	"github.com/plughost/plughost/internal/jsonrpc"
)

// The method table: every MCP method the server knows, one entry each.
// An entry says in which protocol revisions the method exists, whether it
// is served before initialize, the server capability it belongs to, its
// params type (which the table decodes, params.go), what handles it and
// whether it is a long call.
// Adding a method is adding an entry; a method the table does not hold is
// answered -32601, and so is one that exists only in revisions this
// session does not speak.

// A method is one entry of the table.
type method struct {
	name string
	// revs are the revisions the method exists in.
	revs revSet
	// notification marks a client notification: never answered.
	notification bool
	// beforeInit marks a request served before initialize is answered.
	beforeInit bool
	// capability is the server capability the method belongs to, as
	// declared in the initialize result ("" when none).
	capability string
	// capRevs are the revisions whose initialize result declares the
	// capability; zero means all of revs. (completion/complete existed in
	// 2024-11-05 before the completions capability did.)
	capRevs revSet
	// long marks a long call: it runs on a worker goroutine, the client
	// can cancel it, and it may report progress and logs.
	long bool
	// serve decodes the params (as the entry's params type, params.go)
	// and handles the message. For a long call (and a list that must wait
	// for the catalog's first load) it returns the rest of the work (run
	// exactly once, on a worker); otherwise it answers at once and returns
	// nil. Nil for a method listed only to be answered as out of this
	// server's revisions.
	serve serveFunc
}

// A serveFunc serves one message of the method called name.
type serveFunc func(s *Session, in incoming, name string) (run func())

// request makes the serve function of a request whose params are a P,
// handled by a feature's handler H (handlers.go), which of makes from
// the session: the params decode into a P (its error is the answer), then
// handle runs with it.
func request[P params[P], H any](of func(*Session) H, handle func(H, incoming, P) (run func())) serveFunc {
	return func(s *Session, in incoming, name string) func() {
		var zero P
		p, err := zero.decode(name, in.msg.Params)
		if err != nil {
			s.respondError(in.rp, in.msg.ID, err)
			return nil
		}
		return handle(of(s), in, p)
	}
}

// notification makes the serve function of a notification whose params
// are a P, handled by an H that of makes from the session: params that do
// not decode are logged and ignored, as a notification has no answer.
func notification[P params[P], H any](of func(*Session) H, handle func(H, P)) serveFunc {
	return func(s *Session, in incoming, name string) func() {
		var zero P
		p, err := zero.decode(name, in.msg.Params)
		if err != nil {
			s.srv.log.Debug("ignored a notification with bad params", "method", name, "error", err.Message)
			return nil
		}
		handle(of(s), p)
		return nil
	}
}

// table holds every method the server knows, by name.
var table = map[string]*method{}

func init() {
	for _, m := range []*method{
		{name: "initialize", revs: sessionEra, beforeInit: true,
			serve: request[initParams](self, (*Session).initialize)},
		{name: "ping", revs: sessionEra, beforeInit: true, // 2026-07-28 removed it
			serve: request[noParams](self, (*Session).ping)},
		{name: "notifications/initialized", revs: sessionEra, notification: true,
			serve: notification[noParams](self, (*Session).initialized)},
		{name: "notifications/cancelled", revs: sessionEra | statelessEra, notification: true,
			serve: notification[cancelParams](callTableOf, (*callTable).cancelled)},
		// 2026-07-28 removed logging/setLevel (a request's _meta names its
		// log level) but kept the capability: the server sends logs.
		{name: "logging/setLevel", revs: sessionEra, capability: "logging", capRevs: sessionEra | statelessEra,
			serve: request[levelParams](self, (*Session).setLevel)},
		{name: "tools/list", revs: sessionEra | statelessEra, capability: "tools",
			serve: request[cursorParams](listsOf, listsHandler.listTools)},
		{name: "tools/call", revs: sessionEra | statelessEra, capability: "tools", long: true,
			serve: request[callParams](callsOf, callsHandler.startCall)},
		{name: "resources/list", revs: sessionEra | statelessEra, capability: "resources",
			serve: request[cursorParams](listsOf, listsHandler.listResources)},
		{name: "resources/templates/list", revs: sessionEra | statelessEra, capability: "resources",
			serve: request[cursorParams](listsOf, listsHandler.listResourceTemplates)},
		{name: "resources/read", revs: sessionEra | statelessEra, capability: "resources", long: true,
			serve: request[uriParams](catalogRequestsOf, catalogRequests.startRead)},
		// 2026-07-28 replaced these two by subscriptions/listen.
		{name: "resources/subscribe", revs: sessionEra, capability: "resources", long: true,
			serve: request[uriParams](subscriptionsOf, subscriptionsHandler.subscribe)},
		{name: "resources/unsubscribe", revs: sessionEra, capability: "resources", long: true,
			serve: request[uriParams](subscriptionsOf, subscriptionsHandler.unsubscribe)},
		{name: "prompts/list", revs: sessionEra | statelessEra, capability: "prompts",
			serve: request[cursorParams](listsOf, listsHandler.listPrompts)},
		{name: "prompts/get", revs: sessionEra | statelessEra, capability: "prompts", long: true,
			serve: request[promptParams](catalogRequestsOf, catalogRequests.startGetPrompt)},
		{name: "completion/complete", revs: sessionEra | statelessEra, long: true,
			capability: "completions", capRevs: since("2025-03-26") | statelessEra,
			serve: request[completeParams](catalogRequestsOf, catalogRequests.startComplete)},
		// The stateless revision's own methods.
		{name: "server/discover", revs: statelessEra,
			serve: request[noParams](self, (*Session).discover)},
		{name: "subscriptions/listen", revs: statelessEra, long: true,
			serve: request[listenParams](listenOf, listenHandler.listen)},
		// The tasks extension's (tasks.go); its removed v1 methods
		// (tasks/result, tasks/list) are unknown here, so -32601.
		{name: "tasks/get", revs: statelessEra, long: true,
			serve: request[taskParams](tasksOf, tasksHandler.start)},
		{name: "tasks/update", revs: statelessEra, long: true,
			serve: request[taskParams](tasksOf, tasksHandler.start)},
		{name: "tasks/cancel", revs: statelessEra, long: true,
			serve: request[taskParams](tasksOf, tasksHandler.start)},
	} {
		table[m.name] = m
	}
}

// lookup answers what the table says of a session's request or
// notification before it is served: the entry, or the error to answer a
// request with. v is the session's negotiated version (an index into
// versions), or -1 before initialize. (A method of the stateless revision
// alone never comes here: dispatchOne serves it statelessly.)
func lookup(name []byte, v int) (*method, *jsonrpc.Error) {
	m := table[string(name)]
	switch {
	case m == nil:
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "method not found: "+string(name))
	case v >= 0 && !m.revs.has(v):
		return nil, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "method not found: "+m.name+
			" (not in protocol version "+versions[v]+")")
	}
	return m, nil
}

// capabilities returns the server capabilities of the initialize result
// of versions[v]: one member per capability the table's methods belong to
// in that version, in name order.
func capabilities(v int) string { return capabilitiesIn(versionBits[v]) }

// capabilitiesIn returns the server capabilities of the revision rev (a
// set of one): one member per capability the table's methods belong to
// in it, in name order.
func capabilitiesIn(rev revSet) string {
	var caps []string
	for _, m := range table {
		in := m.capRevs
		if in == 0 {
			in = m.revs
		}
		if m.capability != "" && in&rev != 0 && !slices.Contains(caps, m.capability) {
			caps = append(caps, m.capability)
		}
	}
	slices.Sort(caps)
	var b strings.Builder
	b.WriteByte('{')
	for i, c := range caps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + c + `":` + capabilityValue[c])
	}
	b.WriteByte('}')
	return b.String()
}

// capabilityValue is each capability's object in the initialize result.
// Plugins load after initialize, so what they will offer is unknown when
// it is answered: resources (with subscriptions), prompts and completions
// are always declared, their lists empty until a provider offers some,
// and list_changed tells the client when one does (see the package doc).
var capabilityValue = map[string]string{
	"completions": `{}`,
	"logging":     `{}`,
	"prompts":     `{"listChanged":true}`,
	"resources":   `{"subscribe":true,"listChanged":true}`,
	"tools":       `{"listChanged":true}`,
}

// self is the handler of the requests that stay on the session.
func self(s *Session) *Session { return s }
