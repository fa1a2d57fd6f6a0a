// Package config reads plughost's configuration file (plughost serve
// --config FILE, else $PLUGHOST_CONFIG, else
// ~/.config/plughost/plughost.hcl when it exists: see Locate), written in
// HCL. Each area of the host has one top-level
// block: sandbox, plugins, stateless, tasks, search, audit, limits, auth,
// access and trust (see Trust). The
// sandbox block:
//
//	# The default policy of every plugin, then per-plugin overrides.
//	sandbox {
//	  strict      = false              # true: refuse to start a plugin that would miss a layer
//	  allow_read  = ["/usr/share/dict"] # paths plugins may read
//	  allow_write = []                 # paths plugins may read and write
//	  allow_net   = "none"             # "none", "all", or ["api.example.com:443", ...]
//	  memory      = "512MiB"           # bytes, or with a unit: KiB, MiB, GiB
//	  pids        = 64                 # processes and threads
//	  files       = 256                # open files
//	  cpu         = 1.5                # cores (0: no cap)
//	  env         = ["LANG"]           # host environment variables passed through
//	  timeout     = "30s"              # per tool call (default 5m)
//	  allow_jit   = false              # true: may map memory writable and executable (a JIT);
//	                                   # unset: only node, deno and bun (sandbox.Policy.AllowJIT)
//	  tmp_size    = "64MiB"            # its tmp: a tmpfs of this size (a write past it: ENOSPC)
//	  data_size   = "1GiB"             # its data directory: walked, killed over it
//	  allow_exec_written = false       # true: may execute what it writes in tmp and data
//
//	  plugin "notes" {
//	    dir "notes" {                  # a directory the plugin asks for by name
//	      path  = "/srv/notes"         # the operator decides which
//	      write = true                 # default false: read-only
//	    }
//	  }
//	  plugin "fetch" {
//	    allow_net = ["api.example.com:443"]
//	  }
//	  plugin "hello" {
//	    runtime = "node"               # an interpreter preset: "node" or "python"
//	  }
//	}
//
// runtime and dir are set in a plugin block only (sandbox.Runtime says what
// each preset grants; the plugin finds a dir's path under its name in
// $PLUGHOST_GRANTS, grants.Env). A plugin block overrides the default's settings for the plugin of that
// provider name (as `plughost plugins` shows it), or of that file name when
// the file name is long and the provider name derived from it (see
// naming.ForLabel); its allow_read, allow_write and env lists add to the
// default's lists. Every setting is optional: an empty file, or none, gives
// every plugin the default policy of package sandbox.
//
// Mistakes are reported with the file, line and column of the key and what
// was expected ("plughost.hcl:7,17-24: Invalid memory: ..."), and unknown
// keys and blocks are errors, so a typo never silently weakens a policy.
//
// The plugins block says when plugin processes run, and where the catalog
// cache lives:
//
//	plugins {
//	  start        = "lazy"   # "eager": start every plugin at once and keep it up
//	                          # "lazy": start one when a request needs it (default: eager)
//	  idle_timeout = "10m"    # a lazy plugin with nothing to do is stopped after this
//	  start_timeout = "10s"   # how long a plugin may take to start (a declared server:
//	                          # to answer initialize and list what it offers); default 10s
//	  cache        = true     # the catalog cache: true (the default directory),
//	                          # false (none), or a directory
//	  install_timeout = "5m"  # the limit of a declared npx/uvx server's install
//	                          # at its first start (default 5m; package packages)
//
//	  plugin "fetch" {
//	    start = "eager"
//	  }
//	}
//
// The stateless block says how the requestState of stateless MCP
// (2026-07-28) is sealed (package sealed), so that any replica behind a load
// balancer opens what another sealed:
//
//	stateless {
//	  state_key_file = "/etc/plughost/state.key" # the secret every replica shares: at least 32 bytes,
//	                                             # one trailing newline trimmed, its owner's alone (chmod 600)
//	  state_ttl      = "15m"                     # how long a client has to answer an input request
//	                                             # (default 15m; from 1s to 24h)
//	}
//
// A relative state_key_file is relative to the configuration file's
// directory, not to the working directory: Parse joins it to the directory
// of its filename argument. The file is read by plughost serve
// (cmd/plughost), not here; the environment variables PLUGHOST_STATE_KEY (the secret itself,
// which wins over the file) and PLUGHOST_STATE_KEY_FILE (a file, when the
// configuration names none) are read there too. The secret itself never
// goes in this file, nor on the command line.
//
// The tasks block says how the tasks of MCP's tasks extension
// (io.modelcontextprotocol/tasks) are kept, and where replicas share them:
//
//	tasks {
//	  ttl             = "1h"     # how long a task is kept after its creation; 1m to 168h
//	  poll_interval   = "500ms"  # the pollIntervalMs suggested to clients; 100ms to 1m
//	  max_running     = 256      # tasks this replica runs at once; 1 to 100000
//	  max_result_size = "4MiB"   # the largest result a task keeps; 1KiB to 64MiB
//	  escalate_after  = "5s"     # a call of a tool that supports tasks still running after this
//	                             # becomes a task; "0s": only when the plugin says so; at most 1h
//	  redis {                    # absent: tasks stay in this process
//	    address         = "redis:6379"          # "host:port", or a unix socket path starting with /
//	    username        = "plughost"            # optional
//	    password_file   = "/run/secrets/redis"  # optional
//	    db              = 0
//	    key_prefix      = "plughost:"
//	    replica_timeout = "5s"  # a replica silent this long is dead: its tasks fail; 1s to 1m
//	  }
//	}
//
// Replicas behind a load balancer must share a redis block: a task lives
// in the replica that runs it, and any replica answers for it. As with
// state_key_file, a relative password_file is relative to the
// configuration file's directory, the file is read by plughost serve, and
// the password itself never goes in this file: $PLUGHOST_REDIS_PASSWORD
// (which wins over the file) or $PLUGHOST_REDIS_PASSWORD_FILE (when the
// block names no file) give it too.
//
// The search block serves the tools in tool search mode: tools/list offers
// the pinned tools and two of the host's, search_tools (finds tools by a
// query in plain words) and call_tool (runs any tool by name), instead of
// every tool. Its presence turns the mode on (plughost serve --tool-search
// does too, as an empty block would):
//
//	search {
//	  pinned    = ["echo"]       # tools listed in full as well, by the names tools/list shows
//	  limit     = 8              # tools a search returns when the query says no number; 1 to 50 (default 8)
//	  add_found = 16             # a session lists up to that many of the tools its searches found; 0 to 64 (default 0: none)
//	  path      = "/mcp/search"  # serve --http: only this path is in tool search mode, /mcp and stdio serve every tool
//	  embeddings { … }           # optional: rank by meaning as well (see Embeddings)
//	}
//
// The audit block turns on the audit log (see Audit):
//
//	audit {
//	  file      = "/var/log/plughost/audit.jsonl"
//	  arguments = false
//	}
//
// The limits block bounds what a client, device or plugin may make the
// host hold (see Limits for its settings and defaults).
//
// The trust block says which plugin files may run: mode open (every
// file, the default), pinned (approved digests) or signed (a valid SSH
// signature by a trusted key), by default and per plugin (see Trust):
//
//	trust {
//	  mode            = "pinned"
//	  file            = "trust.json"        # default $XDG_STATE_HOME/plughost/trust.json
//	  allowed_signers = "allowed_signers"   # needed when a plugin is signed
//	  plugin "files" {
//	    mode = "signed"
//	  }
//	}
//
// The access block says who may list and use what, in CEL (access.go):
//
//	access {
//	  rule "only writers write" {
//	    deny = "item.name == 'files_write' && !('writers' in caller.claims.groups)"
//	  }
//	}
//
// The auth block makes serve --http an OAuth resource server (see Auth):
//
//	auth {
//	  issuer   = "https://auth.example.com"
//	  resource = "https://mcp.example.com/mcp"
//	  scopes   = ["mcp:tools"]
//	}
//
// Later areas (the HTTP listener, its token and allowed origins, the device
// listener) get their own top-level blocks next to these.
package config

