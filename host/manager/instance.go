package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/host/tool"
)

// instance is one process of a plugin, from its start to its reaping. A
// Client of go-plugin cannot be restarted, so every (re)start is a new
// instance.
type instance struct {
	name string
	path string
	// exe is the plugin file opened and hashed, which the process
	// executes (procRunner.exe); nil: its path is executed.
	exe    *os.File
	opts   *Options
	log    hclog.Logger
	out    *pluginOutput // logs the plugin's output; keeps its stderr's excerpt
	client *plugin.Client

	mu      sync.Mutex
	runner  *procRunner // set by runnerFunc
	tmpDir  string      // go-plugin's socket directory
	aborted bool        // abort came before the runner existed

	// noHandshake is set by stop when the process never completed its
	// handshake: go-plugin's warning that it did not exit gracefully is
	// then no news (see pluginLogger).
	noHandshake atomic.Bool

	// Set by connect; read-only afterwards.
	pp    *pluginclient.Client
	desc  pluginclient.Description
	lists lists // as listed at the start

	watchCancel context.CancelFunc
	watchDone   chan struct{} // closed when the WatchTools goroutine ends
	changed     chan struct{} // the plugin announced changes, pending in kinds
	kindsMu     sync.Mutex
	kinds       pluginclient.Change // what changed since running last listed

	callsMu  sync.Mutex
	inFlight int
	stopping bool            // no new calls; set by stop
	unloaded bool            // stop was deliberate, not the cleanup of a death
	idle     chan struct{}   // closed when stopping and inFlight reaches 0
	lastUsed time.Time       // when a call last entered or left
	subs     map[string]bool // resources the plugin is subscribed to

	stopOnce sync.Once
	// advised holds the next steps adviseCall logged (at most
	// maxAdvised), advisedOff that it stopped advising.
	advisedMu  sync.Mutex
	advised    map[string]bool
	advisedOff bool
}

// launch starts a plugin process and brings it to the point where what it
// offers is known and its WatchTools stream is open. On error nothing is left
// running. Cancelling ctx aborts the start.
func launch(ctx context.Context, opts *Options, name, path string, exe *os.File) (*instance, error) {
	in := &instance{
		name:     name,
		path:     path,
		exe:      exe,
		opts:     opts,
		log:      opts.Logger.With("plugin", name),
		out:      newPluginOutput(opts.Logger, name),
		changed:  make(chan struct{}, 1),
		idle:     make(chan struct{}),
		lastUsed: time.Now(),
	}
	in.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  pluginclient.Handshake,
		VersionedPlugins: pluginclient.PluginSets(&opts.Limits),
		RunnerFunc:       in.runnerFunc,
		UnixSocketConfig: &plugin.UnixSocketConfig{TempDir: opts.SocketDir},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		StartTimeout:     opts.StartTimeoutOf(name),
		Logger:           pluginLogger{opts.Logger, &in.noHandshake},
		// A Go plugin's os.Stdout and os.Stderr once it serves.
		SyncStdout: in.out.syncStdout,
		SyncStderr: in.out.syncStderr,
	})
	stopAbort := context.AfterFunc(ctx, in.abort)
	err := in.connect(ctx)
	stopAbort()
	if err != nil {
		if errors.Is(err, pluginclient.ErrPluginClosed) {
			// The plugin dropped the connection: it is most likely dying.
			// Its exit, once seen, is its own, not the kill of stop.
			in.awaitExit(exitWait)
		}
		in.stop(0, false)
		d := in.selfExit()
		if why := in.startFailure(ctx, err, d); why != nil {
			err = why
		} else if strings.HasPrefix(d, "signal: ") {
			err = &killedStarting{fmt.Errorf("%w (the plugin was killed while starting: %s)", err, d)}
		} else if d != "" {
			err = fmt.Errorf("%w (the plugin exited by itself: %s)", err, d)
		}
		return nil, withStderr(err, in.stderrForError())
	}
	wctx, cancel := context.WithCancel(context.Background())
	in.watchCancel = cancel
	in.watchDone = make(chan struct{})
	go in.watch(wctx)
	return in, nil
}

// awaitExit waits at most d for the plugin's process to exit.
func (in *instance) awaitExit(d time.Duration) {
	r := in.getRunner()
	if r == nil || r.PID() == 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-r.exited():
	case <-timer.C:
	}
}

// killedStarting is the error of a start that failed because a signal
// the host did not send ended the process (an operator's or the OOM
// killer's SIGKILL): a death to restart after, not a broken plugin to
// leave until its file changes, as an exit with a status is.
type killedStarting struct{ error }

