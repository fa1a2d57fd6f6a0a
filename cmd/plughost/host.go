package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/catalog"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/pluginproto"
)

const contractVersion = pluginproto.ContractVersion

// hostFlags are the flags every command that loads plugins shares.
type hostFlags struct {
	plugins   string
	workspace string
	logLevel  string
}

func (h *hostFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&h.plugins, "plugins", "", "plugin directory (default $XDG_DATA_HOME/plughost/plugins, created if missing)")
	fs.StringVar(&h.workspace, "workspace", "", "directory the files plugin writes into (default $XDG_DATA_HOME/plughost/workspace)")
	fs.StringVar(&h.logLevel, "log-level", envOr("PLUGHOST_LOG_LEVEL", "info"), "log level: trace, debug, info, warn, error (logs go to stderr)")
}

// host is a catalog fed by a plugin manager: the part of plughost every
// command shares.
type host struct {
	log       hclog.Logger
	pluginDir string
	catalog   *catalog.Catalog
	manager   *manager.Manager
	done      chan error // receives manager.Run's result
	cancel    context.CancelFunc
}

// startHost resolves the directories, then starts loading plugins in the
// background. Stop it with stop.
func startHost(h *hostFlags, stderr io.Writer) (*host, error) {
	level := hclog.LevelFromString(h.logLevel)
	if level == hclog.NoLevel {
		return nil, fmt.Errorf("unknown log level %q (want trace, debug, info, warn or error)", h.logLevel)
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "plughost", Level: level, Output: stderr})

	pluginDir, err := resolveDir(h.plugins, "plugins", "--plugins")
	if err != nil {
		return nil, err
	}
	workspace, err := resolveDir(h.workspace, "workspace", "--workspace")
	if err != nil {
		return nil, err
	}

	cat := catalog.New(&catalog.Options{Logger: log.Named("catalog")})
	mgr, err := manager.New(&manager.Options{
		Dir:         pluginDir,
		Logger:      log.Named("plugins"),
		Publisher:   cat,
		HostVersion: version,
		Env:         []string{"PLUGHOST_WORKSPACE=" + workspace},
	})
	if err != nil {
		cat.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	hst := &host{log: log, pluginDir: pluginDir, catalog: cat, manager: mgr, done: make(chan error, 1), cancel: cancel}
	go func() { hst.done <- mgr.Run(ctx) }()
	log.Debug("loading plugins", "dir", pluginDir, "workspace", workspace)
	return hst, nil
}

// stop unloads every plugin and waits until their processes are gone.
func (h *host) stop() error {
	h.cancel()
	err := <-h.done
	h.catalog.Close()
	return err
}

// resolveDir returns dir made absolute, or when dir is empty the default
// $XDG_DATA_HOME/plughost/<name>, created if missing. A directory the user
// named must exist.
func resolveDir(dir, name, flagName string) (string, error) {
	if dir == "" {
		base := os.Getenv("XDG_DATA_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("no %s directory: neither XDG_DATA_HOME nor HOME is set; pass %s DIR", name, flagName)
			}
			base = filepath.Join(home, ".local", "share")
		}
		dir = filepath.Join(base, "plughost", name)
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

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
