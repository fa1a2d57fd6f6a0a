// Package mcp is plughost's side of the Model Context Protocol: JSON-RPC 2.0,
// the session lifecycle, version negotiation and the tools methods, served
// over stdio. It knows nothing of plugins: it serves a [Catalog], which
// lists tools (as MCP Tool objects, already JSON) and runs them.
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
// # Transports
//
// A [Session] holds the protocol state and handles one incoming message at
// a time with [Session.Handle], writing the response and the notifications
// related to it (progress, logs) to that message's [Sink], and
// notifications unrelated to any request (list_changed) to the session-wide
// Sink. [Server.Serve] runs a session over any [Transport] (Read plus a
// Sink); ServeStdio is Serve over newline-delimited stdio, where a line
// longer than [Options.MaxMessageSize] is skipped without being buffered
// and answered with -32600.
//
// # HTTP
//
// Remote clients reach the same sessions over HTTP:
//
//	ln, _ := net.Listen("tcp", "127.0.0.1:8080")
//	err := srv.ServeStreamableHTTP(ctx, ln, &mcp.HTTPOptions{Token: token})
//
// serves the Streamable HTTP transport at /mcp and, for 2024-11-05 clients,
// the deprecated HTTP+SSE transport at /sse (whose first event names the
// /message URL to POST to). A POSTed initialize opens a session whose id
// (Mcp-Session-Id, 256 random bits) every later request carries: none is
// 400, an unknown or ended one 404. A POSTed request is answered as
// application/json, or as text/event-stream when the call sends progress
// or logs before its response; a POSTed notification or response gets 202.
// GET opens the session's own stream, where list_changed arrives; DELETE
// ends the session. Every SSE event has an id "<stream>_<seq>" and is kept
// in a bounded per-session buffer, so a client that lost a stream GETs
// again with Last-Event-ID and receives the events it missed, then the
// rest of that stream live. In 2025-11-25 sessions every stream opens with
// a priming event (an id, empty data, retry: 1000) so that the client can
// resume even a stream that lost its connection before its first message;
// older clients get none, since some fail on empty data. A lost connection
// never cancels a call.
//
// Every request passes the guards first: on a loopback listener a Host
// that is not a loopback name gets 403 (DNS rebinding); an Origin that is
// neither the server's own nor in [HTTPOptions.AllowedOrigins] gets 403; with
// a Token, a request without it gets 401 and WWW-Authenticate. A listener
// reachable beyond loopback without a Token refuses to start
// ([HTTPOptions.Check]). Bodies over the limit get 413; a session over its
// rate limit gets 429 and a JSON-RPC error saying when to retry; idle
// sessions end. When ctx ends, the server stops accepting, lets calls in
// flight finish for up to ShutdownTimeout, then closes streams and sessions.
package mcp
