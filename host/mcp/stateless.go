package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// The stateless revision, MCP 2026-07-28. It has no initialize and no
// session: every request says in its _meta which protocol version it
// speaks and what its client can do, and is served on that alone. The era
// is decided per request (statelessMeta): a request whose _meta names a
// protocol version is served statelessly, whatever came before it on the
// same connection; any other is a request of the session (2025-11-25 and
// older), which needs initialize first. So one stdio connection or one
// HTTP endpoint serves both eras, and a 2026-07-28 client needs no
// session at all: its requests may reach any replica.

// StatelessVersion is the protocol version of the stateless revision.
const StatelessVersion = "2026-07-28"

// The _meta keys of the stateless revision (SEP-2575).
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// Error codes of the stateless revision.
const (
	// CodeHeaderMismatch: an HTTP request's routing headers disagree with
	// its body, or are missing or malformed (HTTP 400).
	CodeHeaderMismatch = -32020
	// CodeMissingCapability: the request needs a client capability its
	// _meta does not declare (HTTP 400); data.requiredCapabilities names it.
	CodeMissingCapability = -32021
	// CodeUnsupportedVersion: the request's protocol version is not one
	// the server speaks (HTTP 400); data says which it does.
	CodeUnsupportedVersion = -32022
)

// stateless is what a 2026-07-28 request says of itself in its _meta, in
// place of a session's state.
type stateless struct {
	caps clientCaps
	// level is the least severe log level the client wants for this
	// request (an index into levels), or -1: no log notifications at all
	// (the revision's default when _meta has no logLevel).
	level int
	// client is _meta's clientInfo, "name/version" (clientName); "" when
	// absent.
	client string
}

// IsStateless reports whether m, a decoded JSON-RPC message, is a request
// of the stateless revision: its params' _meta names a protocol version,
// or its method exists only in that revision. Transports route with it
// (Streamable HTTP serves such a request without a session).
func IsStateless(m jsonrpc.Message) bool {
	if m.Kind != jsonrpc.Request {
		return false
	}
	if meta := jsonrpc.Member(m.Params, "_meta"); meta != nil && jsonrpc.Member(meta, metaProtocolVersion) != nil {
		return true
	}
	e := table[string(m.Method)]
	return e != nil && e.revs == statelessEra
}

// InspectStateless checks the _meta of m, a decoded request of the
// stateless revision, as serving it would. It returns the protocol version
// _meta names ("" when none, or not a string), and nil when _meta is good,
// else the error it would be answered (-32602, or -32022 for a version the
// server does not speak statelessly). The Streamable HTTP transport checks
// the version against its header and answers these with 400.
func InspectStateless(m jsonrpc.Message) (version string, err *jsonrpc.Error) {
	version, _ = jsonrpc.Unquote(jsonrpc.Member(jsonrpc.Member(m.Params, "_meta"), metaProtocolVersion))
	err = new(stateless).decode(m.Params)
	return version, err
}

// supportedVersions are every protocol version the server speaks, newest
// first: the stateless one, then those of a session.
var supportedVersions = append([]string{StatelessVersion}, versions[:]...)

