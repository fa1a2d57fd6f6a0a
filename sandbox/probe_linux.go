package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// Probe reports what this machine supports, by running the stage with the
// default policy up to the point where it would exec a plugin.
func Probe(opts *Options) (*Support, error) {
	l, err := New(opts)
	if err != nil {
		return nil, err
	}
	s := &Support{Platform: platformName(), Root: l.platform().root, Namespaces: l.platform().nsErr, LandlockABI: landlockABI()}
	for _, c := range []struct{ name, dir string }{
		{"v1 memory", l.platform().cgroups.memory}, {"v1 pids", l.platform().cgroups.pids}, {"v1 cpu", l.platform().cgroups.cpu}, {"v2", l.platform().cgroups.v2},
	} {
		if c.dir != "" {
			s.Cgroups = append(s.Cgroups, c.name)
		}
	}
	launch, err := l.wrap("probe", &Policy{}, &exec.Cmd{Path: l.opts.Self, Args: []string{l.opts.Self}}, true)
	if err != nil {
		return nil, err
	}
	launch.Cmd.Stderr = os.Stderr
	if err := launch.Cmd.Start(); err != nil {
		launch.Exited()
		return nil, fmt.Errorf("starting the stage: %w", err)
	}
	rep, err := launch.Started(launch.Cmd.Process.Pid)
	waitErr := launch.Cmd.Wait()
	launch.Exited()
	if err != nil {
		return nil, err
	}
	if waitErr != nil {
		return nil, errors.Join(errors.New("the probe stage failed"), waitErr)
	}
	s.Default = rep
	return s, nil
}
