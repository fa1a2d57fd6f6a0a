package secretfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRead: a file its owner's alone is read whole; one open to group or
// others, a directory, a missing file or one over MaxSize is refused, each
// error naming the source and never the secret. A symlink is judged by
// its target.
func TestRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "s3cret\n", 0o600)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		path, want, err string
	}{
		"owner's alone":     {path: good, want: "s3cret\n"},
		"read-only, owner":  {path: write("ro", "s3cret", 0o400), want: "s3cret"},
		"a link to one":     {path: link, want: "s3cret\n"},
		"open to the group": {path: write("group", "s3cret", 0o640), err: "is open to group or others (mode 0640): a secret must be its owner's alone: chmod 600"},
		"open to others":    {path: write("others", "s3cret", 0o604), err: "chmod 600"},
		"too large":         {path: write("huge", strings.Repeat("x", MaxSize+1), 0o600), err: "is larger than 64 KiB: not a secret"},
		"a directory":       {path: dir, err: "is a directory"},
		"missing":           {path: filepath.Join(dir, "nope"), err: "does not exist"},
	}
	for name, tc := range tests {
		got, err := Read(tc.path, "the key file "+tc.path)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "the key file "+tc.path) {
				t.Errorf("%s: %q, %v; want an error naming the source, saying %q", name, got, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Errorf("%s: the error shows the secret: %v", name, err)
			}
		case err != nil || string(got) != tc.want:
			t.Errorf("%s: %q, %v; want %q", name, got, err, tc.want)
		}
	}
}

// TestFind: the variable holding the secret wins, then the file the
// configuration names, then the file the other variable names; one
// trailing newline is trimmed, and source says which it was.
func TestFind(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfgFile, envFile := filepath.Join(dir, "cfg"), filepath.Join(dir, "env")
	for p, content := range map[string]string{cfgFile: "from-config\n\n", envFile: "from-env-file"} {
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := map[string]struct {
		env                 map[string]string
		configFile          string
		secret, source, err string
	}{
		"the variable wins": {env: map[string]string{"K": "from-env", "K_FILE": envFile}, configFile: cfgFile, secret: "from-env", source: "$K"},
		"then the configuration's file": {env: map[string]string{"K_FILE": envFile}, configFile: cfgFile, secret: "from-config\n",
			source: "key file " + cfgFile + " (key_file in the block)"},
		"then the variable's file": {env: map[string]string{"K_FILE": envFile}, secret: "from-env-file", source: "key file " + envFile + " ($K_FILE)"},
		"none":                     {env: map[string]string{}},
		"a file that is missing": {configFile: filepath.Join(dir, "nope"), source: "key file " + filepath.Join(dir, "nope") + " (key_file in the block)",
			err: "does not exist"},
	}
	for name, tc := range tests {
		getenv := func(k string) string { return tc.env[k] }
		secret, source, err := Find(getenv, "K", tc.configFile, "key_file in the block", "K_FILE", "key")
		if string(secret) != tc.secret || source != tc.source || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: Find = %q, %q, %v; want %q, %q, %q", name, secret, source, err, tc.secret, tc.source, tc.err)
		}
	}
}
