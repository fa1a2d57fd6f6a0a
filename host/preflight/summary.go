package preflight

import (
	"fmt"
	"strings"

	"github.com/plughost/plughost/host/config"
)

// Summary says in one line what a configuration that passed sets up: the
// file read from path (as config.Locate found it, from), or none, then
// its blocks.
func (r *Report) Summary(path, from string) string {
	cfg := r.Config
	var b strings.Builder
	if path == "" {
		b.WriteString("no configuration file (every setting has its default)")
	} else {
		fmt.Fprintf(&b, "%s (%s)", path, from)
	}
	parts := []string{fmt.Sprintf("%d sandbox plugin block(s)", len(cfg.Sandbox.Plugins))}
	mode := cfg.Trust.Mode
	if mode == "" {
		mode = config.TrustOpen
	}
	parts = append(parts, "trust mode "+mode)
	if cfg.Tasks.Redis != nil {
		parts = append(parts, "tasks in redis at "+cfg.Tasks.Redis.Address+" (reached)")
	}
	if cfg.Audit != nil {
		parts = append(parts, "audit log "+cfg.Audit.File)
	}
	if cfg.Access != nil {
		parts = append(parts, "access rules compiled")
	}
	if cfg.Auth != nil {
		parts = append(parts, "OAuth for serve --http")
	}
	if cfg.Search != nil {
		parts = append(parts, "tool search mode")
	}
	return b.String() + ": " + strings.Join(parts, ", ")
}