func (e *killedStarting) Unwrap() error { return e.error }

// selfExit describes the exit of a stopped instance's process when it was
// not our kill ("exit status 4"); "" if it never started or was killed.
func (in *instance) selfExit() string {
	r := in.getRunner()
	if r == nil || r.PID() == 0 {
		return ""
	}
	select {
	case <-r.exited():
	default:
		return ""
	}
	d := r.exitDescription()
	r.mu.Lock()
	killed := r.killed
	r.mu.Unlock()
	if killed && d == "signal: killed" {
		return ""
	}
	return d
}

// runnerFunc is go-plugin's RunnerFunc: every plugin process starts through
// the procRunner it returns.
func (in *instance) runnerFunc(_ hclog.Logger, cmd *exec.Cmd, tmpDir string) (runner.Runner, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.tmpDir = tmpDir
	if in.aborted {
		return nil, errors.New("plugin start cancelled")
	}
	in.runner = &procRunner{
		name:    in.name,
		path:    in.path,
		wrapper: in.wrapper(),
		exe:     in.exe,
		env:     in.opts.Env,
		noLane:  in.opts.NoLane,
		launch:  in.opts.Launcher,
		cmd:     cmd,
		log:     in.log,
		out:     in.out,
		done:    make(chan struct{}),
	}
	if f := in.opts.OnEvent; f != nil {
		in.runner.onStart = func() { f(in.name, EventStarted) }
	}
	return in.runner, nil
}

// wrapper is the command serving the plugin when it is a declared server,
// else nil.
func (in *instance) wrapper() []string {
	if _, ok := declared.Name(filepath.Base(in.path)); ok {
		return in.opts.Wrapper
	}
	return nil
}

// abort kills the process being started, or stops it from starting.
func (in *instance) abort() {
	in.mu.Lock()
	in.aborted = true
	r := in.runner
	in.mu.Unlock()
	if r != nil {
		_ = r.Kill(context.Background())
	}
}

func (in *instance) getRunner() *procRunner {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.runner
}

// connect performs the handshake, Describe and lists what the plugin
// offers.
func (in *instance) connect(ctx context.Context) error {
	rpc, err := in.client.Client()
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	raw, err := rpc.Dispense(pluginclient.PluginName)
	if err != nil {
		return fmt.Errorf("dispense %q: %w", pluginclient.PluginName, err)
	}
	pp, ok := raw.(*pluginclient.Client)
	if !ok {
		return fmt.Errorf("dispense %q: got %T, want *pluginclient.Client", pluginclient.PluginName, raw)
	}
	ctx, cancel := context.WithTimeout(ctx, in.opts.StartTimeoutOf(in.name))
	defer cancel()
	if f := in.getRunner().takeLane(); f != nil {
		pp.OfferLane(f, in.laneBroke)
	}
	desc, err := pp.Describe(ctx, in.opts.HostVersion) // ErrContractVersion unless it matches the handshake
	if err != nil {
		return fmt.Errorf("describe: %w", err)
	}
	in.log.Debug("plugin described", "calls", map[bool]string{true: "frame lane", false: "gRPC"}[pp.OnLane()])
	if desc.Cut {
		in.log.Warn("the plugin's title or description is too long: the host keeps what fits", "max_title_bytes", pluginclient.MaxTitle, "max_description_bytes", pluginclient.MaxDescription)
		desc.Cut = false // logged; the rest compares descriptions by what they hold (a cached one's included)
	}
	in.pp, in.desc = pp, desc
	in.lists, err = in.list(ctx, lists{}, everything)
	return err
}

// laneBroke is the plugin's breach of its frame lane's framing (a
// malformed or oversized frame): its calls then in flight failed, and
// the plugin, not fit to run, is killed, so that its supervisor restarts
// it (the restart is logged as the exit of a kill).
func (in *instance) laneBroke(err error) {
	in.log.Error("the plugin broke its frame lane; restarting it", "error", err)
	if r := in.getRunner(); r != nil {
		_ = r.Kill(context.Background())
	}
}

// listTools asks the plugin for its tools. Definitions without a name, and
// repeated names, are logged and skipped.
func (in *instance) listTools(ctx context.Context, refused *[]Refusal) ([]tool.Def, error) {
	raws, err := in.pp.ListTools(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tools: %w", err)
	}
	return named(in, "tool", "name", raws, refused, func(name string, raw json.RawMessage) tool.Def {
		return tool.Def{Name: name, JSON: raw}
	}), nil
}