import (
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/plughost/plughost/host/access"
	"github.com/plughost/plughost/sandbox"
)

// Config is the whole configuration file.
type Config struct {
	// Sandbox is the sandbox block: a default policy and per-plugin ones.
	Sandbox Sandbox
	// Plugins is the plugins block: start modes and the catalog cache.
	Plugins Plugins
	// Stateless is the stateless block: how requestState is sealed.
	Stateless Stateless
	// Tasks is the tasks block: how tasks are kept, and where.
	Tasks Tasks
	// Search is the search block: tool search mode; nil when absent.
	Search *Search
	// Audit is the audit block: the audit log; nil when absent.
	Audit *Audit
	// Limits is the limits block: what a client or plugin may make the
	// host hold.
	Limits Limits
	// Trust is the trust block: which plugin files may run.
	Trust Trust
	// Auth is the auth block: OAuth for serve --http; nil when absent.
	Auth *Auth
	// Access is the access block's rules, compiled: who may list and use
	// what (access.go); nil when absent.
	Access *access.Rules
	// Registry is the registry block: the MCP Registry plughost install
	// resolves names through (registry.go).
	Registry Registry
	// Hooks is the hooks block: the guardrail plugins asked around calls,
	// reads, prompt gets and definitions, in the order written (hooks.go);
	// nil when absent.
	Hooks []Hook
	// Overrides are the override blocks: the operator's title,
	// description and annotations for a plugin's tool, prompt or resource
	// (overrides.go), in the order written.
	Overrides []Override
	// Observability is the observability block: traces over OTLP
	// (observability.go); nil when absent.
	Observability *Observability
	// Console is the console block: the console's pages in a browser, and
	// how people sign in to them (console.go).
	Console Console
}