// decode reads and checks a stateless request's _meta: an object
// naming a protocol version the server speaks statelessly (otherwise
// -32022, naming what it speaks) and the client's capabilities (an
// object); clientInfo, when present, an object; logLevel, when present, a
// level.
func (st *stateless) decode(params []byte) *jsonrpc.Error {
	meta := jsonrpc.Member(params, "_meta")
	if meta == nil || !jsonrpc.IsObject(meta) {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: a "+StatelessVersion+" request needs _meta, an object with "+
			metaProtocolVersion+" and "+metaClientCapabilities)
	}
	pvRaw := jsonrpc.Member(meta, metaProtocolVersion)
	pv, ok := jsonrpc.Unquote(pvRaw)
	switch {
	case pvRaw == nil:
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: _meta needs "+metaProtocolVersion+", a string")
	case !ok:
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: _meta's "+metaProtocolVersion+" must be a string")
	case pv != StatelessVersion:
		return unsupportedVersion(pv)
	}
	st.level = -1
	caps := jsonrpc.Member(meta, metaClientCapabilities)
	if caps == nil || !jsonrpc.IsObject(caps) {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: _meta needs "+metaClientCapabilities+", an object (empty when the client supports no optional capability)")
	}
	st.caps = parseClientCaps(caps)
	if info := jsonrpc.Member(meta, metaClientInfo); info != nil {
		if !jsonrpc.IsObject(info) {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: _meta's "+metaClientInfo+" must be an object with name and version")
		}
		name, _ := jsonrpc.Unquote(jsonrpc.Member(info, "name"))
		version, _ := jsonrpc.Unquote(jsonrpc.Member(info, "version"))
		st.client = clientName(name, version)
	}
	if lvRaw := jsonrpc.Member(meta, metaLogLevel); lvRaw != nil {
		name, ok := jsonrpc.Unquote(lvRaw)
		if st.level = levelIndex(name); !ok || st.level < 0 {
			return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: _meta's "+metaLogLevel+" must be one of "+
				strconv.Quote(levels[0])+"…"+strconv.Quote(levels[len(levels)-1]))
		}
	}
	if tok := jsonrpc.Member(meta, "progressToken"); tok != nil && !jsonrpc.ValidID(tok) {
		return jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: progressToken must be a string or an integer")
	}
	return nil
}

// unsupportedVersion is the -32022 error for a protocol version requested
// in _meta that the server does not speak statelessly.
func unsupportedVersion(requested string) *jsonrpc.Error {
	data := []byte(`{"requested":`)
	data = jsonrpc.AppendString(data, requested)
	// Without a session only the stateless version is spoken: listing the
	// others would invite a retry that fails the same way.
	data = append(data, `,"supported":["`+StatelessVersion+`"]}`...)
	return &jsonrpc.Error{Code: CodeUnsupportedVersion, Message: "unsupported protocol version " + strconv.Quote(requested) +
		": this server speaks " + StatelessVersion + " without a session, and older versions after initialize", Data: data}
}

// resultTypeComplete is the member every stateless result carries.
var resultTypeComplete = []byte(`"resultType":"complete"`)

// readResultMembers are what a stateless resources/read result carries
// first: its resultType and caching hints. A resource's contents may
// change at any moment and its provider says nothing of how long they
// hold, so the hint is 0, always stale (a client that wants changes
// listens with resourceSubscriptions).
// What a resource holds may be the caller's own (a file of its
// workspace): shared caches must not serve it to others ("private").
var readResultMembers = []byte(`"resultType":"complete","ttlMs":0,"cacheScope":"private"`)

// markResult inserts resultType "complete" into the provider's result
// object that starts at b[at] ('{') (see insertMembers).
func markResult(b []byte, at int) []byte { return insertMembers(b, at, resultTypeComplete) }

// hostMembers are the members of a stateless result that the host sets:
// a provider's are dropped, so that no provider can make its answer an
// InputRequiredResult (skipping the capability checks, the round limit
// and the sealing) or set another caching hint.
var hostMembers = []string{"resultType", "ttlMs", "cacheScope"}

// insertMembers inserts members (one or more, comma-separated) at the
// start of the provider's result object that starts at b[at] ('{'), the
// end of b, after removing any of hostMembers it has.
func insertMembers(b []byte, at int, members []byte) []byte {
	obj := b[at:]
	if len(obj) < 2 || obj[0] != '{' {
		return b
	}
	for _, name := range hostMembers {
		if jsonrpc.Member(obj, name) != nil {
			clean := jsonrpc.AppendObjectWithout(nil, obj, hostMembers...)
			b = append(b[:at], clean...)
			obj = b[at:]
			break
		}
	}
	ins := members
	if !bytes.Equal(bytes.TrimSpace(obj[1:len(obj)-1]), nil) {
		ins = append(append([]byte(nil), ins...), ',')
	}
	b = append(b, ins...) // grow; then shift the object's body right
	copy(b[at+1+len(ins):], b[at+1:len(b)-len(ins)])
	copy(b[at+1:], ins)
	return b
}

