package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin/runner"

	"github.com/plughost/plughost/internal/lane"
)

// A Launcher turns the prepared command of a plugin into the command to
// start; it is the seam where a sandbox wraps the plugin (for instance by
// re-executing the host into a restricted stage that then execs the plugin).
//
// The prepared command has the plugin's path and arguments, its environment
// (go-plugin's handshake variables included), no stdin (/dev/null), pipes as
// stdout and stderr, and SysProcAttr putting it in a new process group (and
// on Linux a parent-death signal). The returned Launch.Cmd must keep Env,
// Stdout and Stderr reaching the plugin, must not give it the host's stdin,
// and its process must lead its own process group (Setpgid or Setsid) for
// the whole group to be killed on unload; otherwise only that process is
// killed. It may be cmd itself, modified or not.
//
// When the prepared command has an extra file (cmd.ExtraFiles[0]), it is
// the plugin file as the host opened and hashed it: the command the
// Launcher returns must execute that file, not open cmd.Path again (the
// sandbox stage executes it through its /proc/self/fd link), so that the
// file approved is the file that runs. When cmd itself is returned, the
// manager makes it execute that file.
//
// When the prepared command's environment names PLUGHOST_LANE_FD=N
// (lane.EnvFD), cmd.ExtraFiles[N-3] is the plugin's end of its frame lane
// (internal/lane), and the plugin file, if any, is still ExtraFiles[0]. A
// Launcher that hands the lane to the plugin at another descriptor (the
// sandbox stage does) names that one in the plugin's environment; one
// that drops it leaves the plugin's calls on gRPC.
type Launcher func(plugin string, cmd *exec.Cmd) (*Launch, error)

// Launch is what a Launcher returns.
type Launch struct {
	// Cmd is the command to start. Required.
	Cmd *exec.Cmd
	// Started, when not nil, is called once Cmd has started and before the
	// go-plugin handshake, with its pid. It returns the names of the
	// sandbox layers confining the process (shown in PluginStatus.Sandbox
	// and logged), or an error, which fails the start: the process group is
	// killed.
	Started func(pid int) (layers []string, err error)
	// Exited, when not nil, is called once the process has been reaped. A
	// non-empty result explains the exit (for instance "killed by the
	// memory cgroup …") and is added to the exit's description.
	Exited func() string
	// Diagnose, when not nil, explains a failed go-plugin handshake (what
	// the launcher knows: a script's interpreter and what it needs, say);
	// an empty result, or none, gets the manager's own explanation.
	Diagnose func() string
	// CallTimeout, when positive, bounds each tool call of the plugin: a
	// call still running after it is cancelled and answered with an isError
	// result saying so.
	CallTimeout time.Duration
	// Storage, when not nil, returns what the running plugin holds of its
	// storage limits (PluginStatus.Storage).
	Storage func() []Storage
}

// procRunner is the manager's go-plugin runner.Runner: the one place where a
// plugin process starts. go-plugin's own runner passes the host's stdin to the
// plugin, kills only its pid, and notices its exit only once every holder of
// its stdout and stderr is gone; this one gives it /dev/null, kills its
// process group, and reaps it as soon as the plugin's main process exits.
type procRunner struct {
	name string // provider name
	path string
	// exe, when not nil, is the plugin file as opened and hashed: the
	// prepared command carries it as its first extra file, and executes
	// it rather than path when no Launcher replaces the command.
	exe *os.File
	// wrapper, when set, is the command serving the declared server at
	// path (Options.Wrapper).
	wrapper []string
	env     []string
	launch  Launcher
	cmd     *exec.Cmd // go-plugin's template: carries the handshake environment
	log     hclog.Logger
	onStart func()        // Options.OnEvent's EventStarted; nil for none
	out     *pluginOutput // logs the plugin's stdout and stderr

	// The read ends of the plugin's stdout and stderr, read by the
	// copiers (pluginOutput.copyStdout, copyStderr), which close
	// stdoutDone and stderrDone when they have logged the last line.
	stdout, stderr         *os.File
	stdoutDone, stderrDone chan struct{}
	handshake              *handshakeReader // the first line of stdout, for go-plugin
	exitedHook             func() string
	diagnoseHook           func() string    // Launch.Diagnose
	storageHook            func() []Storage // Launch.Storage

	// done is closed once the main process has exited, the rest of its
	// group has been killed, it has been reaped and its pipes are closed.
	done    chan struct{}
	exitErr error // the main process's exit (nil: status 0); set before done

	mu      sync.Mutex
	pid     int       // 0 until started
	group   procGroup // the process and its children, killed together
	reaped  bool      // after this, pid may name another process: never signal it
	killed  bool      // Kill was called before the process exited: the exit is deliberate
	aborted bool      // Kill came before Start: do not start
	layers  []string  // sandbox layers reported by Launch.Started
	// callTimeout bounds each call (Launch.CallTimeout); set before the
	// process starts, read-only afterwards.
	callTimeout time.Duration
	// noLane: calls stay on gRPC (Options.NoLane). hostLane is the host's
	// end of the plugin's frame lane until the instance takes it.
	noLane   bool
	hostLane *os.File
}

