package serve

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/packages"
	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/sandbox"
)

// filesPlugin is the bundled plugin that --workspace is for: unless its
// policy grants a directory named "workspace" itself, --workspace is
// granted to it under that name, writable.
const filesPlugin = "files"

// workspaceDir is the name under which the files plugin asks for its
// workspace.
const workspaceDir = "workspace"

// grantWorkspace adds --workspace to the policy of the files plugin, as a
// dir "workspace" block would, unless the block grants one already.
func grantWorkspace(pol *sandbox.Policy, name, workspace string) {
	if name != filesPlugin || slices.ContainsFunc(pol.Dirs, func(d sandbox.Dir) bool { return d.Name == workspaceDir }) {
		return
	}
	pol.Dirs = append(pol.Dirs, sandbox.Dir{Name: workspaceDir, Path: workspace, Write: true})
}

// newLauncher returns the manager's Launcher: every plugin starts in the
// sandbox under its policy from the configuration as it is at that start
// (live: a reload's policy applies from the next launch), with its tmp directory in
// tmpDir (the host's run directory). missing, when not nil, learns of the
// layers a plugin started without (for the metrics).
//
// A declared server's first start installs its package (packageLaunch)
// until ctx ends.
func newLauncher(ctx context.Context, live *liveConfig, workspace, tmpDir string, log hclog.Logger, missing func(plugin string, missing map[sandbox.Layer]string)) (manager.Launcher, error) {
	stateDir, err := StateDir()
	if err != nil {
		return nil, err
	}
	sb, err := sandbox.New(&sandbox.Options{
		StateDir: filepath.Join(stateDir, "plugins"),
		TmpDir:   tmpDir,
		PassEnv:  []string{pluginclient.Handshake.MagicCookieKey},
		Logger:   log,
		Context:  ctx, // the host's: its shutdown stops resolving allow_net's names
	})
	if err != nil {
		return nil, err
	}
	return func(name string, cmd *exec.Cmd) (*manager.Launch, error) {
		path := cmd.Path // the plugin file, before the sandbox wraps it
		cfg := live.get()
		pol := cfg.Sandbox.PolicyFor(name)
		if isWrapped(cmd) {
			installer := func() (*packages.Installer, error) {
				return newInstaller(sb, name, pol, cfg.Plugins.InstallTimeout, log)
			}
			if err := wrappedLaunch(ctx, cfg, name, cmd, pol, os.Getenv, installer, log); err != nil {
				return nil, fmt.Errorf("declared server %s: %w", name, err)
			}
			cmd.Env = append(cmd.Env, envStartTimeout+"="+startTimeoutOf(cfg, name).String())
			pol.Env = append(pol.Env, envStartTimeout)
		} else {
			grantWorkspace(pol, name, workspace)
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
				if missing != nil {
					missing(name, rep.Missing)
				}
				return layers, nil
			},
			Exited: l.Exited,
			Diagnose: func() string {
				if isWrapped(cmd) {
					return ""
				}
				return scriptHint(name, path)
			},
			CallTimeout: pol.CallTimeout(),
			Storage:     storageOf(l),
		}, nil
	}, nil
}

// StateDir is $XDG_STATE_HOME/plughost (default ~/.local/state/plughost),
// where each plugin's private data directory lives.
func StateDir() (string, error) {
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

// scriptHint explains why the "#!" script at path, the plugin name,
// failed its handshake: its interpreter must start in the sandbox, which
// the runtime preset that fits it grants. "" for a file that is not a
// script (the manager explains a binary).
func scriptHint(name, path string) string {
	interp, prog, rt, ok := sandbox.ScriptRuntime(path)
	if !ok {
		return ""
	}
	runs := interp
	if prog != "" {
		runs = fmt.Sprintf("%s (through %s)", prog, interp)
	}
	fix := fmt.Sprintf(`its interpreter, and every program it starts, must be readable: a launcher of node or python needs runtime = "node" or "python" in sandbox { plugin %q { ... } }, anything else allow_read`,
		name)
	if rt != "" {
		fix = fmt.Sprintf(`its interpreter must be able to start: give the plugin the %s preset, sandbox { plugin %q { runtime = %q } }, if it has none`,
			rt, name, rt)
	}
	return fmt.Sprintf("(%s is a script run by %s: in the sandbox %s; and it must print go-plugin's handshake line (1|2|unix|/path/to.sock|grpc) first on stdout; its stderr says what went wrong)",
		path, runs, fix)
}

// storageOf reports what a sandboxed plugin holds of its storage limits
// (PluginStatus.Storage); nil where the sandbox measures nothing.
func storageOf(l *sandbox.Launch) func() []manager.Storage {
	if l.Usage == nil {
		return nil
	}
	return func() []manager.Storage {
		u := l.Usage()
		return []manager.Storage{{Name: "data", Used: u.Data, Limit: u.DataLimit}, {Name: "tmp", Used: u.Tmp, Limit: u.TmpLimit}}
	}
}