// DefaultListTTL is the caching hint (ttlMs) of the stateless revision's
// lists and server/discover when Options.ListTTL is 0: 500 ms, the longest
// the catalog itself holds a change back before announcing it (its
// coalescing delay, catalog.DefaultMaxDelay). A plugin change reaches the
// lists 100-600 ms after it lands in the directory (10 ms of directory
// debounce, the plugin's start, 50-500 ms of coalescing), so a client that
// does not listen keeps a stale list at most about as long as the change
// took to appear. A client that listens (subscriptions/listen) is told at
// once.
const DefaultListTTL = 500 * time.Millisecond

// appendCacheable appends the members of a cacheable result (a list, or
// server/discover): resultType, ttlMs and cacheScope. What is the same for
// every client may be cached by shared caches too ("public"); what
// differs per caller must not be served by one to another ("private",
// perCaller).
func (srv *Server) appendCacheable(b []byte, perCaller bool) []byte {
	b = append(b, `"resultType":"complete","ttlMs":`...)
	b = append(b, srv.listTTL...)
	if perCaller {
		return append(b, `,"cacheScope":"private"`...)
	}
	return append(b, `,"cacheScope":"public"`...)
}

// listsPerCaller reports whether the lists differ per caller: whenever
// access rules are configured (Options.Access). Whether two callers' rules
// happen to show them the same items is not worth telling apart: a shared
// cache that served one caller's list to another would show it names its
// rules hide (issue 31), or hide tools it may call. Tool search alone
// keeps them the same for all (its found tools join a session's list,
// never a stateless request's).
func (srv *Server) listsPerCaller() bool { return srv.tuned().access != nil }

// discoverResult returns server/discover's result but for its cacheable
// members, as an object's inside: the versions spoken, the stateless
// revision's capabilities (with the tasks extension when the server runs
// tasks), the instructions and serverInfo (in _meta).
func discoverResult(version, instructions string, withTasks bool) []byte {
	sup, _ := json.Marshal(supportedVersions)
	b := []byte(`"supportedVersions":`)
	b = append(b, sup...)
	b = append(b, `,"capabilities":`...)
	caps := capabilitiesIn(statelessEra)
	if withTasks {
		ext := `"extensions":{"` + extTasks + `":{}}`
		if caps == "{}" {
			caps = "{" + ext + "}"
		} else {
			caps = "{" + ext + "," + caps[1:]
		}
	}
	b = append(b, caps...)
	if instructions != "" {
		b = append(b, `,"instructions":`...)
		b = jsonrpc.AppendString(b, instructions)
	}
	b = append(b, `,"_meta":{"`+metaServerInfo+`":{"name":"plughost","version":`...)
	b = jsonrpc.AppendString(b, version)
	return append(b, "}}"...)
}

// discover answers server/discover: what a session's initialize result
// would say, for the stateless revision, cacheable.
func (s *Session) discover(in incoming, _ noParams) func() {
	bp := jsonrpc.GetBuf()
	b := jsonrpc.AppendResultHead(*bp, in.msg.ID)
	b = append(b, '{')
	b = s.srv.appendCacheable(b, false) // the same for every caller
	b = append(b, ',')
	b = append(b, s.srv.discoverResult...)
	b = append(b, "}}"...)
	*bp = b
	s.respond(in.rp, b)
	jsonrpc.PutBuf(bp)
	return nil
}

// missingCapability returns the -32021 error of a stateless request that
// failed for a client capability it did not declare (err is a
// *tool.CapabilityRequired), or nil.
func missingCapability(err error) *jsonrpc.Error {
	var cr *tool.CapabilityRequired
	if !errors.As(err, &cr) || !jsonrpc.IsObject(cr.Capabilities) {
		return nil
	}
	data := append([]byte(`{"requiredCapabilities":`), cr.Capabilities...)
	return &jsonrpc.Error{Code: CodeMissingCapability, Message: "missing required client capability: " + cr.Message, Data: append(data, '}')}
}