var _ runner.Runner = (*procRunner)(nil)

// pipeDrainTimeout is how long the reaper waits, after a plugin's process
// group is gone, for the rest of its stdout and stderr to be read and
// logged. A process that escaped the group and holds them open is cut off
// after it.
const pipeDrainTimeout = 2 * time.Second

// Start prepares the command, passes it through the Launcher, and starts it.
func (r *procRunner) Start(_ context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.aborted {
		return errors.New("plugin start cancelled")
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		_ = outR.Close()
		_ = outW.Close()
		return err
	}
	cmd := r.cmd
	cmd.Path = r.path
	cmd.Args = []string{r.path}
	if len(r.wrapper) > 0 { // a declared server: the wrapper serves it
		cmd.Path = r.wrapper[0]
		cmd.Args = append(slices.Clone(r.wrapper), r.path)
	} else if r.exe != nil {
		cmd.ExtraFiles = []*os.File{r.exe}
	}
	cmd.Env = append(cmd.Env, r.env...)
	pluginLane := r.prepareLane(cmd)
	cmd.Stdin = nil // /dev/null: the host's stdin is the MCP client's JSON-RPC
	cmd.Stdout = outW
	cmd.Stderr = errW
	cmd.SysProcAttr = sysProcAttr()
	var started func(int) ([]string, error)
	if r.launch != nil {
		var l *Launch
		l, err = r.launch(r.name, cmd)
		switch {
		case err != nil:
			err = fmt.Errorf("launcher: %w", err)
		case l == nil || l.Cmd == nil:
			err = errors.New("launcher returned no command")
		case l.Cmd.Stdin == os.Stdin:
			err = errors.New("launcher gave the plugin the host's stdin")
		default:
			cmd, started, r.exitedHook, r.callTimeout, r.diagnoseHook = l.Cmd, l.Started, l.Exited, l.CallTimeout, l.Diagnose
			r.storageHook = l.Storage
		}
	}
	if err == nil && cmd == r.cmd && len(cmd.ExtraFiles) > 0 && cmd.ExtraFiles[0] == r.exe {
		execByFD(cmd) // not wrapped: the file hashed is the file executed
	}
	if err == nil {
		err = cmd.Start()
	}
	_ = outW.Close() // the child has its copies
	_ = errW.Close()
	if pluginLane != nil {
		_ = pluginLane.Close()
	}
	if err != nil {
		_ = outR.Close()
		_ = errR.Close()
		r.closeLane()
		if r.exitedHook != nil {
			r.exitedHook()
		}
		return err
	}
	r.stdout, r.stderr = outR, errR
	r.stdoutDone, r.stderrDone = make(chan struct{}), make(chan struct{})
	r.handshake = newHandshakeReader()
	go func() {
		defer close(r.stdoutDone)
		r.out.copyStdout(outR, r.handshake)
	}()
	go func() {
		defer close(r.stderrDone)
		r.out.copyStderr(errR)
	}()
	r.pid = cmd.Process.Pid
	if r.onStart != nil {
		r.onStart()
	}
	if r.group, err = newProcGroup(r.pid); err != nil {
		r.log.Warn("plugin has no process group of its own; only its main process will be killed", "pid", r.pid, "error", err)
	}
	go r.reap(cmd)
	if started == nil {
		return nil
	}
	// Started may wait for the sandbox stage: let Kill in meanwhile.
	r.mu.Unlock()
	layers, err := started(r.pid)
	r.mu.Lock()
	if err != nil {
		r.killGroupLocked()
		return err
	}
	r.layers = layers
	r.log.Info("plugin started", "pid", r.pid, "sandbox", strings.Join(layers, ","))
	return nil
}

// reap waits for the main process to exit, kills the rest of its group,
// reaps it, and closes the pipes once drained.
func (r *procRunner) reap(cmd *exec.Cmd) {
	// Where the platform allows it, the group is killed while the exited
	// main process is still a zombie, so its pid (the group's id) cannot
	// have been reused.
	if waitExited(r.pid) {
		r.mu.Lock()
		r.killGroupLocked()
		r.mu.Unlock()
	}
	err := cmd.Wait()
	r.mu.Lock()
	r.killGroupLocked() // where waitExited could not wait without reaping
	r.reaped = true
	r.group.release()
	r.mu.Unlock()

	timer := time.NewTimer(pipeDrainTimeout)
	defer timer.Stop()
	for _, p := range []struct {
		f    *os.File
		done chan struct{}
	}{{r.stdout, r.stdoutDone}, {r.stderr, r.stderrDone}} {
		select {
		case <-p.done:
		case <-timer.C:
			r.log.Warn("a process of the plugin outlived it and holds its output open; closing it")
		}
		_ = p.f.Close() // ends the copier's read
		<-p.done
	}
	r.out.finish()
	if r.exitedHook != nil {
		if why := r.exitedHook(); why != "" {
			if err == nil {
				err = errors.New(why)
			} else {
				err = fmt.Errorf("%w (%s)", err, why)
			}
		}
	}
	r.exitErr = err
	r.mu.Lock()
	r.closeLane()
	r.mu.Unlock()
	close(r.done)
}

