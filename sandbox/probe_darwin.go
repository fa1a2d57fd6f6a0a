package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
)

// Probe reports whether Seatbelt confines a plugin on this Mac: it starts
// plughost itself as a probe child under the profile of the default
// policy, which tries to read and write outside its grants and to connect
// to a TCP listener of the host, and judges what it reports
// (judgeSeatbeltProbe).
func Probe(opts *Options) (*Support, error) {
	l, err := New(opts)
	if err != nil {
		return nil, err
	}
	s := &Support{Platform: platformName(), Root: os.Geteuid() == 0, Namespaces: "not Linux"}
	if l.platform().missing != "" {
		return s, nil // Default nil: no sandbox
	}
	outside := filepath.Join(l.opts.StateDir, "probe-outside")
	if err := os.MkdirAll(outside, 0o700); err != nil {
		return nil, err
	}
	defer os.RemoveAll(outside)
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("not for plugins\n"), 0o600); err != nil {
		return nil, err
	}
	written := filepath.Join(outside, "written")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("probe: a listener to connect to: %w", err)
	}
	defer ln.Close()

	cmd := &exec.Cmd{Path: l.opts.Self, Args: []string{l.opts.Self, StageArg, seatbeltProbeArg, secret, written, ln.Addr().String()}}
	launch, err := l.wrap("probe", &Policy{}, cmd, true)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	launch.Cmd.Stdout, launch.Cmd.Stderr = &out, os.Stderr
	if err := launch.Cmd.Start(); err != nil {
		launch.Exited()
		return nil, fmt.Errorf("starting the probe under sandbox-exec: %w", err)
	}
	rep, err := launch.Started(launch.Cmd.Process.Pid)
	waitErr := launch.Cmd.Wait()
	launch.Exited()
	if err != nil {
		return nil, err
	}
	if waitErr != nil {
		return nil, errors.Join(errors.New("the probe child failed under sandbox-exec (its profile may not load on this macOS: see above)"), waitErr)
	}
	_, statErr := os.Stat(written)
	s.Default = rep
	s.Checks = judgeSeatbeltProbe(out.Bytes(), statErr == nil)
	return s, nil
}