// The bounds of state_ttl (the error message spells them): a client needs
// some time to ask its user, and a sealed state should not outlive a day (it
// can be replayed until it expires).
const (
	minStateTTL = time.Second
	maxStateTTL = 24 * time.Hour
)

// Stateless holds the settings of the stateless block. A zero field is one
// the file does not set.
type Stateless struct {
	// KeyFile is state_key_file, joined to the configuration file's
	// directory when relative; "" when not set.
	KeyFile string
	// StateTTL is state_ttl; 0 when not set, for the server's default
	// (15m) to apply.
	StateTTL time.Duration
}

// Sandbox holds the policies of the sandbox block.
type Sandbox struct {
	// Default is the policy of plugins without a plugin block.
	Default sandbox.Policy
	// Plugins maps a provider name to its policy, with the default's
	// settings already merged in.
	Plugins map[string]sandbox.Policy
}

// PolicyFor returns a copy of the policy of the named plugin.
func (s *Sandbox) PolicyFor(name string) *sandbox.Policy {
	p, ok := s.Plugins[name]
	if !ok {
		p = s.Default
	}
	return p.Clone() // every slice, Dirs included
}

// Load reads and parses the file at path.
func Load(path string) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(src, path)
}

// Parse parses a configuration file's content; filename is used in error
// messages. A key or block in the wrong block is answered with the block
// it belongs in.
func Parse(src []byte, filename string) (*Config, error) {
	cfg, err := parse(src, filename)
	if err != nil {
		return nil, placeHints(err)
	}
	return cfg, nil
}

