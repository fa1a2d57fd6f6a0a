// Package device is plughost's bridge to small devices (voice boxes,
// boards, appliances) that speak the framed TCP protocol of seeds 000 and
// 001: a device connects, registers the services it can perform, and each
// service becomes a tool that every MCP client of plughost can call, in the
// same tools/list as the plugins' tools.
//
// # Serving devices
//
//	srv, err := device.NewServer(&device.Options{
//		Publisher: cat,                 // a *catalog.Catalog
//		Tokens:    []device.Token{{Secret: "s3cret", IDs: []string{"kitchen"}}}, // AUTH with it, as kitchen
//		Sampler:   sampler,             // answers text tasks; nil: none can
//	})
//	ln, err := net.Listen("tcp", "127.0.0.1:9000")
//	err = srv.Serve(ctx, ln) // until ctx ends; then every device is let go
//
// # Frames
//
// Every message is a frame:
//
//	##START <type: 1 byte> <task id: 8 bytes> <sequence: 4 digits> <payload> ##END
//
// The [Decoder] reads frames incrementally from a stream (split over reads
// or several in one, bytes before "##START" skipped, "0000" or "[0000]");
// [AppendFrame] writes them, always bare. A payload ends at the first
// "##END": there is no escaping, so plughost writes "##END" inside JSON as
// "#\u0023END" and inside text with a zero-width space.
//
// # A connection
//
// When Options.Tokens is set, a device must send AUTH
// ("TOKEN##voiceid:…##lang:…##format:pcm") within Options.AuthTimeout, in
// a frame of at most Options.MaxFrameBeforeAuth; until then only AUTH and
// STATUS are served, and a wrong token, or a voice id the token does not
// name (Token.IDs), closes the connection. Without tokens a device has as
// long for its first AUTH, register or TEXT. The connections still
// waiting are capped per address and in all, a newcomer evicting the
// oldest (admission.go). STATUS "##PING" is answered "##INFO:PONG"; a
// connection without frames for Options.IdleTimeout is closed, and so is
// one whose frame takes longer than Options.FrameTimeout. Problems are reported
// as STATUS "##ERROR:…" frames: a frame over Options.MaxFrame (then the
// connection closes), an unknown type, a malformed header, a bad register.
//
// A type-6 "register" publishes the device as a tool.Provider named
// "device-" plus its sanitized AUTH voice id (or "device-<n>" without one;
// the prefix keeps a device from taking a plugin's name: see
// naming.ForDevice). Registering again
// replaces the device's tools; disconnecting removes them. Each MCP
// tools/call of such a tool, its arguments checked by the catalog against
// the service's parameters schema, is sent as a "call" frame with a fresh
// call_id; the device's "result" becomes the MCP result, no result within
// Options.CallTimeout an error wrapping [ErrCallTimeout] and
// tool.ErrTimedOut, and a disconnect an error wrapping [ErrDisconnected]
// and tool.ErrGone (tool.Outcome turns both into isError results).
//
// # Text tasks
//
// TEXT frames of one task, ended by END, are a user's words. plughost asks
// the model of a connected MCP client through the [Sampler]
// (sampling/createMessage), offering the device's services as tools when
// the client declared sampling.tools, runs the tools the model asks for
// and feeds their results back until it answers; the answer goes back as
// TEXT frames of the task, then END. AUDIO and SPEAK are not supported.
//
// README.md in this directory documents the protocol for device makers.
package device
