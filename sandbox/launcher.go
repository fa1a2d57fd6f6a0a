package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/plughost/plughost/grants"
)

// StageArg is the hidden first argument that makes plughost run the sandbox
// stage instead of a command. main must call [RunStageIfRequested] before
// anything else.
const StageArg = "__sandbox-stage"

// Options configure a Launcher. A nil *Options, and every zero field, means
// the default documented on the field.
type Options struct {
	// Self is the plughost executable the stage re-executes. "" means
	// os.Executable().
	Self string
	// StateDir is the host's state directory; plugin <name> gets
	// <StateDir>/<name>/data, kept across restarts. Required.
	StateDir string
	// TmpDir is where each plugin process gets a tmp directory of its own
	// (its TMPDIR), <TmpDir>/<name>-<random>, removed when the process
	// exits; a host's run directory, so that a host that dies leaves them
	// where the next one sweeps them. "" means <StateDir>/<name>/tmp-<random>.
	TmpDir string
	// PassEnv names host environment variables passed to every plugin, such
	// as the go-plugin handshake cookie. Variables starting with PLUGIN_
	// (go-plugin's protocol) are always passed.
	PassEnv []string
	// Logger receives warnings about missing layers. Nil discards them.
	Logger hclog.Logger
	// NoNamespaces behaves as if the kernel refused to create namespaces,
	// as under Docker's default seccomp profile: plugins then get Landlock,
	// seccomp and rlimits only (and strict policies refuse to start).
	NoNamespaces bool
	// Resolver resolves the names of a plugin's allow_net list at launch
	// (see [NetworkGrants]). Nil means net.DefaultResolver, the host's own.
	Resolver *net.Resolver
	// Context bounds the work Wrap does before the plugin starts that may
	// wait on the network (resolving allow_net's names): when it ends,
	// Wrap fails. The host passes its own, which its shutdown cancels.
	// Nil means context.Background().
	Context context.Context
	// StageTimeout bounds how long Launch.Started waits for the sandbox
	// stage to confine itself and exec the plugin (milliseconds, as a
	// rule): past it the stage's process group is killed and Started
	// fails wrapping [ErrStageTimeout]. 0 means [DefaultStageTimeout].
	StageTimeout time.Duration
	// StorageCheckInterval is the least pause between two walks of a
	// running plugin's data directory (see [Usage]): a plugin found over
	// Policy.DataSize is killed. 0 means [DefaultStorageCheckInterval].
	StorageCheckInterval time.Duration
}

// DefaultStageTimeout is Options.StageTimeout's default.
const DefaultStageTimeout = 30 * time.Second

// ErrStageTimeout is returned (wrapped) by Launch.Started when the sandbox
// stage did not report within Options.StageTimeout.
var ErrStageTimeout = errors.New("sandbox stage timed out")

func (l *Launcher) storageCheckInterval() time.Duration {
	if l.opts.StorageCheckInterval > 0 {
		return l.opts.StorageCheckInterval
	}
	return DefaultStorageCheckInterval
}

func (l *Launcher) stageTimeout() time.Duration {
	if l.opts.StageTimeout > 0 {
		return l.opts.StageTimeout
	}
	return DefaultStageTimeout
}

// Launch is a plugin command wrapped in the sandbox.
type Launch struct {
	// Cmd starts the stage, which confines itself and execs the plugin.
	Cmd *exec.Cmd
	// Started must be called once Cmd has started: it puts the process in
	// its cgroups, lets the stage go on, and waits until the stage has
	// exec'd the plugin (or failed, or refused under a strict policy), at
	// most Options.StageTimeout.
	Started func(pid int) (*Report, error)
	// Exited must be called once the process has been reaped: it removes
	// the plugin's cgroups, and returns why the sandbox killed it (for
	// instance "the memory cgroup's limit of 512 MiB was reached"), or "".
	Exited func() string
	// Usage, when not nil, returns what the running plugin holds of its
	// storage limits (its data directory as last walked, its tmp).
	Usage func() Usage
}

// Launcher wraps plugin commands in the sandbox. Create it with New.
type Launcher struct {
	opts Options
	log  hclog.Logger

	probe sync.Once
	plat  platform // what this machine offers: read it with platform()
}

// New returns a Launcher. It checks Options; what this machine supports is
// probed once, when the first plugin is wrapped (the probe starts a
// process, which a host that starts no plugin, lazy ones published from
// its catalog cache, need not wait for).
func New(opts *Options) (*Launcher, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.StateDir == "" {
		return nil, errors.New("sandbox: Options.StateDir is required")
	}
	abs, err := filepath.Abs(o.StateDir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: state directory: %w", err)
	}
	o.StateDir = abs
	if err := os.MkdirAll(o.StateDir, 0o711); err != nil {
		return nil, fmt.Errorf("sandbox: state directory: %w", err)
	}
	if o.Self == "" {
		if o.Self, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("sandbox: cannot find the plughost executable to re-execute: %w", err)
		}
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	l := &Launcher{opts: o, log: o.Logger}
	return l, nil
}

