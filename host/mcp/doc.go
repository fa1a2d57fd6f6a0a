// Package mcp is plughost's side of the Model Context Protocol: the session
// lifecycle, version negotiation, the method table and the methods' handlers.
// It knows nothing of plugins: it serves a [Catalog], which lists tools (as
// MCP Tool objects, already JSON) and runs them. It knows nothing of bytes
// on the wire either: [wire] reads, classifies and writes JSON-RPC, and the
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
// with the capabilities tools (listChanged) and logging. Before that only
// ping is served; other requests get -32600 "session not initialized". The
// server is lenient about notifications/initialized: once it has answered
// initialize it serves requests, whether or not the notification came.
//
// Then tools/list pages through the catalog (the cursor is the catalog's),
// and tools/call runs a tool. The server checks only the shape of the
// params (name a string, arguments absent or an object); the catalog
// validates arguments and answers a violation with an isError result. An
// unknown tool is error -32602; any other failure of the catalog becomes an
// isError result naming the cause. Results pass through as bytes.
//
// Calls run concurrently, so responses may come out of order; a slow tool
// blocks nothing else. At most [Options.MaxInFlight] calls (64) run at once
// per session; more wait their turn. notifications/cancelled ends a call's
// context, and the call then gets no response. With a progressToken in the
// request's _meta, the tool's progress reaches the client as
// notifications/progress (values that do not increase are dropped). The
// tool's logs become notifications/message when at or above the session's
// level: info until the client sends logging/setLevel. When the catalog's
// tool list changes, the client gets notifications/tools/list_changed.
//
// JSON-RPC batches are accepted only in sessions that negotiated
// 2025-03-26, the one version that has them. server/discover (the stateless
// 2026 protocol's probe) is answered -32601 so such clients fall back to
// initialize.
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
// the server capability it belongs to (the initialize result's
// capabilities are derived from the table), how its params decode, its
// handler, and whether it is a long call (run on a worker, cancellable,
// with progress and logs). A method not in the table is answered -32601;
// so is one of the stateless 2026-07-28 revision (server/discover), with a
// hint to initialize, and one missing from the negotiated version.
//
// # Transports
//
// A [Session] holds the protocol state and handles one incoming message at
// a time with [Session.Handle], writing the response and the notifications
// related to it (progress, logs) to that message's [Sink], and
// notifications unrelated to any request (list_changed) and the server's
// requests to the client to the session-wide Sink of its [SessionConn].
// Its state is split by concern: lifecycle (state, negotiated version,
// client capabilities), logging level, calls in flight, requests pending at
// the client, list_changed notifier. A transport meets it only through
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
//  2. Check and Decode (wire), same goroutine: JSON and UTF-8 validity
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
//     checked against the tool's inputSchema; the plugin's provider
//     (host/manager) applies its call time limit and sends the call on the
//     plugin's CallsV2 stream (pluginproto). gRPC's writer goroutine puts
//     it on the socket: the first hand-off. The read loop goes back to
//     step 1.
//  6. The plugin's stream reader (pluginproto's mux) receives the call's
//     progress, logs and answer, handed to it by gRPC's transport reader:
//     the second hand-off. On that goroutine, progress is written at once
//     if it increases, logs if at or above the session's level.
//  7. The answer (call.go), on the stream reader: a result is spliced
//     unparsed (compacted only if it holds a line break); a failure is
//     mapped by tool.Outcome, the one place that decides: an unknown tool
//     is -32602, every other failure (bad arguments, gone, timed out,
//     refused, too large) an isError result naming it; a cancelled call
//     gets nothing. The slot is released.
//  8. Write (stdio.Transport.Write), same goroutine: responses that become
//     ready while another is being written go out together in one write
//     syscall (the coalescer), without a writer goroutine.
//
// Two goroutine hand-offs per call in the host, both inside gRPC. When all
// slots are taken, or for a call inside a batch, or for a provider that
// cannot start calls (a device), step 5 runs on a worker goroutine that
// waits for a slot and calls Catalog.CallTool, and the answer comes back
// to that worker; with 4×MaxInFlight calls pending, the read loop stops
// reading.
//
// Over Streamable HTTP (host/mcp/streamable), steps 2–8 run on the POST's
// handler goroutine with Catalog.CallTool (no worker): it waits for the
// answer, which the stream reader hands it (three hand-offs), and writes
// it as the HTTP response. The answer of each POST is its own.
package mcp
