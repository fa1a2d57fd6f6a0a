package trust

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/plughost/plughost/pluginproto"
	"github.com/plughost/plughost/sandbox"
)

// Denied returns what of r, the permissions a plugin asks for, the
// sandbox policy p does not grant; empty when p grants all of it. A read
// is granted by a readable path (allow_read, allow_write, a dir block, or
// the system paths every plugin reads), a write by a writable one
// (allow_write, a dir block with write), a destination by allow_net "all"
// or its "host:port" in allow_net's list ("*" only by "all"), an
// environment variable by its name in env. A policy with the sandbox
// disabled grants everything. Asking is only shown: the plugin runs
// with p, whatever it asked.
func Denied(r pluginproto.Requests, p *sandbox.Policy) pluginproto.Requests {
	if p.Disabled {
		return pluginproto.Requests{}
	}
	var writable []string
	writable = append(writable, p.AllowWrite...)
	for _, d := range p.Dirs {
		if d.Write {
			writable = append(writable, d.Path)
		}
	}
	var out pluginproto.Requests
	for _, path := range r.Read {
		clean := filepath.Clean(path)
		if !p.Readable(clean) && !slices.ContainsFunc(sandbox.DefaultReadPaths, func(d string) bool { return under(clean, d) }) {
			out.Read = append(out.Read, path)
		}
	}
	for _, path := range r.Write {
		clean := filepath.Clean(path)
		if !slices.ContainsFunc(writable, func(d string) bool { return under(clean, filepath.Clean(d)) }) {
			out.Write = append(out.Write, path)
		}
	}
	for _, dest := range r.Net {
		granted := p.Net == sandbox.NetAll ||
			(p.Net == sandbox.NetList && slices.ContainsFunc(p.NetAllow, func(a string) bool { return strings.EqualFold(a, dest) }))
		if !granted {
			out.Net = append(out.Net, dest)
		}
	}
	for _, name := range r.Env {
		if !slices.Contains(p.Env, name) {
			out.Env = append(out.Env, name)
		}
	}
	return out
}

// under reports whether path is dir or beneath it (both clean).
func under(path, dir string) bool {
	return dir == "/" || path == dir || strings.HasPrefix(path, dir+"/")
}
