package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/pluginproto"
	"github.com/plughost/plughost/sandbox"
)

// filesPlugin is the bundled plugin whose workspace (--workspace) is granted
// through allow_write, with PLUGHOST_WORKSPACE passed to it.
const filesPlugin = "files"

// newLauncher returns the manager's Launcher: every plugin starts in the
// sandbox under its policy from the config file.
func newLauncher(cfg *config.Config, workspace string, log hclog.Logger) (manager.Launcher, error) {
	stateDir, err := stateDir()
	if err != nil {
		return nil, err
	}
	sb, err := sandbox.New(&sandbox.Options{
		StateDir: filepath.Join(stateDir, "plugins"),
		PassEnv:  []string{pluginproto.Handshake.MagicCookieKey},
		Logger:   log,
	})
	if err != nil {
		return nil, err
	}
	return func(name string, cmd *exec.Cmd) (*manager.Launch, error) {
		pol := cfg.Sandbox.PolicyFor(name)
		if name == filesPlugin {
			pol.AllowWrite = append(pol.AllowWrite, workspace)
			pol.Env = append(pol.Env, "PLUGHOST_WORKSPACE")
		}
		l, err := sb.Wrap(name, pol, cmd)
		if err != nil {
			return nil, err
		}
		return &manager.Launch{
			Cmd: l.Cmd,
			Started: func(pid int) ([]string, error) {
				rep, err := l.Started(pid)
				if err != nil {
					return nil, err
				}
				layers := make([]string, 0, len(rep.Active))
				for _, a := range rep.Active {
					layers = append(layers, string(a))
				}
				return layers, nil
			},
			Exited:      l.Exited,
			CallTimeout: pol.CallTimeout(),
		}, nil
	}, nil
}

// stateDir is $XDG_STATE_HOME/plughost (default ~/.local/state/plughost),
// where each plugin's private data directory lives.
func stateDir() (string, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no state directory: neither XDG_STATE_HOME nor HOME is set")
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "plughost"), nil
}

// sandboxSummary is the sandbox column of `plughost plugins`.
func sandboxSummary(layers []string) string {
	if len(layers) == 0 {
		return "sandbox none"
	}
	return "sandbox " + strings.Join(layers, ",")
}

// sandboxCommand runs `plughost sandbox probe`.
func sandboxCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sandbox", flag.ContinueOnError)
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() != 1 || fs.Arg(0) != "probe" {
		fmt.Fprintln(stderr, "usage: plughost sandbox probe   (print what this machine's sandbox supports)")
		return errUsage
	}
	tmp, err := os.MkdirTemp("", "plughost-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	s, err := sandbox.Probe(&sandbox.Options{StateDir: tmp})
	if err != nil {
		return err
	}
	s.Print(stdout)
	return nil
}
