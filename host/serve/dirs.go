package serve

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/plughost/plughost/sandbox"
)

// The directories plughost uses: the plugin directory and the others under
// $XDG_DATA_HOME, and the files plugin's workspace.

// DefaultDir is $XDG_DATA_HOME/plughost/<name>
// (~/.local/share/plughost/<name>); "" when neither XDG_DATA_HOME nor HOME
// is set.
func DefaultDir(name string) string {
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "plughost", name)
}

// ResolveDir returns dir made absolute, or when dir is empty the default
// $XDG_DATA_HOME/plughost/<name>, created if missing. A directory the user
// named must exist.
func ResolveDir(dir, name, flagName string) (string, error) {
	if dir == "" {
		if dir = DefaultDir(name); dir == "" {
			return "", fmt.Errorf("no %s directory: neither XDG_DATA_HOME nor HOME is set; pass %s DIR", name, flagName)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("cannot create the default %s directory: %w", name, err)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s directory %s does not exist (create it or pass another %s)", name, abs, flagName)
	case err != nil:
		return "", fmt.Errorf("%s directory: %w", name, err)
	case !st.IsDir():
		return "", fmt.Errorf("%s directory %s is not a directory", name, abs)
	}
	return abs, nil
}

// prepareWorkspace returns the files plugin's workspace: dir, or the default
// $XDG_DATA_HOME/plughost/workspace. A missing workspace is created and given
// to the plugins' owner (uid 65534 when plughost runs as root) so that the
// files plugin can write into it; an existing one it cannot write into is
// reported with the fix.
func prepareWorkspace(dir string, log hclog.Logger) (string, error) {
	if dir == "" {
		if dir = DefaultDir("workspace"); dir == "" {
			return "", fmt.Errorf("no workspace directory: neither XDG_DATA_HOME nor HOME is set; pass --workspace DIR")
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	uid, gid := sandbox.PluginOwner()
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return "", fmt.Errorf("cannot create the workspace: %w", err)
		}
		if uid != os.Getuid() {
			if err := os.Chown(abs, uid, gid); err != nil {
				return "", fmt.Errorf("cannot give the workspace to the plugins' uid %d: %w", uid, err)
			}
		}
		return abs, nil
	case err != nil:
		return "", fmt.Errorf("workspace: %w", err)
	case !st.IsDir():
		return "", fmt.Errorf("workspace %s is not a directory", abs)
	}
	if !writableBy(st, uid, gid) {
		log.Warn("the files plugin cannot write into its workspace: plugins run as another user",
			"workspace", abs, "plugin_uid", uid, "fix", fmt.Sprintf("chown %d:%d %s", uid, gid, abs))
	}
	return abs, nil
}
