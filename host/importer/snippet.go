package importer

import (
	"fmt"
	"strconv"
	"strings"
)

// Snippet returns the sandbox block suggested for the servers
// imported: one plugin block each, with the runtime preset of its
// interpreter, allow_net = "all" for a launcher that downloads the package
// at every start, the host variables its env passes through, and, commented
// out for the operator to decide, the paths its arguments name and the env
// entries that could not be carried over. A remote server needs nothing:
// the host, not a sandboxed process, connects to it. The block parses with
// host/config (the tests check it).
func Snippet(servers []Server) string {
	var b strings.Builder
	b.WriteString("# Sandbox grants suggested by plughost import: merge them into the configuration file's sandbox block\n")
	b.WriteString("# (plughost serve --config FILE), and decide on the commented-out lines.\n")
	b.WriteString("sandbox {\n")
	for _, im := range servers {
		if im.Skipped != nil {
			continue
		}
		g := im.grants
		if g.remote && len(g.env) == 0 {
			fmt.Fprintf(&b, "  # plugin %q: a remote server: it gets the network; nothing else to grant\n", im.Name)
			continue
		}
		if g.remote {
			fmt.Fprintf(&b, "  plugin %q {\n    env = %s # the source of its bearer token, granted\n  }\n", im.Name, hclList(g.env))
			continue
		}
		if g.container {
			fmt.Fprintf(&b, "  # plugin %q: runs a container, which no grant makes work in the sandbox\n", im.Name)
			continue
		}
		if g.runtime == "" && g.netWhy == "" && len(g.read) == 0 && len(g.env) == 0 && len(g.envDecide) == 0 {
			fmt.Fprintf(&b, "  # plugin %q: nothing to suggest beyond the default policy\n", im.Name)
			continue
		}
		fmt.Fprintf(&b, "  plugin %q {\n", im.Name)
		if g.runtime != "" {
			fmt.Fprintf(&b, "    runtime = %s\n", hclQuote(g.runtime))
		}
		if g.netWhy != "" {
			fmt.Fprintf(&b, "    allow_net = \"all\" # %s; once it is installed, drop this\n", g.netWhy)
		}
		if len(g.read) > 0 {
			b.WriteString("    # decide: the paths its arguments name (allow_write instead to let it change them)\n")
			fmt.Fprintf(&b, "    # allow_read = %s\n", hclList(g.read))
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
	b.WriteString("}\n")
	return b.String()
}

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