func parse(src []byte, filename string) (*Config, error) {
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	// Every block is read even when another has errors, so that the
	// file's mistakes are reported together (plughost check lists each).
	content, all := file.Body.Content(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "sandbox"}, {Type: "plugins"}, {Type: "stateless"}, {Type: "tasks"}, {Type: "search"}, {Type: "audit"}, {Type: "limits"}, {Type: "trust"}, {Type: "auth"}, {Type: "access"}, {Type: "registry"}, {Type: "hooks"}, {Type: "override", LabelNames: []string{"name"}}, {Type: "observability"}, {Type: "console"}}})
	cfg := &Config{Sandbox: Sandbox{Plugins: map[string]sandbox.Policy{}}, Plugins: Plugins{Plugin: map[string]PluginStart{}},
		Trust: Trust{Plugin: map[string]string{}}}
	seen := map[string]bool{}
	var others []error
	for _, b := range content.Blocks {
		if seen[b.Type] && b.Type != "override" { // one override block per overridden item
			all = append(all, diag(b.DefRange, "Duplicate "+b.Type+" block", "the file may have one "+b.Type+" block").(hcl.Diagnostics)...)
			continue
		}
		seen[b.Type] = true
		var err error
		switch b.Type {
		case "sandbox":
			err = cfg.Sandbox.decode(b.Body)
		case "plugins":
			err = cfg.Plugins.decode(b.Body)
		case "stateless":
			err = cfg.Stateless.decode(b.Body, filepath.Dir(filename))
		case "tasks":
			err = cfg.Tasks.decode(b.Body, filepath.Dir(filename))
		case "search":
			cfg.Search = &Search{}
			err = cfg.Search.decode(b.Body, filepath.Dir(filename))
		case "audit":
			cfg.Audit = &Audit{}
			err = cfg.Audit.decode(b.Body, filepath.Dir(filename))
		case "limits":
			err = cfg.Limits.decode(b.Body)
		case "trust":
			err = cfg.Trust.decode(b.Body, filepath.Dir(filename))
		case "auth":
			cfg.Auth = &Auth{}
			err = cfg.Auth.decode(b.Body, filepath.Dir(filename))
		case "access":
			cfg.Access, err = decodeAccess(b.Body)
		case "registry":
			err = cfg.Registry.decode(b.Body, filepath.Dir(filename))
		case "hooks":
			cfg.Hooks, err = decodeHooks(b.Body)
		case "override":
			err = cfg.addOverride(b)
		case "observability":
			cfg.Observability = &Observability{}
			err = cfg.Observability.decode(b.Body, filepath.Dir(filename))
		case "console":
			err = cfg.Console.decode(b.Body, filepath.Dir(filename))
		}
		if d, ok := err.(hcl.Diagnostics); ok {
			all = append(all, d...)
		} else if err != nil {
			others = append(others, err) // the access block's rules: CEL's errors, each at its file:line:column
		}
	}
	if d, ok := cfg.Console.checkAgainst(cfg.Auth).(hcl.Diagnostics); ok {
		all = append(all, d...)
	}
	switch {
	case all.HasErrors() && others != nil:
		return nil, errors.Join(append([]error{all}, others...)...)
	case all.HasErrors():
		return nil, all
	case others != nil:
		return nil, errors.Join(others...)
	}
	return cfg, nil
}

// parseBytes reads a number of bytes, or a string such as "512MiB".
func parseBytes(v cty.Value) (int64, error) {
	want := fmt.Errorf(`a size such as "512MiB", "2GiB" or a number of bytes`)
	if v.Type() == cty.Number {
		i, acc := v.AsBigFloat().Int64()
		if acc != big.Exact || i < 0 {
			return 0, want
		}
		return i, nil
	}
	if v.Type() != cty.String {
		return 0, want
	}
	s := strings.TrimSpace(v.AsString())
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}, {"", 1}}
	for _, u := range units {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
		if err != nil || n < 0 || n > (1<<50)/u.mult {
			return 0, want
		}
		return n * u.mult, nil
	}
	return 0, want
}

func diag(r hcl.Range, summary, detail string) error {
	return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: r.Ptr()}}
}

// decode reads the stateless block; dir is the configuration file's
// directory, against which a relative state_key_file is resolved.
func (st *Stateless) decode(body hcl.Body, dir string) error {
	content, diags := body.Content(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "state_key_file"}, {Name: "state_ttl"}}})
	if diags.HasErrors() {
		return diags
	}
	if a, ok := content.Attributes["state_key_file"]; ok {
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			return diags
		}
		if v.IsNull() || !v.IsKnown() || v.Type() != cty.String || strings.TrimSpace(v.AsString()) == "" {
			return diag(a.Expr.Range(), "Invalid state_key_file", "state_key_file must be the path of a file holding the secret (not the secret itself)")
		}
		st.KeyFile = inDir(dir, v.AsString())
	}
	if a, ok := content.Attributes["state_ttl"]; ok {
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			return diags
		}
		if v.IsNull() || !v.IsKnown() || v.Type() != cty.String {
			return diag(a.Expr.Range(), "Invalid state_ttl", `state_ttl must be a duration such as "15m" or "1h"`)
		}
		d, err := time.ParseDuration(v.AsString())
		if err != nil {
			return diag(a.Expr.Range(), "Invalid state_ttl", `state_ttl must be a duration such as "15m" or "1h"`)
		}
		if d < minStateTTL || d > maxStateTTL {
			return diag(a.Expr.Range(), "Invalid state_ttl", fmt.Sprintf("state_ttl must be from 1s to 24h, not %v", d))
		}
		st.StateTTL = d
	}
	return nil
}

// inDir resolves a path of the configuration file: a relative one is
// relative to the file's directory, dir.
func inDir(dir, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}
