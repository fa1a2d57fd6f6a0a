package pluginproto

import "unicode/utf8"

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

// The host keeps at most MaxTitle bytes of a plugin's title and
// MaxDescription of its description; longer ones are cut at a UTF-8
// boundary (Client.Describe, About.Bounded).
const (
	MaxTitle       = 256
	MaxDescription = 4096
)

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

// Bounded returns a cut to MaxTitle and MaxDescription bytes, each before
// the first rune that does not fit whole.
func (a About) Bounded() About {
	return About{Title: truncate(a.Title, MaxTitle), Description: truncate(a.Description, MaxDescription)}
}

// truncate returns at most n bytes of s, cut before the first rune that
// does not fit whole.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