// watch relays the plugin's announcements until ctx ends or the stream
// breaks: changed lists to in.changed (the kinds gathered in in.kinds),
// updated resources straight to the publisher.
func (in *instance) watch(ctx context.Context) {
	defer close(in.watchDone)
	up, _ := in.opts.Publisher.(ResourceUpdater)
	err := in.pp.Watch(ctx, func(c pluginclient.Change) {
		if up != nil {
			for _, uri := range c.Updated {
				up.ResourceUpdated(in.name, uri)
			}
		}
		if !c.Tools && !c.Resources && !c.Prompts {
			return
		}
		in.kindsMu.Lock()
		in.kinds.Tools = in.kinds.Tools || c.Tools
		in.kinds.Resources = in.kinds.Resources || c.Resources
		in.kinds.Prompts = in.kinds.Prompts || c.Prompts
		in.kindsMu.Unlock()
		select {
		case in.changed <- struct{}{}:
		default: // one pending announcement is enough
		}
	})
	if err != nil && ctx.Err() == nil {
		in.log.Debug("the plugin's change watch ended", "error", err)
	}
}

// takeKinds returns what changed since it was last called, and forgets it.
func (in *instance) takeKinds() pluginclient.Change {
	in.kindsMu.Lock()
	defer in.kindsMu.Unlock()
	k := in.kinds
	in.kinds = pluginclient.Change{}
	return k
}

// exited is closed once the plugin's process has exited and been reaped.
func (in *instance) exited() <-chan struct{} { return in.getRunner().exited() }

// pid is the plugin's pid (0 if it never started).
func (in *instance) pid() int {
	if r := in.getRunner(); r != nil {
		return r.PID()
	}
	return 0
}

// stop unloads the instance: no new calls; calls in flight get until
// timeout to finish; go-plugin asks the plugin to shut down; at timeout its
// process group is killed. It returns once the process is reaped and its
// socket directory removed. deliberate is false when cleaning up after the
// plugin died or failed to start. Safe to call more than once.
func (in *instance) stop(timeout time.Duration, deliberate bool) {
	in.stopOnce.Do(func() {
		deadline := time.Now().Add(timeout)
		in.callsMu.Lock()
		if !in.stopping { // idleFor may have marked it already
			in.stopping = true
			in.unloaded = deliberate
			if in.inFlight == 0 {
				close(in.idle)
			}
		}
		in.callsMu.Unlock()

		r := in.getRunner()
		if r != nil {
			timer := time.NewTimer(timeout)
			select {
			case <-in.idle:
			case <-r.exited():
			case <-timer.C:
			}
			timer.Stop()
		}
		if in.watchCancel != nil {
			in.watchCancel()
		}
		if r != nil {
			kill := time.AfterFunc(time.Until(deadline), func() { _ = r.Kill(context.Background()) })
			in.noHandshake.Store(in.client.ReattachConfig() == nil) // no address: go-plugin kills at once
			in.client.Kill()                                        // graceful shutdown; returns once the process is reaped
			kill.Stop()
			_ = r.Kill(context.Background()) // no-op once reaped
		}
		if in.watchDone != nil {
			<-in.watchDone
		}
		in.mu.Lock()
		dir := in.tmpDir
		in.mu.Unlock()
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	})
}

// entry is what enter did.
type entry int

const (
	entryOK       entry = iota // the request is registered: call leave
	entryStopping              // the instance is stopping: another comes
	entryFull                  // Options.MaxInFlight requests are running
)

// enter registers a request, unless the instance is stopping or full.
func (in *instance) enter() entry {
	in.callsMu.Lock()
	defer in.callsMu.Unlock()
	switch {
	case in.stopping:
		return entryStopping
	case in.inFlight >= in.opts.MaxInFlight:
		return entryFull
	}
	in.inFlight++
	in.lastUsed = time.Now()
	return entryOK
}

func (in *instance) leave() {
	in.callsMu.Lock()
	defer in.callsMu.Unlock()
	in.inFlight--
	in.lastUsed = time.Now()
	if in.inFlight == 0 && in.stopping {
		close(in.idle)
	}
}

// exitWait is how long a call broken by the plugin waits for the plugin's
// exit to be observed, so that its error can name the exit.
const exitWait = time.Second

