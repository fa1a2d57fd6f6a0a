package pluginproto

// About is what a plugin is, as a whole: what an MCP server's serverInfo
// says of it in its title and description. The host shows it to people
// and scores it in its tool search with all the plugin's tools, so a
// query about what the plugin is for ("Korean stock market", "Word
// document") finds its tools even when none of them repeats those words.
type About struct {
	// Title is a short display name: "Yahoo Finance", "Clock".
	Title string
	// Description says what the plugin's tools are for, in a sentence or a
	// paragraph: the words people use when they need them.
	Description string
}

// SetAbout sets what Describe tells the host of the plugin as a whole.
// Call it before Serve: the host asks once, when it starts the plugin.
func (p *Plugin) SetAbout(a About) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.about = a
}

// About returns what SetAbout set.
func (p *Plugin) About() About {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.about
}
