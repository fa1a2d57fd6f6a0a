//go:build !linux && !darwin && !windows

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
)

// RunStageIfRequested returns at once: there is no sandbox stage on this
// platform.
func RunStageIfRequested() {}

type platform struct{}

func probePlatform(*Options) platform { return platform{} }

// wrap runs the plugin unconfined, or refuses under a strict policy: there is
// no sandbox on this platform.
func (l *Launcher) wrap(plugin string, pol *Policy, cmd *exec.Cmd, _ bool) (*Launch, error) {
	if pol.Strict {
		return nil, fmt.Errorf("strict policy: no sandbox on %s for %s: %w", platformName(), plugin, ErrUnavailable)
	}
	l.log.Warn("NO SANDBOX on this platform: the plugin runs with the host's rights", "plugin", plugin, "platform", platformName())
	return &Launch{
		Cmd: cmd,
		Started: func(int) (*Report, error) {
			return &Report{Missing: map[Layer]string{"sandbox": "no sandbox on " + platformName()}}, nil
		},
		Exited: func() string { return "" },
	}, nil
}

// Probe reports that this platform has no sandbox.
func Probe(opts *Options) (*Support, error) {
	if _, err := New(opts); err != nil {
		return nil, err
	}
	return &Support{Platform: platformName(), Namespaces: "not Linux"}, nil
}

// PluginOwner returns the host's own uid and gid: without a sandbox,
// plugins run as the host does.
func PluginOwner() (uid, gid int) { return os.Getuid(), os.Getgid() }
