package pluginclient

import (
	"unicode/utf8"

	"github.com/plughost/plughost/pluginproto"
)

// The host keeps at most MaxTitle bytes of a plugin's title and
// MaxDescription of its description; longer ones are cut at a UTF-8
// boundary (Client.Describe, Bound).
const (
	MaxTitle       = 256
	MaxDescription = 4096
)

// Bound returns a cut to MaxTitle and MaxDescription bytes, each before
// the first rune that does not fit whole: what the host keeps of a
// plugin's About.
func Bound(a pluginproto.About) pluginproto.About {
	return pluginproto.About{Title: truncate(a.Title, MaxTitle), Description: truncate(a.Description, MaxDescription)}
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
