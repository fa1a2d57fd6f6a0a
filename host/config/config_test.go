package config

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/naming"
	"github.com/plughost/plughost/sandbox"
)

func TestParse(t *testing.T) {
	t.Parallel()
	src := `
sandbox {
  allow_read = ["/usr/share/dict"]
  memory     = "256MiB"
  timeout    = "30s"
  env        = ["LANG"]

  plugin "files" {
    allow_write = ["/srv/ws"]
    strict      = true
  }
  plugin "fetch" {
    allow_net = ["api.example.com:443"]
    cpu       = 0.5
    pids      = 16
  }
  plugin "hello" {
    runtime = "node"
  }
  plugin "notes" {
    runtime    = "python"
    allow_read = ["/srv/notes"]
  }
  plugin "lua" {
    allow_jit = true
  }
  plugin "deno" {
    allow_jit = false
  }
  plugin "builder" {
    tmp_size           = "1GiB"
    data_size          = 2147483648
    allow_exec_written = true
  }
}
`
	cfg, err := Parse([]byte(src), "plughost.hcl")
	if err != nil {
		t.Fatal(err)
	}
	def := sandbox.Policy{AllowRead: []string{"/usr/share/dict"}, Memory: 256 << 20, Timeout: 30 * time.Second, Env: []string{"LANG"}}
	yes, no := true, false
	want := map[string]*sandbox.Policy{
		"echo":  &def,
		"files": {AllowRead: def.AllowRead, AllowWrite: []string{"/srv/ws"}, Memory: def.Memory, Timeout: def.Timeout, Env: def.Env, Strict: true},
		"fetch": {AllowRead: def.AllowRead, Net: sandbox.NetList, NetAllow: []string{"api.example.com:443"}, CPU: 0.5, Pids: 16, Memory: def.Memory, Timeout: def.Timeout, Env: def.Env},
		"hello": {AllowRead: def.AllowRead, Runtime: sandbox.RuntimeNode, Memory: def.Memory, Timeout: def.Timeout, Env: def.Env},
		"builder": {AllowRead: def.AllowRead, Memory: def.Memory, Timeout: def.Timeout, Env: def.Env,
			TmpSize: 1 << 30, DataSize: 2 << 30, AllowExecWritten: true},
		"notes": {AllowRead: []string{"/usr/share/dict", "/srv/notes"}, Runtime: sandbox.RuntimePython, Memory: def.Memory, Timeout: def.Timeout, Env: def.Env},
		"lua":   {AllowRead: def.AllowRead, AllowJIT: &yes, Memory: def.Memory, Timeout: def.Timeout, Env: def.Env},
		"deno":  {AllowRead: def.AllowRead, AllowJIT: &no, Memory: def.Memory, Timeout: def.Timeout, Env: def.Env},
	}
	for name, w := range want {
		if diff := cmp.Diff(w, cfg.Sandbox.PolicyFor(name)); diff != "" {
			t.Errorf("policy of %s (-want +got):\n%s", name, diff)
		}
	}
}

