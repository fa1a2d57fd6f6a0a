package pluginproto

// ServeWithoutCalls serves p as a plugin of the contract's first revision
// does: Calls answers UNIMPLEMENTED, so the host falls back to CallTool.
func ServeWithoutCalls(p *Plugin) {
	serveNoCalls = true
	Serve(p)
}

// Multiplexed reports whether c makes its calls on a Calls stream that is
// open now.
func Multiplexed(c *Client) bool {
	return c.mux.usable()
}
