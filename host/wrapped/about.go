package wrapped

import (
	"cmp"
	"strings"

	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/pluginproto"
)

// about is what the plugin tells the host of the wrapped server as a
// whole, from its answer to initialize: serverInfo's title (else its
// name) and description (MCP 2025-11-25's Implementation.description).
// A server without a description often says what it is for in its
// instructions; their first paragraph stands in for it then, since the
// rest is usually how to use the tools (the order of calls, limits), which
// would only dilute the host's tool search. Both are bounded as the host
// bounds them (pluginproto.About.Bounded), so nothing longer crosses.
func about(res *initializeResult) pluginproto.About {
	var a pluginproto.About
	if info := res.ServerInfo; info != nil {
		a.Title = cmp.Or(strings.TrimSpace(info.Title), strings.TrimSpace(info.Name))
		a.Description = strings.TrimSpace(info.Description)
	}
	if a.Description == "" {
		a.Description = firstParagraph(res.Instructions)
	}
	return pluginclient.Bound(a)
}

// firstParagraph returns s's text up to its first blank line, trimmed.
func firstParagraph(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
	if i := strings.Index(s, "\n\n"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
