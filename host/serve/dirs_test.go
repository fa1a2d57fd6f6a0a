package serve

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/sandbox"
)

// TestResolveDir: a directory named must exist and be one; the default
// ($XDG_DATA_HOME/plughost/NAME, else under HOME) is made when missing.
func TestResolveDir(t *testing.T) {
	data, home := t.TempDir(), t.TempDir()
	file := filepath.Join(data, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		dir, xdg, home string
		want, err      string
	}{
		"named":                  {dir: data, want: data},
		"named, missing":         {dir: filepath.Join(data, "nope"), err: "does not exist (create it or pass another --plugins)"},
		"named, a file":          {dir: file, err: "is not a directory"},
		"default under XDG":      {xdg: data, want: filepath.Join(data, "plughost", "plugins")},
		"default under HOME":     {home: home, want: filepath.Join(home, ".local", "share", "plughost", "plugins")},
		"no default can be made": {err: "neither XDG_DATA_HOME nor HOME is set; pass --plugins DIR"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Setenv("XDG_DATA_HOME", tc.xdg)
			t.Setenv("HOME", tc.home)
			got, err := ResolveDir(tc.dir, "plugins", "--plugins")
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("ResolveDir = %q, %v; want an error with %q", got, err, tc.err)
				}
			case err != nil || got != tc.want:
				t.Errorf("ResolveDir = %q, %v; want %q", got, err, tc.want)
			default:
				if st, err := os.Stat(got); err != nil || !st.IsDir() {
					t.Errorf("%s was not made: %v", got, err)
				}
			}
		})
	}
}

// TestPrepareWorkspace: a missing workspace is made; an existing one the
// plugins' uid cannot write into is kept, with a warning that says the
// fix; a file is refused.
func TestPrepareWorkspace(t *testing.T) {
	base := t.TempDir()
	t.Setenv("XDG_DATA_HOME", base)
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(base, "ro")
	if err := os.Mkdir(readOnly, 0o555); err != nil {
		t.Fatal(err)
	}
	uid, _ := sandbox.PluginOwner()
	tests := map[string]struct {
		dir, want, err, warn string
	}{
		"default, made": {want: filepath.Join(base, "plughost", "workspace")},
		"named, made":   {dir: filepath.Join(base, "w"), want: filepath.Join(base, "w")},
		"a file":        {dir: file, err: "is not a directory"},
		"read-only":     {dir: readOnly, want: readOnly, warn: "the files plugin cannot write into its workspace"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var logged bytes.Buffer
			got, err := prepareWorkspace(tc.dir, hclog.New(&hclog.LoggerOptions{Output: &logged}))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("prepareWorkspace = %q, %v; want an error with %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("prepareWorkspace = %q, %v; want %q", got, err, tc.want)
			}
			if tc.warn != "" && uid != 0 && !strings.Contains(logged.String(), tc.warn) {
				t.Errorf("log %q lacks %q", logged.String(), tc.warn)
			}
		})
	}
}

// TestDeclaredURLs: the URLs in a declared server's arguments, then in
// its env values by name, each as written.
func TestDeclaredURLs(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		s    declared.Server
		want []string
	}{
		"none": {s: declared.Server{Command: "x", Args: []string{"--fast"}}},
		"args then env by name": {s: declared.Server{Args: []string{"--api=https://h:8443/v1", "ws://w"},
			Env: map[string]string{"B": "http://b", "A": "x https://a/ y"}}, want: []string{"https://h:8443/v1", "ws://w", "https://a/", "http://b"}},
		"quoted, comma-separated": {s: declared.Server{Args: []string{`"http://q",http://r`}}, want: []string{"http://q", "http://r"}},
	}
	for name, tc := range tests {
		got := declaredURLs(&tc.s)
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: declaredURLs = %q, want %q", name, got, tc.want)
		}
	}
}

// TestPlughostDirs: plughost's own directories, which no next step
// grants a plugin: $PLUGHOST_CONFIG's, the default configuration's, the
// state, data and cache directories.
func TestPlughostDirs(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, v := range []string{"XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"} {
		t.Setenv(v, "")
	}
	t.Setenv("PLUGHOST_CONFIG", "/etc/plughost/plughost.hcl")
	want := []string{"/etc/plughost", filepath.Join(home, ".config", "plughost"), filepath.Join(home, ".local", "state", "plughost"),
		filepath.Join(home, ".local", "share", "plughost"), filepath.Join(home, ".cache", "plughost")}
	if got := PlughostDirs(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("PlughostDirs = %q\nwant %q", got, want)
	}
	if got, want := failureDir(), filepath.Join(home, ".cache", "plughost", "failures"); got != want {
		t.Errorf("failureDir = %q, want %q", got, want)
	}
}