// prepareLane hands the plugin a frame lane (internal/lane) unless
// r.noLane: the plugin's end goes in cmd.ExtraFiles, at the descriptor
// lane.EnvFD names in its environment, and the host's end waits in
// r.hostLane for the instance (takeLane). It returns the plugin's end,
// which the host closes once the child has its copy. Without a
// socketpair (another platform), calls stay on gRPC.
func (r *procRunner) prepareLane(cmd *exec.Cmd) *os.File {
	if r.noLane {
		return nil
	}
	host, plugin, err := lane.Pair()
	if err != nil {
		r.log.Debug("no frame lane: calls go on gRPC", "error", err)
		return nil
	}
	r.hostLane = host
	cmd.ExtraFiles = append(cmd.ExtraFiles, plugin)
	cmd.Env = append(cmd.Env, lane.Env(2+len(cmd.ExtraFiles)))
	return plugin
}

// takeLane returns the host's end of the plugin's frame lane, once; nil
// when there is none or it was taken.
func (r *procRunner) takeLane() *os.File {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.hostLane
	r.hostLane = nil
	return f
}

// closeLane closes the host's end of the lane if nobody took it. Under
// r.mu.
func (r *procRunner) closeLane() {
	if r.hostLane != nil {
		_ = r.hostLane.Close()
		r.hostLane = nil
	}
}

// killGroupLocked kills the plugin's process group (its job object on
// Windows), or only its process when it has none. r.mu must be held.
func (r *procRunner) killGroupLocked() {
	if r.pid == 0 || r.reaped {
		return
	}
	if err := r.group.kill(r.pid); err != nil {
		r.log.Warn("killing plugin process group", "pid", r.pid, "error", err)
	}
}

// Wait waits until the plugin has exited and been reaped. A deliberate kill
// is reported as nil so that go-plugin does not log it as an error; the real
// exit is in exitErr.
func (r *procRunner) Wait(ctx context.Context) error {
	select {
	case <-r.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.killed {
		return nil
	}
	return r.exitErr
}

// Kill kills the plugin's process group; it does not wait. It may be called
// any number of times, before Start (which then refuses to start) too.
func (r *procRunner) Kill(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	// A process that had exited already, or had closed its stdout before
	// its handshake (go-plugin kills it on reading that EOF, a moment
	// before the kernel shows a dying process as exited), was not killed
	// by us: its exit stays its own (selfExit).
	early := r.pid != 0 && (hasExited(r.pid) || r.handshake != nil && r.handshake.endedEmpty())
	r.killed = r.killed || !r.reaped && !early
	r.aborted = true
	r.killGroupLocked()
	return nil
}

// exited returns the channel closed once the plugin has exited and its
// process group is gone.
func (r *procRunner) exited() <-chan struct{} { return r.done }

// exitDescription describes how the plugin exited, once it has.
func (r *procRunner) exitDescription() string {
	if r.exitErr == nil {
		return "exit status 0"
	}
	return r.exitErr.Error()
}

// Stdout is what go-plugin reads of the plugin's stdout: its first line,
// the handshake. The rest is logged (pluginOutput.copyStdout).
func (r *procRunner) Stdout() io.ReadCloser { return r.handshake }

// Stderr is empty for go-plugin, which would log the plugin's stderr lines
// that are not hclog JSON at DEBUG: pluginOutput.copyStderr logs them.
func (r *procRunner) Stderr() io.ReadCloser { return io.NopCloser(strings.NewReader("")) }

// Name is the provider name; go-plugin names it in its own log lines.
func (r *procRunner) Name() string { return r.name }

// ID is the plugin's pid, or "" before it has started.
func (r *procRunner) ID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pid == 0 {
		return ""
	}
	return strconv.Itoa(r.pid)
}

// Storage returns what the running plugin holds of its storage limits, as
// the Launcher reports it; nil when it reports none.
func (r *procRunner) Storage() func() []Storage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.storageHook
}

// Layers returns the sandbox layers the Launcher reported.
func (r *procRunner) Layers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.layers
}

// PID is the plugin's pid, or 0 before it has started.
func (r *procRunner) PID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pid
}

// Diagnose explains the usual reasons for a failed handshake of a native
// plugin; go-plugin appends it to the error. The launcher's explanation
// comes first. A declared server's wrapper gets none: the handshake is
// plughost's own business, and the server's stderr says why it failed.
func (r *procRunner) Diagnose(context.Context) string {
	if len(r.wrapper) > 0 {
		return "" // a declared server: its start error is its exit and stderr (startFailure)
	}
	if r.diagnoseHook != nil {
		if why := r.diagnoseHook(); why != "" {
			return why
		}
	}
	return fmt.Sprintf("(%s must be a plughost plugin built for %s/%s, and must print nothing to stdout before the go-plugin handshake)",
		r.path, runtime.GOOS, runtime.GOARCH)
}

// The plugin runs on this host: addresses need no translation.
func (r *procRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *procRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}