// callError explains why a call failed (subject names what was called:
// `tool "x"`), for the catalog and tool.Outcome: the plugin was unloaded
// or exited (tool.ErrGone, naming the exit status), or a message was over
// a size limit, the host's (Options.Limits: pluginclient.ErrTooLarge) or
// the plugin's own gRPC limit (tool.ErrTooLarge). Other errors are
// returned wrapped with the plugin's name; the catalog adds the tool's.
func (in *instance) callError(subject string, err error) error {
	if errors.Is(err, pluginclient.ErrTooLarge) {
		return tool.Errorf(tool.ErrTooLarge, "%s of provider %q: plugin %s: %w (the operator sets the limit with limits { result_size })",
			subject, in.name, in.name, err)
	}
	if status.Code(err) == codes.ResourceExhausted {
		return tool.Errorf(tool.ErrTooLarge, "%s of provider %q: plugin %s: %w", subject, in.name, in.name, err)
	}
	if !errors.Is(err, pluginclient.ErrPluginClosed) {
		return fmt.Errorf("plugin %s: %w", in.name, err)
	}
	in.callsMu.Lock()
	unloaded := in.unloaded
	in.callsMu.Unlock()
	if unloaded {
		return tool.Errorf(tool.ErrGone, "%s of provider %q: plugin %s was unloaded: %w", subject, in.name, in.name, err)
	}
	r := in.getRunner()
	timer := time.NewTimer(exitWait)
	defer timer.Stop()
	select {
	case <-r.exited():
		return tool.Errorf(tool.ErrGone, "%s of provider %q: plugin %s exited: %s: %w", subject, in.name, in.name, r.exitDescription(), err)
	case <-timer.C:
		return tool.Errorf(tool.ErrGone, "%s of provider %q: plugin %s: %w", subject, in.name, in.name, err)
	}
}

// limit is a call's time limit: its length (0 for none) and the timer
// that enforces it.
type limit struct {
	d     time.Duration
	timer *time.Timer // nil for none
}

// lift stops enforcing the limit (the call went on as a task).
func (l limit) lift() {
	if l.timer != nil {
		l.timer.Stop()
	}
}

// limit applies the plugin's call time limit to ctx, if it has one; call
// release once the call is over.
func (in *instance) limit(ctx context.Context) (_ context.Context, lim limit, release func()) {
	r := in.getRunner()
	if r == nil || r.callTimeout <= 0 {
		return ctx, limit{}, func() {}
	}
	// A timer, not a deadline: gRPC would send a deadline to the plugin
	// and could report it before our context records why it ended.
	ctx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(r.callTimeout, func() { cancel(errCallTimeout) })
	return ctx, limit{r.callTimeout, timer}, func() { timer.Stop(); cancel(nil) }
}

// failure explains a failed call of toolName: past its time limit, ended
// by its context, or callError's reasons.
func (in *instance) failure(ctx context.Context, toolName string, limit time.Duration, err error) error {
	if err := surfaceError(fmt.Sprintf("tool %q", toolName), in.name, limit, err); err != nil {
		return err
	}
	if errors.Is(context.Cause(ctx), errCallTimeout) {
		return tool.Errorf(tool.ErrTimedOut, "tool %q of plugin %s did not finish within its timeout of %v and was cancelled",
			toolName, in.name, limit)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("plugin %s: %w", in.name, err)
	}
	return in.callError(fmt.Sprintf("tool %q", toolName), err)
}

// errCallTimeout is the cause of a call's context ended by Launch.CallTimeout.
var errCallTimeout = errors.New("call timeout")

// stderrError is an error of a plugin followed by the excerpt of its
// stderr (see excerpt).
type stderrError struct {
	err    error
	stderr string
}

// withStderr adds the excerpt of the plugin's stderr to err, if there is one.
func withStderr(err error, stderr string) error {
	if stderr == "" {
		return err
	}
	return &stderrError{err: err, stderr: stderr}
}

func (e *stderrError) Error() string { return e.err.Error() + e.quoted() }

// quoted is what Error adds to the plugin's error: the excerpt, quoted.
func (e *stderrError) quoted() string { return fmt.Sprintf(" (stderr: %q)", e.stderr) }
func (e *stderrError) Unwrap() error  { return e.err }

// splitStderr returns err's text without the excerpt of the plugin's
// stderr it carries, and that excerpt ("" when none): a status shows them
// apart, while a log line keeps err whole.
func splitStderr(err error) (text, stderr string) {
	text = err.Error()
	var se *stderrError
	if errors.As(err, &se) {
		text = strings.Replace(text, se.quoted(), "", 1)
		stderr = se.stderr
	}
	return text, stderr
}
