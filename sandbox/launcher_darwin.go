package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
)

// On macOS a plugin runs under sandbox-exec with the profile
// seatbeltProfile writes from its policy, started by a short stage of
// plughost itself that sets its rlimits first:
//
//	plughost __sandbox-stage seatbelt-exec NOFILE /usr/bin/sandbox-exec -f PROFILE PLUGIN ARGS…
//
// Nothing of this has been run on a Mac by its authors: `plughost sandbox
// probe` there says whether it confines (see seatbelt_probe.go).

// platform is what this Mac offers.
type platform struct {
	// missing says why Seatbelt cannot be used ("" when it can).
	missing string
}

func probePlatform(*Options) platform {
	fi, err := os.Stat(sandboxExec)
	switch {
	case err != nil:
		return platform{missing: "no " + sandboxExec + ": " + err.Error()}
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return platform{missing: sandboxExec + " is not an executable file"}
	}
	return platform{}
}

// RunStageIfRequested runs the darwin stage (set the rlimits, exec
// sandbox-exec) or the probe child when plughost was started as one, and
// never returns then; otherwise it returns at once.
func RunStageIfRequested() {
	if len(os.Args) < 3 || os.Args[1] != StageArg {
		return
	}
	switch os.Args[2] {
	case seatbeltExecArg:
		nofile, argv, err := parseSeatbeltStage(os.Args[3:])
		if err == nil {
			err = seatbeltRlimits(nofile)
		}
		if err == nil {
			err = syscall.Exec(argv[0], argv, os.Environ())
		}
		fmt.Fprintf(os.Stderr, "plughost sandbox stage: %v\n", err)
		os.Exit(1)
	case seatbeltProbeArg:
		if err := seatbeltProbeChild(os.Args[3:], os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "plughost sandbox probe: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// seatbeltRlimits sets the open-files limit and forbids core dumps.
// syscall.Setrlimit, not x/sys/unix's: only the former tells syscall.Exec
// to keep the new RLIMIT_NOFILE rather than restore the one Go raised at
// start.
func seatbeltRlimits(nofile uint64) error {
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: nofile, Max: nofile}); err != nil {
		return fmt.Errorf("RLIMIT_NOFILE %d: %w", nofile, err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{}); err != nil {
		return fmt.Errorf("RLIMIT_CORE 0: %w", err)
	}
	return nil
}

// wrap starts the plugin under sandbox-exec with its profile, or, where
// sandbox-exec is missing, unconfined (refused under a strict policy).
func (l *Launcher) wrap(plugin string, pol *Policy, cmd *exec.Cmd, probe bool) (*Launch, error) {
	if why := l.platform().missing; why != "" {
		if pol.Strict {
			return nil, fmt.Errorf("strict policy: no Seatbelt for %s (%s): %w", plugin, why, ErrUnavailable)
		}
		l.log.Warn("NO SANDBOX: the plugin runs with the host's rights", "plugin", plugin, "why", why)
		return &Launch{
			Cmd:     cmd,
			Started: func(int) (*Report, error) { return &Report{Missing: map[Layer]string{LayerSeatbelt: why}}, nil },
			Exited:  func() string { return "" },
		}, nil
	}
	grants, err := RuntimeGrants(pol.Runtime, cmd.Path)
	if err != nil {
		return nil, fmt.Errorf("sandbox policy of %s: %w", plugin, err)
	}
	data, tmp, err := l.pluginDirs(plugin, pol, probe)
	if err != nil {
		return nil, err
	}
	profileFile := tmp + ".sb" // beside tmp, not in it: the plugin writes its tmp
	cleanup := func() { os.RemoveAll(tmp); os.Remove(profileFile) }

	path := cmd.Path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		path = r
	}
	profile, err := seatbeltProfile(plugin, pol, seatbeltPaths{
		Program: path, Interpreters: interpreters(path), Runtime: grants,
		Data: data, Tmp: tmp, Sock: envValue(cmd.Env, "PLUGIN_UNIX_SOCKET_DIR"),
	})
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("sandbox policy of %s: %w", plugin, err)
	}
	if err := os.WriteFile(profileFile, []byte(profile), 0o444); err != nil {
		cleanup()
		return nil, fmt.Errorf("sandbox: writing the Seatbelt profile: %w", err)
	}

	seatbeltCommand(cmd, l.opts.Self, l.opts.PassEnv, pol, profileFile, path, data, tmp)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}

	rep := &Report{Active: []Layer{LayerRlimits, LayerSeatbelt}, Missing: seatbeltMissing(pol, path)}
	watch := newStorageWatch(data, tmp, pol.dataSize(), pol.tmpSize(), l.storageCheckInterval())
	return &Launch{
		Cmd:   cmd,
		Usage: watch.Usage,
		Started: func(pid int) (*Report, error) {
			if !probe {
				watch.start(pid, false, func() {
					_ = syscall.Kill(-pid, syscall.SIGKILL) // the plugin leads its group (Setsid): its children too
					_ = syscall.Kill(pid, syscall.SIGKILL)
				})
			}
			args := []any{"plugin", plugin}
			for _, k := range slices.Sorted(mapKeys(rep.Missing)) {
				args = append(args, string(k), rep.Missing[k])
			}
			l.log.Warn("SANDBOX INCOMPLETE: plugin runs without some layers", args...)
			return rep, nil
		},
		Exited: func() string {
			over := watch.end()
			cleanup()
			return over
		},
	}, nil
}

// PluginOwner returns the host's own uid and gid: Seatbelt confines a
// plugin without changing its user.
func PluginOwner() (uid, gid int) { return os.Getuid(), os.Getgid() }