// context is Options.Context, context.Background() when nil.
func (l *Launcher) context() context.Context {
	if l.opts.Context != nil {
		return l.opts.Context
	}
	return context.Background()
}

// platform is what this machine offers, probed at the first call.
func (l *Launcher) platform() *platform {
	l.probe.Do(func() { l.plat = probePlatform(&l.opts) })
	return &l.plat
}

// Wrap turns the prepared command of plugin (its path, arguments and
// environment; stdin /dev/null; stdout and stderr pipes) into a Launch
// confined by pol. A nil pol is the default policy.
//
// Under a strict policy Wrap, or later Started, fails wrapping
// [ErrUnavailable] when a needed layer is missing: every layer except the
// cgroups (which RLIMIT_DATA and RLIMIT_NPROC back up), the network
// namespace when the policy allows network, the user namespace when the
// host runs as root (the stage then drops to uid 65534 itself), and
// write-xor-exec when the policy allows a JIT ([Policy.JIT]: the report
// then lists it as missing, with the reason).
func (l *Launcher) Wrap(plugin string, pol *Policy, cmd *exec.Cmd) (*Launch, error) {
	if pol == nil {
		pol = &Policy{}
	}
	if err := pol.Check(); err != nil {
		return nil, fmt.Errorf("sandbox policy of %s: %w", plugin, err)
	}
	pol = l.withNetwork(plugin, pol, cmd)
	pol, grantsJSON := pol.granted(plugin)
	cmd.Env = append(cmd.Env, grants.Env+"="+grantsJSON)
	if pol.Disabled {
		l.log.Warn("SANDBOX DISABLED by policy: the plugin runs with the host's rights", "plugin", plugin)
		return &Launch{Cmd: cmd, Started: func(int) (*Report, error) { return &Report{}, nil }, Exited: func() string { return "" }}, nil
	}
	return l.wrap(plugin, pol, cmd, false)
}

// withNetwork returns pol with what name resolution and TLS need
// (NetworkGrants) added to its read paths and passed variables, and
// NODE_EXTRA_CA_CERTS set in cmd's environment when the host has none
// (NodeCAEnv), and logs them (debug); pol itself when it permits no
// outbound traffic.
func (l *Launcher) withNetwork(plugin string, pol *Policy, cmd *exec.Cmd) *Policy {
	read, vars, refused := NetworkGrants(pol, cmd.Env)
	for _, r := range refused {
		l.log.Warn("certificate path not granted: it would expose more than certificates", "plugin", plugin, "path", r)
	}
	if len(read) == 0 && len(vars) == 0 {
		return pol
	}
	logArgs := []any{"plugin", plugin, "allow_net", string(pol.net())}
	if kv := NodeCAEnv(pol, cmd.Env); kv != "" {
		cmd.Env = append(cmd.Env, kv)
		name, file, _ := strings.Cut(kv, "=")
		vars = append(vars, name)
		read = append(read, linkChain(file)...)
		logArgs = append(logArgs, "set", kv)
	}
	c := pol.Clone()
	c.AllowRead = append(c.AllowRead, read...)
	for _, v := range vars {
		if !slices.Contains(c.Env, v) {
			c.Env = append(c.Env, v)
		}
	}
	l.log.Debug("network grants: name resolution and certificates, read-only", append(logArgs, "read", read, "env", vars)...)
	return c
}

// scrubEnv keeps the entries of env whose names are allowed (the last value
// of each), in env's order.
func scrubEnv(env []string, allowed []string) []string {
	last := map[string]string{}
	var order []string
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if !strings.HasPrefix(k, "PLUGIN_") && !slices.Contains(allowed, k) {
			continue
		}
		if _, seen := last[k]; !seen {
			order = append(order, k)
		}
		last[k] = v
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+last[k])
	}
	return out
}

// envValue returns the last value of name in env.
func envValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// pluginDirs makes a plugin's data directory (kept across its restarts,
// refused when over its data_size, except for a probe) and a new tmp
// directory for this process: each process gets its own tmp, removed when
// it exits, since during a reload the old process still serves calls
// with its own. The Linux and macOS launchers grant both to the plugin.
func (l *Launcher) pluginDirs(plugin string, pol *Policy, probe bool) (data, tmp string, err error) {
	dir := filepath.Join(l.opts.StateDir, plugin)
	data = filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return "", "", fmt.Errorf("sandbox: data directory: %w", err)
	}
	if !probe {
		if err := checkDataSize(plugin, data, pol.dataSize()); err != nil {
			return "", "", fmt.Errorf("sandbox: %w", err)
		}
	}
	tmpParent, tmpPattern := dir, "tmp-"
	if l.opts.TmpDir != "" {
		tmpParent, tmpPattern = l.opts.TmpDir, plugin+"-"
	}
	if tmp, err = os.MkdirTemp(tmpParent, tmpPattern); err != nil {
		return "", "", fmt.Errorf("sandbox: tmp directory: %w", err)
	}
	return data, tmp, nil
}
