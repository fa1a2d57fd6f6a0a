package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// plughostEnv runs a plughost command with env added to the test's
// environment (the last of a name wins), and returns its stdout, its
// stderr and its exit code.
func plughostEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin.plughost, args...)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
	cmd.Env = append(cmd.Env, env...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Stdin = strings.NewReader("") // serve ends at once when it starts at all
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("plughost %s: %v", strings.Join(args, " "), err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// writeConfigIn writes a configuration file into dir.
func writeConfigIn(t *testing.T, dir, content string) string {
	t.Helper()
	path := filepath.Join(dir, "plughost.hcl")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// brokenConfig is a configuration serve refuses four times over: an
// unknown key hiding behind a missing required one (hcl alone says
// "Missing required argument ... and 1 other diagnostic(s)"), then, once
// those are fixed, an audit directory, a key file and an unset variable.
const brokenConfig = `audit {
  fil = "/nonexistent/plughost-check/audit.jsonl"
}
sandbox {
  memory = "512MiB"
}
`

const brokenFiles = `audit {
  file = "/nonexistent/plughost-check/audit.jsonl"
}
stateless {
  state_key_file = "state.key"
}
search {
  embeddings {
    url         = "http://127.0.0.1:1/v1"
    model       = "m"
    api_key_env = "PLUGHOST_CHECK_TEST_UNSET"
  }
}
`

// TestCheckCommand runs plughost check on configurations an operator
// writes: each problem is printed with its file:line and status is 1;
// a good one prints "ok" and status is 0. serve refuses the same
// configurations with the same lines, and starts with the good one.
func TestCheckCommand(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		config string
		want   []string // lines of check's stdout (substrings), in order; none: ok
	}{
		"every diagnostic": {brokenConfig, []string{
			`plughost.hcl:1,7: Missing required argument`,
			`plughost.hcl:2,3: Unsupported argument`, `Did you mean "file"?`,
		}},
		"files, keys and variables": {brokenFiles, []string{
			`plughost.hcl:2: audit log /nonexistent/plughost-check/audit.jsonl: its directory /nonexistent/plughost-check does not exist`,
			`fix: create the directory`,
			`plughost.hcl:5: state key file`, `does not exist`,
			`plughost.hcl:11: search: the embeddings key: $PLUGHOST_CHECK_TEST_UNSET is not set`,
			`fix: export $PLUGHOST_CHECK_TEST_UNSET`,
		}},
		"a good configuration": {"sandbox {\n  allow_net = \"none\"\n}\n", nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := writeConfigIn(t, t.TempDir(), c.config)
			out, errOut, code := plughostEnv(t, nil, "check", "--config", path)
			if len(c.want) == 0 {
				if code != 0 || !strings.HasPrefix(out, "ok: "+path) {
					t.Fatalf("check: status %d, stdout %q, stderr %q; want 0 and ok", code, out, errOut)
				}
			} else {
				if code != 1 {
					t.Fatalf("check: status %d; want 1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
				}
				rest := out
				for _, w := range c.want {
					i := strings.Index(rest, w)
					if i < 0 {
						t.Fatalf("check's output lacks %q (in order)\n%s", w, out)
					}
					rest = rest[i+len(w):]
				}
			}

			// serve refuses exactly that, with the same lines, before
			// any plugin runs; with a good configuration it serves (and
			// ends with its empty stdin).
			_, serveErr, serveCode := plughostEnv(t, nil, "serve", "--plugins", t.TempDir(), "--workspace", t.TempDir(), "--config", path)
			if (serveCode != 0) != (len(c.want) > 0) {
				t.Fatalf("serve: status %d with check's %d problem lines\n%s", serveCode, len(c.want), serveErr)
			}
			for line := range strings.Lines(out) {
				if line = strings.TrimSpace(line); len(c.want) > 0 && !strings.Contains(serveErr, line) {
					t.Errorf("serve's refusal lacks check's line %q\n%s", line, serveErr)
				}
			}
		})
	}
}

// TestConfigLocation: without --config, $PLUGHOST_CONFIG names the
// configuration, else ~/.config/plughost/plughost.hcl when it exists
// ($XDG_CONFIG_HOME/plughost/plughost.hcl), for every command.
func TestConfigLocation(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	xdg := filepath.Join(home, "xdg")
	def := writeConfigIn(t, filepath.Join(xdg, "plughost"), "sandbox {\n  defaultt = 1\n}\n")
	envFile := writeConfigIn(t, t.TempDir(), "sandbox {\n  fromenv = 1\n}\n")
	flagFile := writeConfigIn(t, t.TempDir(), "sandbox {\n  fromflag = 1\n}\n")
	cases := map[string]struct {
		env  []string
		args []string
		want string // the unknown key reported: the file read
	}{
		"the flag wins":                {[]string{"XDG_CONFIG_HOME=" + xdg, "PLUGHOST_CONFIG=" + envFile}, []string{"--config", flagFile}, `"fromflag"`},
		"then $PLUGHOST_CONFIG":        {[]string{"XDG_CONFIG_HOME=" + xdg, "PLUGHOST_CONFIG=" + envFile}, nil, `"fromenv"`},
		"then the default location":    {[]string{"XDG_CONFIG_HOME=" + xdg}, nil, `"defaultt"`},
		"under HOME without XDG":       {[]string{"XDG_CONFIG_HOME=", "HOME=" + filepath.Dir(xdg), "PLUGHOST_CONFIG=" + envFile}, nil, `"fromenv"`},
		"none: every default (ok)":     {[]string{"XDG_CONFIG_HOME=" + t.TempDir()}, nil, ""},
		"a missing file named is said": {[]string{"PLUGHOST_CONFIG=" + filepath.Join(home, "missing.hcl")}, nil, "missing.hcl"},
	}
	_ = def
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, cmd := range [][]string{{"check"}, {"plugins", "--plugins", t.TempDir()}} {
				out, errOut, code := plughostEnv(t, c.env, append(cmd, c.args...)...)
				if c.want == "" {
					if code != 0 {
						t.Errorf("%s: status %d\n%s%s", cmd[0], code, out, errOut)
					}
					continue
				}
				if code == 0 || !strings.Contains(out+errOut, c.want) {
					t.Errorf("%s: status %d; want 1 naming %s\n%s%s", cmd[0], code, c.want, out, errOut)
				}
			}
		})
	}
}

