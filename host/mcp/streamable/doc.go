// Package streamable serves MCP sessions over HTTP: the Streamable HTTP
// transport at /mcp and, for 2024-11-05 clients, the deprecated HTTP+SSE
// transport at /sse. It knows framing, sessions ids, streams and their
// resumption, the HTTP guards and limits; the protocol is [mcp]'s, reached
// through [mcp.Session]'s exported methods only.
//
// Remote clients reach the same sessions over HTTP:
//
//	ln, _ := net.Listen("tcp", "127.0.0.1:8080")
//	err := streamable.Serve(ctx, srv, ln, &streamable.Options{Token: token})
//
// serves the Streamable HTTP transport at /mcp and, for 2024-11-05 clients,
// the deprecated HTTP+SSE transport at /sse (whose first event names the
// /message URL to POST to). A POSTed initialize opens a session whose id
// (Mcp-Session-Id, 256 random bits) every later request carries: none is
// 400, an unknown or ended one 404. A POSTed request is answered as
// application/json, or as text/event-stream when the call sends progress,
// logs or requests to the client (a provider asking for sampling,
// elicitation or roots) before its response; a POSTed notification or
// response (the client's answer to such a request) gets 202.
// GET opens the session's own stream, where list_changed and
// resources/updated arrive; DELETE
// ends the session. Every SSE event has an id "<stream>_<seq>" and is kept
// in a bounded per-session buffer, so a client that lost a stream GETs
// again with Last-Event-ID and receives the events it missed, then the
// rest of that stream live. In 2025-11-25 sessions every stream opens with
// a priming event (an id, empty data, retry: 1000) so that the client can
// resume even a stream that lost its connection before its first message;
// older clients get none, since some fail on empty data. A lost connection
// never cancels a call.
//
// Options.Endpoints serves more servers over the same listener, each
// at a path of its own (say, plughost's tool search mode at /mcp/search
// beside every tool at /mcp): the Streamable HTTP transport alone, with
// the sessions of each endpoint its own.
//
// Every request passes the guards first: on a loopback listener a Host
// that is not a loopback name gets 403 (DNS rebinding); an Origin that is
// neither the server's own nor in [Options.AllowedOrigins] gets 403; with
// a Token, a request without it gets 401 and WWW-Authenticate. With
// [Options.OAuth] the server is an OAuth 2.1 resource server: a request
// needs an access token the [oauth.Verifier] accepts (401 naming the
// Protected Resource Metadata, served without a token at
// /.well-known/oauth-protected-resource/mcp; 403 insufficient_scope; see
// auth.go), its caller reaches [mcp.Peer], and a session stays its
// caller's. A listener reachable beyond loopback with neither refuses to
// start ([Options.Check]). Bodies over the limit get 413; a session over its
// rate limit gets 429 and a JSON-RPC error saying when to retry; idle
// sessions end. When ctx ends, the server stops accepting, lets calls in
// flight (and [Options.Finish]'s work: the host's tasks) finish for up to
// ShutdownTimeout, then closes streams and sessions.
//
// Load balancers and Kubernetes probe GET /healthz (200 while the process
// serves) and GET /readyz (200 once [Options.Ready] says so; 503 before, and
// from the moment ctx ends, for [Options.DrainDelay] before the shutdown
// begins); neither needs the token.
package streamable