// long37 is a plugin file name longer than a provider name may be.
const long37 = "a-plugin-with-a-rather-long-file-name"

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ src, want string }{
		"unknown key": {"sandbox {\n  memroy = 1\n}\n", `plughost.hcl:2,3-9: Unsupported argument; An argument named "memroy" is not expected here`},
		"start in sandbox": {"sandbox {\n  start = \"lazy\"\n}\n",
			`plughost.hcl:2,3-8: Unsupported argument; An argument named "start" is not expected here. "start" belongs in plugins { } or a plugin block inside it.`},
		"memory in plugins": {"plugins {\n  plugin \"x\" {\n    memory = \"1GiB\"\n  }\n}\n",
			`An argument named "memory" is not expected here. "memory" belongs in sandbox { } or a plugin block inside it.`},
		"plugin at the top": {"plugin \"x\" {}\n",
			`"plugin" belongs in sandbox { } (its policy), plugins { } (when it runs) or trust { } (its trust mode).`},
		"bad memory":       {"sandbox {\n  memory = \"lots\"\n}\n", `plughost.hcl:2,12-18: Invalid memory; memory must be a size`},
		"bad net":          {"sandbox {\n  plugin \"x\" {\n    allow_net = \"some\"\n  }\n}\n", `plughost.hcl:3,17-23: Invalid allow_net`},
		"bad port":         {"sandbox {\n  allow_net = [\"a:b\"]\n}\n", `plughost.hcl:2,15-22: Invalid allow_net; allow_net: "a:b": port must be 1-65535`},
		"relative path":    {"sandbox {\n  allow_write = [\"ws\"]\n}\n", `plughost.hcl:2,17-23: Invalid allow_write; allow_write: "ws" is not an absolute path`},
		"bad timeout":      {"sandbox {\n  timeout = 30\n}\n", `plughost.hcl:2,13-15: Invalid timeout`},
		"tiny tmp_size":    {"sandbox {\n  tmp_size = \"4KiB\"\n}\n", `plughost.hcl:2,14-20: Invalid tmp_size; tmp_size: 4096 bytes is too little for any plugin (at least 1 MiB)`},
		"bad data_size":    {"sandbox {\n  data_size = \"a lot\"\n}\n", `plughost.hcl:2,15-22: Invalid data_size; data_size must be a size`},
		"bad exec_written": {"sandbox {\n  allow_exec_written = 1\n}\n", `plughost.hcl:2,24-25: Invalid allow_exec_written; allow_exec_written must be true or false`},
		"bad allow_jit":    {"sandbox {\n  plugin \"x\" {\n    allow_jit = \"yes\"\n  }\n}\n", `plughost.hcl:3,17-22: Invalid allow_jit; allow_jit must be true or false`},
		"duplicate plugin": {"sandbox {\n  plugin \"a\" {}\n  plugin \"a\" {}\n}\n", `plughost.hcl:3,3-13: Duplicate plugin block`},
		"bad plugin name":  {"sandbox {\n  plugin \"a.b\" {}\n}\n", `plughost.hcl:2,10-15: Invalid plugin name; "a.b" is not a plugin name`},
		"same plugin twice": {"sandbox {\n  plugin \"" + long37 + "\" {}\n  plugin \"" + naming.Shorten(long37) + "\" {}\n}\n",
			`plughost.hcl:3,3-44: Duplicate plugin block`},
		"default runtime": {"sandbox {\n  runtime = \"node\"\n}\n",
			`plughost.hcl:2,3-10: Unsupported argument; An argument named "runtime" is not expected here. "runtime" belongs in a plugin block inside sandbox { }.`},
		"bad runtime": {"sandbox {\n  plugin \"x\" {\n    runtime = \"ruby\"\n  }\n}\n",
			`plughost.hcl:3,15-21: Invalid runtime; runtime must be "node" or "python" (for another interpreter, grant what it needs with allow_read)`},
		"runtime in plugins": {"plugins {\n  plugin \"x\" {\n    runtime = \"node\"\n  }\n}\n", `plughost.hcl:3,5-12: Unsupported argument`},
		"unknown block":      {"sandbx {}\n", `plughost.hcl:1,1-7: Unsupported block type`},
		"bad start":          {"plugins {\n  start = \"sometimes\"\n}\n", `plughost.hcl:2,11-22: Invalid start; start must be "eager" or "lazy"`},
		"bad idle":           {"plugins {\n  plugin \"x\" {\n    idle_timeout = \"soon\"\n  }\n}\n", `plughost.hcl:3,20-26: Invalid idle_timeout`},
		"zero idle":          {"plugins {\n  idle_timeout = \"0s\"\n}\n", `plughost.hcl:2,18-22: Invalid idle_timeout`},
		"bad install":        {"plugins {\n  install_timeout = \"later\"\n}\n", `plughost.hcl:2,21-28: Invalid install_timeout`},
		"bad start timeout":  {"plugins {\n  start_timeout = \"-1s\"\n}\n", `plughost.hcl:2,19-24: Invalid start_timeout`},
		"bad cache":          {"plugins {\n  cache = 3\n}\n", `plughost.hcl:2,11-12: Invalid cache; cache must be true, false or a directory`},
		"plugin cache":       {"plugins {\n  plugin \"x\" {\n    cache = false\n  }\n}\n", `plughost.hcl:3,5-10: Unsupported argument`},
		"two plugins":        {"plugins {}\nplugins {}\n", `plughost.hcl:2,1-8: Duplicate plugins block`},
		"dup plugin":         {"plugins {\n  plugin \"a\" {}\n  plugin \"a\" {}\n}\n", `plughost.hcl:3,3-13: Duplicate plugin block`},
		"syntax":             {"sandbox {\n  memory = \n}\n", `plughost.hcl:2`},
		"bad state_ttl":      {"stateless {\n  state_ttl = \"soon\"\n}\n", `plughost.hcl:2,15-21: Invalid state_ttl; state_ttl must be a duration such as "15m"`},
		"number ttl":         {"stateless {\n  state_ttl = 15\n}\n", `plughost.hcl:2,15-17: Invalid state_ttl; state_ttl must be a duration`},
		"short ttl":          {"stateless {\n  state_ttl = \"500ms\"\n}\n", `plughost.hcl:2,15-22: Invalid state_ttl; state_ttl must be from 1s to 24h, not 500ms`},
		"zero ttl":           {"stateless {\n  state_ttl = \"0s\"\n}\n", `plughost.hcl:2,15-19: Invalid state_ttl; state_ttl must be from 1s to 24h, not 0s`},
		"long ttl":           {"stateless {\n  state_ttl = \"25h\"\n}\n", `plughost.hcl:2,15-20: Invalid state_ttl; state_ttl must be from 1s to 24h, not 25h0m0s`},
		"stateless typo": {"stateless {\n  state_tll = \"15m\"\n}\n",
			`plughost.hcl:2,3-12: Unsupported argument; An argument named "state_tll" is not expected here. Did you mean "state_ttl"?`},
		"key in config":        {"stateless {\n  state_key = \"hunter2\"\n}\n", `plughost.hcl:2,3-12: Unsupported argument; An argument named "state_key" is not expected here`},
		"empty key file":       {"stateless {\n  state_key_file = \"\"\n}\n", `plughost.hcl:2,20-22: Invalid state_key_file`},
		"key file list":        {"stateless {\n  state_key_file = [\"a\"]\n}\n", `plughost.hcl:2,20-25: Invalid state_key_file`},
		"two stateless":        {"stateless {}\nstateless {}\n", `plughost.hcl:2,1-10: Duplicate stateless block`},
		"stateless block typo": {"stateles {}\n", `plughost.hcl:1,1-9: Unsupported block type; Blocks of type "stateles" are not expected here. Did you mean "stateless"?`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(c.src), "plughost.hcl")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

// A block labelled with a plugin's long file name configures the plugin
// under its derived provider name.
func TestLongPluginName(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("sandbox {\n  plugin \""+long37+"\" {\n    pids = 7\n  }\n}\n"), "plughost.hcl")
	if err != nil {
		t.Fatal(err)
	}
	name, _ := naming.ForFile(long37)
	if got := cfg.Sandbox.PolicyFor(name).Pids; got != 7 {
		t.Errorf("policy of %s: pids = %d, want 7 (plugins: %v)", name, got, cfg.Sandbox.Plugins)
	}
}