// TestCheckDeclarations: check --plugins DIR also reports a declared
// server whose token file is not granted to it, at the declaration's file
// with the grant to add; serve still starts (that server alone would fail).
func TestCheckDeclarations(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	token := filepath.Join(base, "token")
	if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plugins := filepath.Join(base, "plugins")
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	declare(t, plugins, "remote", map[string]any{"url": "https://api.example.com/mcp", "bearer_token_file": token})
	path := writeConfigIn(t, filepath.Join(base, "etc"), "sandbox {\n}\n")
	out, errOut, code := plughostEnv(t, nil, "check", "--config", path, "--plugins", plugins)
	want := filepath.Join(plugins, "remote.mcp.json") + `: bearer_token_file ` + token + ` is not granted to server "remote": it does not start` +
		"\n    fix: add allow_read = [\"" + token + "\"] to sandbox { plugin \"remote\" { ... } } in " + path + "\n"
	if code != 1 || out != want {
		t.Fatalf("check: status %d, stdout:\n%s\nwant status 1 and:\n%s\nstderr:\n%s", code, out, want, errOut)
	}
	if _, serveErr, serveCode := plughostEnv(t, nil, "serve", "--plugins", plugins, "--workspace", t.TempDir(), "--config", path); serveCode != 0 {
		t.Fatalf("serve: status %d\n%s", serveCode, serveErr)
	}
}

// TestCheckWarnsOnExposedNameRule: a rule comparing item.name with a
// <plugin>__<tool> form (the name a clash exposes, which item.name never
// is) is a warning: check says where and how to fix it, and succeeds.
func TestCheckWarnsOnExposedNameRule(t *testing.T) {
	t.Parallel()
	path := writeConfigIn(t, t.TempDir(), "access {\n  rule \"old\" {\n    deny = \"item.name == 'files__create_file'\"\n  }\n}\n")
	out, errOut, code := plughostEnv(t, nil, "check", "--config", path)
	if code != 0 {
		t.Fatalf("check: status %d, stdout %q, stderr %q; want 0", code, out, errOut)
	}
	want := "warning: " + path + `:3:`
	if !strings.HasPrefix(out, want) || !strings.Contains(out, `rule "old" compares item.name with "files__create_file"`) ||
		!strings.Contains(out, `item.exposed == "files__create_file"`) || !strings.Contains(out, "\nok: ") {
		t.Errorf("check's output:\n%s\nwant a warning starting %q that suggests item.exposed, then ok", out, want)
	}
}
