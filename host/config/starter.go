package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/plughost/plughost/internal/atomicfile"
)

// WritePath is where plughost init writes the starter configuration:
// flag (its --config) when given, else $PLUGHOST_CONFIG when set, else
// DefaultPath; made absolute.
func WritePath(flag string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	path := flag
	if path == "" {
		path = getenv(EnvConfig)
	}
	if path == "" {
		if path = DefaultPath(getenv); path == "" {
			return "", errors.New("neither XDG_CONFIG_HOME nor HOME is set: pass --config FILE")
		}
	}
	return filepath.Abs(path)
}

// WriteStarter writes Starter at path (its directory made), unless a file
// is there and force is false; wrote says whether it did.
func WriteStarter(path string, force bool) (wrote bool, err error) {
	_, statErr := os.Stat(path)
	switch {
	case statErr == nil && !force:
		return false, nil
	case statErr != nil && !errors.Is(statErr, fs.ErrNotExist):
		return false, statErr
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	if err := atomicfile.Write(path, []byte(Starter)); err != nil {
		return false, err
	}
	return true, nil
}

// Starter is the configuration plughost init writes: valid as it
// is (every plugin gets the default sandbox), with the settings a desktop
// user reaches for first, commented out.
const Starter = `# plughost's configuration, written by plughost init.
# Every setting is optional; docs/reference.md "Configuration blocks" lists every block and where it is described.
# plughost check says whether plughost serve would start with it.

sandbox {
  # What every plugin may reach, besides its own directories; per plugin: plugin "NAME" { ... }.
  # allow_read  = ["/home/me/Documents"]  # paths plugins may read
  # allow_write = []                      # paths plugins may read and write
  # allow_net   = "none"                  # "all", or ["api.example.com:443"]
  # env         = ["LANG"]                # host environment variables passed through
}

plugins {
  # "lazy": a plugin starts when a request needs it, and stops when idle; "eager": all at once.
  start = "lazy"
}

# trust {
#   mode = "pinned"   # only plugin files approved with plughost approve NAME run
# }
`
