// Package mcp is plughost's side of the Model Context Protocol: the session
// lifecycle, version negotiation, the method table and the methods' handlers.
// It knows nothing of plugins: it serves a [Catalog], which lists tools,
// resources, resource templates and prompts (as MCP objects, already JSON),
// runs tools, reads resources, renders prompts, completes arguments and
// reports resource updates. It knows nothing of bytes on the wire either:
// [jsonrpc] (internal/jsonrpc) reads, classifies and writes JSON-RPC, and the
// transports frame it — [stdio] (newline-delimited, for desktop hosts) and
// host/mcp/streamable (Streamable HTTP and the legacy HTTP+SSE endpoint).
//
// # Serving
//
// A desktop LLM host starts plughost and speaks MCP on its stdin and stdout:
//
//	srv := mcp.NewServer(catalog, &mcp.Options{Version: "1.2.0", Logger: logger})
//	err := srv.ServeStdio(ctx, os.Stdin, os.Stdout)
//
// ServeStdio returns when stdin ends, after cancelling the calls still
// running. Only protocol goes to stdout; the server's own logs go to the
// hclog.Logger of the options (nil discards them).
//
// # What a session does
//
// The client first sends initialize. The server answers at once, with the
// protocol version the client asked for if it speaks it (2024-11-05,
// 2025-03-26, 2025-06-18, 2025-11-25) and the latest one otherwise, and
// with its capabilities: tools {listChanged}, resources {subscribe,
// listChanged}, prompts {listChanged}, completions (from 2025-03-26, the
// first version with the capability; completion/complete is served in
// 2024-11-05 too) and logging. Before that only ping is served; other
// requests get -32600 "session not initialized". The server is lenient
// about notifications/initialized: once it has answered initialize it
// serves requests, whether or not the notification came.
//
// Plugins load after initialize is answered, so what they will offer is
// unknown then. The server therefore always declares resources, prompts and
// completions: their lists are empty until a provider offers something,
// and notifications/resources/list_changed (or prompts/list_changed) tells
// the client when one does. A client thus never has to reconnect to learn
// of a capability that a plugin loaded later brought.
//
// Then tools/list pages through the catalog (the cursor is the catalog's),
// and tools/call runs a tool. The server checks only the shape of the
// params (name a string, arguments absent or an object); the catalog
// validates arguments and answers a violation with an isError result. An
// unknown tool is error -32602; any other failure of the catalog becomes an
// isError result naming the cause. Results pass through as bytes.
//
// resources/list, resources/templates/list and prompts/list page the same
// way. resources/read, prompts/get and completion/complete go to providers
// and run as long calls like tools/call (a worker, cancellable; no progress,
// since providers report none for them). Their params are checked strictly
// (uri a non-empty string; name a string and arguments an object of
// strings; ref and argument as the schema has them) and their failures are
// JSON-RPC errors: an unknown resource is -32002 ("resource not found",
// data {"uri": …}; the stateless 2026-07-28 revision makes it -32602, SEP-2164),
// an unknown prompt, a completion's unknown reference or argument, and a
// prompt's bad arguments -32602, anything else -32603 naming it.
//
// resources/subscribe holds the catalog's subscription until
// resources/unsubscribe or the session's end releases it; subscribing
// again to a URI is answered as the first time and holds nothing more
// (should the first be cancelled before the catalog answered, the next
// one asks the catalog itself), unsubscribing from a URI not subscribed is
// answered success. A session holds at most [Options.MaxSubscriptions]
// (1000) URIs; one more is -32602 naming the limit, and so is the
// catalog's refusal at a limit of its own (an error wrapping
// tool.ErrRefused). notifications/resources/updated goes only to the
// sessions subscribed to the URI.
//
// Calls run concurrently, so responses may come out of order; a slow tool
// blocks nothing else. At most [Options.MaxInFlight] calls (64; reads,
// prompts/get and the other long requests count too) run at once per
// session; more wait their turn. A call waiting for its client's answer to
// a provider's request (below) does not run: at most 4×MaxInFlight such
// calls wait at once per session. notifications/cancelled ends a call's
// context, and the call then gets no response. With a progressToken in the
// request's _meta, the tool's progress reaches the client as
// notifications/progress (values that do not increase are dropped). The
// tool's logs become notifications/message when at or above the session's
// level: info until the client sends logging/setLevel. When the catalog's
// lists change, an initialized session gets one list_changed per kind
// (tools, resources, prompts) per burst; a burst while one is due
// coalesces into it, and the catalog's callback never blocks (the
// session's notifier goroutine writes).
//
// JSON-RPC batches are accepted only in sessions that negotiated
// 2025-03-26, the one version that has them.
//
// # The stateless revision (2026-07-28)
//
// MCP 2026-07-28 has no initialize and no session: every request carries
// in its _meta the protocol version it speaks
// (io.modelcontextprotocol/protocolVersion) and what its client can do
// (io.modelcontextprotocol/clientCapabilities; clientInfo optional). The
// era is decided per request: one whose _meta names a protocol version
// (or whose method exists only in that revision: server/discover,
// subscriptions/listen) is served on what it says, whatever came before it
// on the connection; any other belongs to the session and needs
// initialize. So one stdio connection or one HTTP endpoint serves both
// eras, and a 2026-07-28 request may reach any replica.
//
// A stateless request's _meta is checked first: absent, without a
// protocol version or capabilities (an object), or with a clientInfo that
// is not an object or an unknown logLevel, it is -32602; a version other
// than 2026-07-28 is -32022 with data {requested, supported} (supported:
// the stateless version; the message says older ones need initialize). What the revision removed (initialize,
// ping, logging/setLevel, resources/subscribe and unsubscribe) is -32601.
// server/discover answers what initialize would: the versions, the
// capabilities, the instructions, serverInfo in _meta. Every result carries
// resultType ("complete", or "input_required"); the lists and
// server/discover carry the caching hints ttlMs (Options.ListTTL, 500 ms
// by default) and cacheScope "public" when the lists are the same for
// every caller, "private" when access rules make them differ (server/discover
// is always "public"), and resources/read ttlMs 0 (a provider says nothing of how long
// contents hold) and cacheScope "private" (contents may be the caller's).
// What a provider's result says of resultType, ttlMs or cacheScope is
// dropped: those are the host's to set. Lists are in name order, the same on every replica of a
// plugin directory, and so are their cursors. Log notifications go out
// only when _meta names a logLevel, at or above it; progress as a session
// has it. A resource not found is -32602 with data {uri} (SEP-2164). A
// provider's *tool.CapabilityRequired (a call that needs a client
// capability the request did not declare) is -32021 with data
// {requiredCapabilities}; a session gets an isError result naming it.
//
// A provider's need for the client's input is answered as an
// InputRequiredResult (inputstate.go): its requests (those the client
// declared the capability for; the others are answered to the provider at
// once as a session does) and a requestState, sealed with
// Options.StateSealer (AES-256-GCM, a key every replica shares): the
// provider that asked, its own state, the rounds so far, bound to the
// method, the tool, prompt or resource and the arguments (a retry with
// others is refused: a confirmation given for one request must not serve
// another), valid for Options.StateTTL. The
// retry carries inputResponses (an object of objects; anything else is
// -32602) and that requestState; one that does not open (altered, sealed
// for another request or with another key, expired, over
// sealed.MaxSealed) is -32602 naming why, the provider not run. Answers
// sent without a requestState go to the provider that serves the request
// with no state (it asks again for what it misses). At most 10 rounds.
//
// subscriptions/listen (listen.go) is the revision's one stream of
// notifications unrelated to a request: acknowledged at once
// (notifications/subscriptions/acknowledged, with what is honoured: every
// list kind asked, the URIs a provider offers), then the list_changed and
// resources/updated it asked for, each with _meta's subscriptionId (the
// listen request's id). It ends when the client cancels it, or with its
// result when the server shuts down gracefully over HTTP
// (Server.EndListeners; a stdio connection simply closes). At most
// Options.MaxListeners are open server-wide, each naming at most
// MaxSubscriptions URIs (counted as sent) of MaxListenBytes together,
// all of them within ListenBudget.
//
// Transports: stdio serves both eras on one connection. Streamable HTTP
// (host/mcp/streamable) serves a POST without Mcp-Session-Id statelessly
// when its MCP-Protocol-Version header names a version no session speaks,
// or its body's _meta names one ([IsStateless], [InspectStateless]): on a session of its own
// ([Server.OpenStateless]) that lives for the POST. HTTP+SSE serves
// sessions only ([Session.RefuseStateless]).
//
// # A provider's requests to the client
//
// A provider may need the client's input before it answers a tools/call,
// resources/read or prompts/get: it returns a *tool.InputRequired (its
// requests by key, each sampling/createMessage, elicitation/create or
// roots/list, and an opaque state). The session asks its own client each
// request, in key order (shorter keys first, keys of one length as
// strings, so that numeric keys go in numeric order: "2" before "10"), as
// a server request ("plughost-<n>") on the call's own stream (on
// Streamable HTTP the POST's SSE stream, where the call's progress goes,
// so a client with no GET stream open gets them), then runs the same
// request again with tool.Input (the results by key, the errors by key,
// the state, and the provider that asked, so that the catalog can refuse
// a retry routed to another), as long as the provider asks, at most 10
// rounds. Only what the client declared in initialize is asked: sampling
// (sampling.tools when the params have tools or toolChoice, from
// 2025-11-25), elicitation (from 2025-06-18; an empty object means form
// mode, URL mode needs elicitation.url and 2025-11-25), roots. A request
// the client did not declare is not sent: its key gets an InputError
// tool.CodeNotSupported naming the capability, and the provider answers as
// it sees fit. A client's JSON-RPC error becomes the key's InputError. A
// malformed request (an unknown method, params not an object) is the
// provider's fault: tools/call answers an isError result naming it,
// resources/read and prompts/get -32603. Each request waits at most
// [Options.InputTimeout] (10 minutes), then the call fails as timed out;
// a cancelled call cancels its request (notifications/cancelled, on the
// call's stream and, when that differs, on the session's). A call waiting
// for the client holds no MaxInFlight slot and no worker. A session has
// at most 4×MaxInFlight calls in input rounds (from the provider's first
// InputRequired to the call's answer), as many as the requests a
// Streamable HTTP session may have pending; a call whose provider asks
// while that many are in input rounds is answered at once, its provider
// not run again: tools/call with an isError result naming the limit,
// resources/read and prompts/get with -32602 naming it. Every request
// carries the client's declared capabilities (ClientCapabilities)
// so that providers can decide before asking. A stateless request's
// InputRequired goes back to the client instead, as an InputRequiredResult
// (see the stateless revision above).
//
// # Asking the client
//
// The server can ask a client's model for a message, as the device bridge
// does to answer a device's text task:
//
//	res, err := srv.CreateMessage(ctx, params) // sampling/createMessage
//
// The client asked is the one of the most recently initialized session
// still open (notifications/initialized received) whose client declared
// capabilities.sampling and can be reached: over stdio the request goes
// out on stdout and the answer comes in on stdin; over Streamable HTTP it
// goes on the session's GET stream (a session without one is skipped) and
// the answer is POSTed (202); on HTTP+SSE both travel its stream. Request
// ids are the server's own ("plughost-<n>", per session); the response is
// routed back by id, and one answering no request of ours is ignored. A
// JSON-RPC error from the client is a [*ClientError]; no client able to
// sample, an error wrapping [ErrNoSamplingClient]; ctx ending sends
// notifications/cancelled. Tools in sampling go only to a client that
// declared sampling.tools in a 2025-11-25 session ([Server.SamplingTools]);
// for any other, CreateMessage removes tools and toolChoice from params.
//
// # Methods
//
// Every method the server knows is one entry of a table (methods.go): the
// protocol revisions it exists in, whether it is served before initialize,
// the server capability it belongs to and the revisions that declare it
// (the initialize result's capabilities are derived from the table, per
// version), its params type, its handler, and whether it is a long call
// (run on a worker, cancellable, with progress and logs for tools). The
// table decodes and checks a request's params once, into the type its
// entry names (params.go), and hands the typed value to the handler,
// which hangs on its feature's handler type holding only the parts of the
// session it uses (handlers.go): lists (tools.go), catalog requests
// (ops.go), subscriptions (resources.go), listen (listen.go), tasks
// (tasks.go).
// resources/subscribe and resources/unsubscribe exist up to 2025-11-25
// only: 2026-07-28 replaced them with subscriptions/listen. A method not
// in the table is answered -32601, and so is one missing from the
// request's revision (the session's negotiated version, or 2026-07-28 for
// a stateless request).
//
// # Tool search mode
//
// With Options.ToolSearch the server wraps its catalog (search.go):
// tools/list offers the pinned tools and the host's search_tools and
// call_tool, and a call of either is served by the wrapper while every
// other call passes through; call_tool rewrites its call to the named
// tool and hands it on, so it takes the path of any call. With AddFound
// each session keeps the tools its searches found (found.go, bounded,
// least recently found out first), lists them after the pins and says
// list_changed when they change; stateless requests add nothing.
//
// # Transports
//
// A [Session] holds the protocol state and handles one incoming message at
// a time with [Session.Handle], writing the response and what relates to
// it (progress, logs, a provider's requests to the client) to that
// message's [Sink], and notifications unrelated to any request
// (list_changed, resources/updated) and [Server.CreateMessage]'s requests
// to the session-wide Sink of its [SessionConn]. Its state is split by
// concern: lifecycle (state, negotiated version, client capabilities),
// logging level, calls in flight, requests pending at the client, the
// notifier, resource subscriptions, found tools (tool search mode). A transport meets it only through
// Handle, [Session.Close], [Session.Drain], [Session.Initialized] and
// [Session.Version]. [Server.Serve] runs a session over any [Transport]
// (Read plus a Sink): ServeStdio is Serve over [stdio], where a line longer
// than [Options.MaxMessageSize] is skipped without being buffered and
// answered with -32600; host/mcp/streamable calls Handle for each POST.
//
// # The path of a request
//
// A tools/call over stdio, from bytes in to bytes out; each step names the
// goroutine that runs it and the policy applied there.
//
//  1. Read (stdio.Transport.Read), on the session's read loop
//     (Server.ServeStdio): one read syscall may bring many lines; a line
//     over the size limit is skipped and answered -32600.
//  2. Check and Decode (jsonrpc), same goroutine: JSON and UTF-8 validity
//     (-32700), the JSON-RPC shape (-32600), classification as request,
//     notification or response. Nothing is copied.
//  3. The method table (lookup, methods.go), same goroutine: unknown or
//     out-of-era methods (-32601), the session's state (-32600 before
//     initialize), the entry's params decoding (-32602). Short methods are
//     answered here, in arrival order.
//  4. A long call is registered in the session's call table under its id
//     (a duplicate id is -32600; notifications/cancelled finds it there),
//     its id, arguments and progress token copied once, and takes one of
//     MaxInFlight slots.
//  5. Catalog.StartCall (host/catalog), same goroutine: the exposed name
//     is routed to its provider, absent arguments become {} and are
//     checked against the tool's inputSchema; when one of the
//     operator's hooks (host/hooks) selects the call, the hooks are asked
//     and the call started on a goroutine of the catalog's, so that the
//     read loop never waits for a hook (an after_call hook likewise runs
//     off the stream reader of step 6); the plugin's provider
//     (host/manager) applies its call time limit and sends the call on the
//     plugin's CallsV2 stream (pluginproto). gRPC's writer goroutine puts
//     it on the socket: the first hand-off. The read loop goes back to
//     step 1.
//  6. The plugin's stream reader (pluginproto's mux) receives the call's
//     progress, logs and answer, handed to it by gRPC's transport reader:
//     the second hand-off. On that goroutine, progress is written at once
//     if it increases, logs if at or above the session's level.
//  7. The answer (call.go), on the stream reader: a result is spliced
//     unparsed (compacted only if it holds a line break) once the catalog
//     has passed it (only the result of a tool with an outputSchema is
//     parsed there, and checked against it: one that breaks it becomes an
//     isError result naming the violations); a failure is
//     mapped by tool.Outcome, the one place that decides: an unknown tool
//     is -32602, every other failure (bad arguments, gone, timed out,
//     refused, too large) an isError result naming it; a cancelled call
//     gets nothing. The slot is released.
//  8. Write (stdio.Transport.Write), same goroutine: responses that become
//     ready while another is being written go out together in one write
//     syscall (the coalescer), without a writer goroutine.
//
// Two goroutine hand-offs per call in the host, both inside gRPC. When all
// slots are taken, or for a call inside a batch, step 5 runs on a worker
// goroutine that waits for a slot, starts the call (Catalog.StartCall)
// and waits for it (tool.Await): the answer comes back to that worker;
// with 4×MaxInFlight calls pending on workers (calls waiting for the
// client hold none), the read loop stops reading.
//
// resources/read, prompts/get and completion/complete take the worker's
// path, through steps 1–4 then Catalog.ReadResource, GetPrompt or Complete
// on the worker; their answer is spliced like a tool's result or mapped to
// a JSON-RPC error (ops.go). resources/subscribe and resources/unsubscribe
// change the session's subscription set at step 3, in arrival order, and
// call the catalog (subscribe, release) on the worker.
//
// The input rounds: at step 7 an answer that is a *tool.InputRequired (the
// check is on the error path only) is not answered. The call is handed to
// a goroutine of its own, whether it was started inline (the stream reader
// must not wait for the client) or runs on a worker (which is free again
// at once: the client's answers come through the read loop, which must
// never wait for a worker that waits for them), and counts among the
// session's calls in input rounds until it is answered. The call gives its
// MaxInFlight slot back while it waits (its provider does nothing
// meanwhile) and takes one again for the retry. That goroutine writes
// each request to the call's reply sink (step 8's writer, or the POST's
// stream), registered by id among the requests pending at the client, and
// waits; the client's response arrives like any message (steps 1–2, on
// the read loop or a POST) and is routed by id to it. With every answer in
// hand it calls the catalog again (StartCall, ReadResource or GetPrompt,
// with Input), and the next answer goes through step 7 again.
//
// In a 2025-03-26 batch, the batch's worker waits until each of its calls
// has returned or been handed off, and the last call answered writes the
// batch's response.
//
// Over Streamable HTTP (host/mcp/streamable), steps 2–8 run on the POST's
// handler goroutine, which starts the call and waits for the answer,
// which the stream reader hands it (three hand-offs), and writes
// it as the HTTP response; a call in input rounds stays on that goroutine,
// the client's answers arriving in other POSTs. The answer of each POST is
// its own.
package mcp