func TestParsePlugins(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		src  string
		want Plugins
	}{
		"full": {`
plugins {
  start        = "lazy"
  idle_timeout = "10m"
  start_timeout = "20s"
  cache        = "/var/cache/plughost"
  plugin "fetch" {
    start = "eager"
    start_timeout = "2m"
  }
  plugin "files" {
    idle_timeout = "30s"
  }
}
`, Plugins{Start: "lazy", IdleTimeout: 10 * time.Minute, StartTimeout: 20 * time.Second, CacheDir: "/var/cache/plughost", Plugin: map[string]PluginStart{
			"fetch": {Start: "eager", StartTimeout: 2 * time.Minute}, "files": {IdleTimeout: 30 * time.Second},
		}}},
		"cache off": {"plugins {\n  cache = false\n}\n", Plugins{CacheOff: true, Plugin: map[string]PluginStart{}}},
		"cache on":  {"plugins {\n  cache = true\n}\n", Plugins{Plugin: map[string]PluginStart{}}},
		"install":   {"plugins {\n  install_timeout = \"10m\"\n}\n", Plugins{InstallTimeout: 10 * time.Minute, Plugin: map[string]PluginStart{}}},
		"none":      {"", Plugins{Plugin: map[string]PluginStart{}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(c.src), "plughost.hcl")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, cfg.Plugins); diff != "" {
				t.Errorf("plugins block (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEmpty(t *testing.T) {
	t.Parallel()
	cfg, err := Parse(nil, "empty.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&sandbox.Policy{}, cfg.Sandbox.PolicyFor("any")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseStateless(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		src, filename string
		want          Stateless
	}{
		"full": {`
# Stateless MCP (2026-07-28): how requestState is sealed.
stateless {
  state_key_file = "/etc/plughost/state.key"
  state_ttl      = "15m"
}
`, "plughost.hcl", Stateless{KeyFile: "/etc/plughost/state.key", StateTTL: 15 * time.Minute}},
		"bounds":   {"stateless {\n  state_ttl = \"24h\"\n}\nplugins {}\n", "plughost.hcl", Stateless{StateTTL: 24 * time.Hour}},
		"one sec":  {"stateless {\n  state_ttl = \"1s\"\n}\n", "plughost.hcl", Stateless{StateTTL: time.Second}},
		"relative": {"stateless {\n  state_key_file = \"keys/state.key\"\n}\n", "/etc/plughost/plughost.hcl", Stateless{KeyFile: "/etc/plughost/keys/state.key"}},
		"relative, relative config": {"stateless {\n  state_key_file = \"state.key\"\n}\n", "conf/plughost.hcl",
			Stateless{KeyFile: filepath.Join("conf", "state.key")}},
		"up a directory": {"stateless {\n  state_key_file = \"../secrets/state.key\"\n}\n", "/etc/plughost/plughost.hcl", Stateless{KeyFile: "/etc/secrets/state.key"}},
		"empty block":    {"stateless {}\n", "plughost.hcl", Stateless{}},
		"absent":         {"sandbox {}\n", "plughost.hcl", Stateless{}},
		"empty file":     {"", "plughost.hcl", Stateless{}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(c.src), c.filename)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, cfg.Stateless); diff != "" {
				t.Errorf("stateless block (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseNamedDirectories(t *testing.T) {
	cfg, err := Parse([]byte(`sandbox {
  plugin "notes" {
    dir "notes" {
      path  = "/srv/notes"
      write = true
    }
    dir "ref" { path = "/usr/share/doc" }
  }
}
`), "plughost.hcl")
	if err != nil {
		t.Fatal(err)
	}
	want := []sandbox.Dir{{Name: "notes", Path: "/srv/notes", Write: true}, {Name: "ref", Path: "/usr/share/doc"}}
	if got := cfg.Sandbox.PolicyFor("notes").Dirs; !slices.Equal(got, want) {
		t.Errorf("dirs = %+v, want %+v", got, want)
	}
	if got := cfg.Sandbox.PolicyFor("other").Dirs; len(got) != 0 {
		t.Errorf("another plugin's dirs = %+v, want none", got)
	}
	for _, c := range []struct{ src, want string }{
		{`sandbox {
  dir "x" { path = "/a" }
}`, `"dir" belongs in a plugin block inside sandbox { }`},
		{`sandbox {
  plugin "p" {
    dir "x" { write = true }
  }
}`, `"path" is required`},
		{`sandbox {
  plugin "p" {
    dir "x" { path = "rel" }
  }
}`, `plugin "p": dir "x": path "rel" is not an absolute path`},
		{`sandbox {
  plugin "p" {
    dir "x" {
      path  = "/a"
      write = "yes"
    }
  }
}`, "write must be true or false"},
		{`sandbox {
  plugin "p" {
    dir "x" { path = "/a" }
    dir "x" { path = "/b" }
  }
}`, `dir "x": granted twice`},
	} {
		if _, err := Parse([]byte(c.src), "plughost.hcl"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s\n: %v, want %q", c.src, err, c.want)
		}
	}
}

// PolicyFor returns a copy: a launch that edits its policy's named
// directories (the launcher adds the files plugin's workspace; a launch
// could adjust one) leaves the configuration, and the next launch's
// policy, as the file says.
func TestPolicyForCopiesDirs(t *testing.T) {
	cfg, err := Parse([]byte(`sandbox {
  plugin "notes" {
    dir "notes" { path = "/srv/notes" }
  }
}
`), "plughost.hcl")
	if err != nil {
		t.Fatal(err)
	}
	first := cfg.Sandbox.PolicyFor("notes")
	first.Dirs[0].Path, first.Dirs[0].Write = "/", true
	if got := cfg.Sandbox.PolicyFor("notes").Dirs; len(got) != 1 || got[0].Path != "/srv/notes" || got[0].Write {
		t.Errorf("after a launch edited its copy, the policy's dirs = %+v, want notes at /srv/notes read-only", got)
	}
}

func TestParseAccess(t *testing.T) {
	cfg, err := Parse([]byte(`access {
  rule "only writers write" {
    deny = "item.name == 'files_write' && !('writers' in caller.claims.groups)"
  }
  rule "read-only" {
    allow = <<-EOT
      has(item.annotations.readOnlyHint)
    EOT
  }
}
`), "plughost.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Access == nil {
		t.Fatal("no rules")
	}
	for _, tc := range []struct{ src, want string }{
		{"access {\n  rule \"x\" {\n    deny = \"caller.sbuject == 'a'\"\n  }\n}\n", `plughost.hcl:3:19: rule "x": undefined field 'sbuject'`},
		{"access {\n  rule \"x\" {\n    allow = <<-EOT\n      true &&\n      item.nmae == 'a'\n    EOT\n  }\n}\n", `plughost.hcl:5:`},
		{"access {\n  rule \"x\" {\n    allow = \"true\"\n    deny = \"false\"\n  }\n}\n", "exactly one of allow"},
		{"access {\n  rule \"x\" { allow = \"true\" }\n  rule \"x\" { allow = \"true\" }\n}\n", "Duplicate rule"},
		{"access {\n  rule \"x\" {\n    allow = 3\n  }\n}\n", "must be a CEL expression in a string"},
	} {
		_, err := Parse([]byte(tc.src), "plughost.hcl")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error containing %q", tc.src, err, tc.want)
		}
	}
}
