package serve

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/mcp/sealed"
)

// stateSecret is a secret long enough, and easy to spot in a message.
const stateSecret = "s3cr3t-do-not-print-s3cr3t-do-not-print"

// writeKey writes a key file with the given mode into a new directory.
func writeKey(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.key")
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	return path
}

// opensWith reports whether a state s seals opens with a Sealer made from
// secret: whether s uses secret's key.
func opensWith(t *testing.T, s *sealed.Sealer, secret string) bool {
	t.Helper()
	state, err := s.Seal("test", []byte("x"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	other, err := sealed.New([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.Open("test", state)
	return err == nil
}

// lockedBuffer is a log destination tests read.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestStateSealer(t *testing.T) {
	t.Parallel()
	good := writeKey(t, stateSecret+"\n", 0o600)
	other := writeKey(t, strings.ToUpper(stateSecret), 0o400)
	missing := filepath.Join(t.TempDir(), "none.key")
	link := filepath.Join(t.TempDir(), "link.key")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		cfg  config.Stateless
		env  map[string]string
		want string // the secret whose key the Sealer must use
	}{
		"env wins over the config": {
			cfg:  config.Stateless{KeyFile: missing},
			env:  map[string]string{envStateKey: stateSecret, envStateKeyFile: missing},
			want: stateSecret,
		},
		"env, newline trimmed": {env: map[string]string{envStateKey: stateSecret + "\n"}, want: stateSecret},
		"config file, newline trimmed": {
			cfg:  config.Stateless{KeyFile: good},
			want: stateSecret,
		},
		"config file wins over the env file": {
			cfg:  config.Stateless{KeyFile: good},
			env:  map[string]string{envStateKeyFile: other},
			want: stateSecret,
		},
		"env file when the config names none": {
			env:  map[string]string{envStateKeyFile: other},
			want: strings.ToUpper(stateSecret),
		},
		"symlink to a private file": {cfg: config.Stateless{KeyFile: link}, want: stateSecret},
		// 31 bytes and two newlines: one is trimmed, the other is part of
		// a 32-byte key.
		"only one newline trimmed": {
			cfg:  config.Stateless{KeyFile: writeKey(t, stateSecret[:31]+"\n\n", 0o600)},
			want: stateSecret[:31] + "\n",
		},
		"longer passphrase": {
			env:  map[string]string{envStateKey: stateSecret + stateSecret},
			want: stateSecret + stateSecret,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, _, err := stateSealer(c.cfg, func(k string) string { return c.env[k] }, hclog.NewNullLogger())
			if err != nil {
				t.Fatal(err)
			}
			if !opensWith(t, s, c.want) {
				t.Errorf("the Sealer does not use the key of %q", c.want)
			}
		})
	}
}

func TestStateSealerRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.key")
	short := stateSecret[:31]
	for name, c := range map[string]struct {
		cfg  config.Stateless
		env  map[string]string
		want []string // in the error
	}{
		"group-readable file": {
			cfg:  config.Stateless{KeyFile: writeKey(t, stateSecret, 0o640)},
			want: []string{"state.key", "state_key_file", "group or others", "0640", "chmod 600"},
		},
		"world-readable file": {
			cfg:  config.Stateless{KeyFile: writeKey(t, stateSecret, 0o644)},
			want: []string{"state.key", "0644", "chmod 600"},
		},
		"group-writable file": {
			env:  map[string]string{envStateKeyFile: writeKey(t, stateSecret, 0o620)},
			want: []string{"state.key", envStateKeyFile, "chmod 600"},
		},
		"short file": {
			cfg:  config.Stateless{KeyFile: writeKey(t, short+"\n", 0o600)},
			want: []string{"state.key", "31 bytes", "at least 32"},
		},
		"short env": {
			env:  map[string]string{envStateKey: short},
			want: []string{envStateKey, "31 bytes", "at least 32"},
		},
		"empty file": {
			cfg:  config.Stateless{KeyFile: writeKey(t, "", 0o600)},
			want: []string{"state.key", "0 bytes", "at least 32"},
		},
		"missing config file": {
			cfg:  config.Stateless{KeyFile: missing},
			want: []string{missing, "state_key_file", "does not exist"},
		},
		"missing env file": {
			env:  map[string]string{envStateKeyFile: missing},
			want: []string{missing, envStateKeyFile, "does not exist"},
		},
		"directory": {
			cfg:  config.Stateless{KeyFile: dir},
			want: []string{dir, "is a directory"},
		},
		"huge file": {
			cfg:  config.Stateless{KeyFile: writeKey(t, strings.Repeat(stateSecret, 2000), 0o600)},
			want: []string{"state.key", "larger than 64 KiB"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, _, err := stateSealer(c.cfg, func(k string) string { return c.env[k] }, hclog.NewNullLogger())
			if err == nil || s != nil {
				t.Fatalf("stateSealer = %v, %v; want an error", s, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), stateSecret[:20]) {
				t.Errorf("error %q shows the secret", err)
			}
		})
	}
}

// With no key anywhere, states are sealed with a key of this process's own,
// and the log says what replicas need.
func TestStateSealerRandom(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	empty := func(string) string { return "" }
	a, _, err := stateSealer(config.Stateless{}, empty, log)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := stateSealer(config.Stateless{}, empty, log)
	if err != nil {
		t.Fatal(err)
	}
	state, err := a.Seal("test", []byte("x"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Open("test", state); err != nil {
		t.Errorf("a random Sealer cannot open its own state: %v", err)
	}
	if _, err := b.Open("test", state); !errors.Is(err, sealed.ErrTampered) {
		t.Errorf("another process's random Sealer: Open = %v, want ErrTampered", err)
	}
	got := logs.String()
	for _, w := range []string{"[INFO]", "per-process key", "replicas", "state_key_file", envStateKey} {
		if !strings.Contains(got, w) {
			t.Errorf("log %q does not say %q", got, w)
		}
	}
}
