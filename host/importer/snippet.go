package importer

import (
	"fmt"
	"strconv"
	"strings"
)

// Block is one server's part of the sandbox block: its plugin block, or a
// comment when it needs none.
type Block struct {
	Name   string // the provider name
	Text   string // lines of HCL, indented for the inside of a sandbox block
	Plugin bool   // Text is a plugin block (not only a comment)
}

// Blocks returns the plugin blocks of the servers imported (skipped ones
// left out): each with the runtime preset of its interpreter, allow_net =
// "all" for a server known to call outside services (a commented-out line
// saying how to add it otherwise), what its paths and secret files need
// (see paths and headers) and the host variables its env passes through;
// commented out, the env entries that could not be carried over. A remote
// server needs a block only for the sources of its secrets: the host, not
// a sandboxed process, connects to it.
func Blocks(servers []Server) []Block {
	var out []Block
	for _, im := range servers {
		if im.Skipped != nil {
			continue
		}
		var b strings.Builder
		g := im.grants
		switch {
		case g.remote && len(g.env) == 0 && len(g.read) == 0:
			fmt.Fprintf(&b, "  # plugin %q: a remote server: it gets the network; nothing else to grant\n", im.Name)
		case g.container:
			fmt.Fprintf(&b, "  # plugin %q: runs a container, which no grant makes work in the sandbox\n", im.Name)
		default:
			fmt.Fprintf(&b, "  plugin %q {\n", im.Name)
			if g.runtime != "" {
				fmt.Fprintf(&b, "    runtime = %s\n", hclQuote(g.runtime))
			}
			switch {
			case g.net != "":
				fmt.Fprintf(&b, "    allow_net = %s # %s\n", hclQuote(g.net), g.netWhy)
			case !g.remote:
				b.WriteString("    # allow_net = [\"HOST:443\"] # none: add it if it calls an outside API\n")
			}
			if len(g.read) > 0 {
				fmt.Fprintf(&b, "    allow_read = %s # what it names: files, system paths, secret files\n", hclList(g.read))
			}
			if len(g.write) > 0 {
				fmt.Fprintf(&b, "    allow_write = %s # the directories it names: move to allow_read those it only reads\n", hclList(g.write))
			}
			for _, d := range g.writeDecide {
				fmt.Fprintf(&b, "    # allow_write = %s # decide: not granted: %s; grant a narrower directory\n", hclList([]string{d.path}), d.why)
			}
			if len(g.env) > 0 {
				fmt.Fprintf(&b, "    env = %s # passed through from plughost's own environment\n", hclList(g.env))
			}
			for _, e := range g.envDecide {
				name, why, _ := strings.Cut(e, ": ")
				if len(g.env) > 0 {
					fmt.Fprintf(&b, "    # decide: add %q to env once plughost's environment has it (%s)\n", name, why)
				} else {
					fmt.Fprintf(&b, "    # env = [%s] # decide: once plughost's environment has it (%s)\n", hclQuote(name), why)
				}
			}
			b.WriteString("  }\n")
		}
		out = append(out, Block{Name: im.Name, Text: b.String(), Plugin: strings.HasPrefix(b.String(), "  plugin")})
	}
	return out
}

// Snippet returns the sandbox block of the servers imported (Blocks), as a
// configuration file's content of its own; it parses with host/config
// (the tests check it).
func Snippet(servers []Server) string {
	var b strings.Builder
	b.WriteString(snippetHeader)
	b.WriteString("sandbox {\n")
	for _, bl := range Blocks(servers) {
		b.WriteString(bl.Text)
	}
	b.WriteString("}\n")
	return b.String()
}

// snippetHeader opens a sandbox block import writes whole.
const snippetHeader = "# Sandbox grants of the servers plughost import brought over (plughost serve --config FILE);\n" +
	"# each grant is said, with how to narrow it, in what import printed.\n"

// hclQuote quotes s as an HCL string that is not a template: "${" and
// "%{" are escaped.
func hclQuote(s string) string {
	q := strconv.Quote(s)
	q = strings.ReplaceAll(q, "${", "$${")
	return strings.ReplaceAll(q, "%{", "%%{")
}

func hclList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = hclQuote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
