package sandbox

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Layer names one confinement the sandbox applies to a plugin process. A
// [Report] lists the layers that are active and the ones that are missing.
type Layer string

// The layers, in the order the stage applies them.
const (
	LayerUserNS       Layer = "userns"         // a user namespace (only when the host is not root)
	LayerPidNS        Layer = "pidns"          // its own pid namespace: the plugin is PID 1 and sees no host process
	LayerNetNS        Layer = "netns"          // its own network namespace, with no interface up (allow_net = none)
	LayerIPCNS        Layer = "ipcns"          // its own System V IPC and POSIX message queues
	LayerUTSNS        Layer = "utsns"          // its own host name
	LayerMountNS      Layer = "mountns"        // its own mount table
	LayerCgroupMemory Layer = "cgroup-memory"  // the memory cgroup (v1 and/or v2) caps its memory
	LayerCgroupPids   Layer = "cgroup-pids"    // the pids cgroup caps its processes and threads
	LayerCgroupCPU    Layer = "cgroup-cpu"     // the cpu cgroup caps its CPU share (only when cpu is set)
	LayerUID          Layer = "uid"            // it runs as a non-zero uid, on the host and inside its user namespace
	LayerMounts       Layer = "mounts"         // /tmp, /run, /home, /root, /var, /dev … hidden, allowed paths put back, fresh /proc
	LayerRlimits      Layer = "rlimits"        // RLIMIT_DATA, NPROC, NOFILE, CORE=0
	LayerNoNewPrivs   Layer = "no_new_privs"   // no setuid or file-capability gains through execve
	LayerLandlock     Layer = "landlock"       // Landlock filesystem rules (and signal/abstract-socket scoping where the ABI has it)
	LayerLandlockNet  Layer = "landlock-net"   // Landlock TCP bind/connect rules (ABI 4 and later)
	LayerCaps         Layer = "capabilities"   // every capability dropped, the bounding set emptied
	LayerSeccomp      Layer = "seccomp"        // the syscall filter
	LayerMemfdNoExec  Layer = "memfd-noexec"   // nothing executed from memory: no executable memfd, no execveat(AT_EMPTY_PATH)
	LayerWriteXorExec Layer = "write-xor-exec" // no memory mapped writable and executable at once (absent under allow_jit)
	LayerNetNames     Layer = "net-names"      // allow_net as a list: only its names resolve (a private /etc/hosts; see NetworkGrants)
	// LayerNoSharedMemory: without a memory cgroup, the memory RLIMIT_DATA
	// does not count is refused: shared anonymous mappings, memfd_create,
	// System V shared memory (see noSharedMemory).
	LayerNoSharedMemory Layer = "no-shared-memory"
)

// NetMode says how much network a plugin gets.
type NetMode string

// The network modes of a Policy.
const (
	// NetNone: no network at all (the default): the plugin has its own empty
	// network namespace and can create only unix sockets.
	NetNone NetMode = "none"
	// NetList: outbound TCP to the ports of Policy.NetAllow only (Landlock
	// restricts by port; the host part is not enforced by this version). No
	// UDP, no listening on other ports.
	NetList NetMode = "list"
	// NetAll: the host's network, unrestricted.
	NetAll NetMode = "all"
)

// Defaults of a Policy.
const (
	DefaultMemory = 512 << 20 // bytes
	DefaultPids   = 64
	DefaultFiles  = 256
	// DefaultTimeout bounds each tool call when the policy sets no timeout.
	DefaultTimeout = 5 * time.Minute
	// DefaultTmpSize caps a plugin's tmp, a tmpfs: its pages are memory,
	// so it is an eighth of DefaultMemory, room for the scratch files and
	// downloads a tool call makes, not for a cache (that belongs in the
	// data directory).
	DefaultTmpSize = 64 << 20 // bytes
	// DefaultDataSize caps a plugin's data directory, kept on disk across
	// restarts: its caches and state.
	DefaultDataSize = 1 << 30 // bytes
)

// DefaultReadPaths are the system paths every plugin may read: what a
// dynamically linked binary needs to start, and the time zone database.
var DefaultReadPaths = []string{
	"/lib", "/lib32", "/lib64", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libexec",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/usr/share/zoneinfo",
}

// Policy is the box of one plugin. The zero Policy is the default policy: its
// own binary and the system libraries read-only, a private data and tmp
// directory, no network, 512 MiB, 64 processes, 256 open files, no core
// dumps, an environment scrubbed to the allow-list. Every field adds to or
// overrides that.
type Policy struct {
	// AllowRead lists further absolute paths (files or directories) the
	// plugin may read, beyond its binary and DefaultReadPaths. Reading
	// includes executing: a program under an allowed path may be run
	// (Landlock's read-only access rights include execute), as the system
	// libraries' directories are.
	AllowRead []string
	// AllowWrite lists absolute paths the plugin may read and write, beyond
	// its private data and tmp directories. When the host runs as root the
	// plugin runs as uid/gid 65534, so these must be writable by it.
	AllowWrite []string
	// Runtime is the interpreter preset of a plugin written for one
	// ([RuntimeNode], [RuntimePython]): the interpreter and what it needs
	// to start are readable too ([RuntimeGrants]). "" means none: a
	// binary, or a script whose interpreter needs only the system
	// libraries (a "#!" line's interpreter is always readable).
	Runtime Runtime `json:",omitempty"`
	// Net is the network mode; "" means NetNone.
	Net NetMode
	// NetAllow lists "host:port" entries the plugin may connect to when Net
	// is NetList.
	NetAllow []string
	// Memory caps the plugin's memory in bytes (memory cgroup and
	// RLIMIT_DATA; without the cgroup, what RLIMIT_DATA does not count
	// is refused: see [LayerNoSharedMemory]). 0 means DefaultMemory.
	Memory int64
	// Pids caps its processes and threads (pids cgroup, RLIMIT_NPROC). 0
	// means DefaultPids.
	Pids int
	// Files caps its open files (RLIMIT_NOFILE). 0 means DefaultFiles.
	Files int
	// CPU caps its CPU time as a number of cores (1.5 = one and a half
	// cores) through the cpu cgroup. 0 means no cap.
	CPU float64
	// Dirs are directories granted under a name the plugin asks for (a
	// "notes" directory): each is readable, and writable with Write, as
	// AllowRead or AllowWrite would make it, and the plugin finds its path
	// by name in $PLUGHOST_GRANTS ([grants.Env]), so the operator's
	// configuration, not the plugin, decides which directory it is.
	Dirs []Dir
	// Env names host environment variables passed through to the plugin;
	// every other variable of the host is scrubbed.
	Env []string
	// Timeout bounds each tool call of the plugin: the host cancels a call
	// still running after it and answers with an isError result. 0 means
	// DefaultTimeout. The sandbox only carries it; the host applies it.
	Timeout time.Duration
	// AllowJIT lets the plugin map memory writable and executable at once,
	// which a JIT compiler does: node's V8 aborts at its first compiled
	// function without it (and node --jitless has no WebAssembly, which
	// node's fetch needs). nil means: allowed when the plugin's interpreter
	// is a JIT runtime ([JITRuntime]: a "#!" line, or Runtime, naming node,
	// deno or bun), refused otherwise; false refuses it even then. Executing
	// from memory stays refused either way (layer memfd-noexec): a JIT
	// writes code into its own memory, it does not exec it. When allowed,
	// the report lists write-xor-exec as missing, saying why.
	AllowJIT *bool `json:",omitempty"`
	// TmpSize caps the plugin's tmp directory ($TMPDIR), in bytes: it is
	// a tmpfs of that size in the plugin's mount namespace, so a write past
	// it fails inside the plugin with ENOSPC. Its pages are memory (counted
	// by the memory cgroup where there is one). Without a mount namespace
	// the tmp directory is on the host's disk and is watched as the data
	// directory is. 0 means DefaultTmpSize.
	TmpSize int64 `json:",omitempty"`
	// DataSize caps the plugin's data directory ($HOME, kept across
	// restarts), in bytes. No filesystem an ordinary user can mount bounds
	// it, so the host walks it (see [DataCheckInterval]): a plugin found
	// over it is killed, saying why, and is not started again while its
	// directory stays over it. 0 means DefaultDataSize.
	DataSize int64 `json:",omitempty"`
	// AllowExecWritten lets the plugin execute what it writes. Without it,
	// its tmp, data and socket directories are mounted noexec and Landlock
	// grants no execute right there: a program (or a shared library, a
	// native module) the plugin wrote cannot be run or mapped executable,
	// so a plugin cannot fetch and run code its policy never saw. A runtime
	// that installs and runs packages at run time (npx or uvx run as
	// written, a virtual environment created in $HOME) needs it; servers
	// declared as npx or uvx one-liners do not: their package is installed
	// once, outside the data directory, and runs read-only.
	AllowExecWritten bool `json:",omitempty"`
	// Strict refuses to start the plugin when a layer it needs is missing
	// (see [Launcher.Wrap]); otherwise the plugin starts with whatever
	// layers this machine supports and the missing ones are logged.
	Strict bool
	// Disabled turns the sandbox off for this plugin: it runs with the
	// host's rights. Meant for debugging; logged loudly.
	Disabled bool
}

// CallTimeout is the bound on each tool call: Timeout, or DefaultTimeout.
func (p *Policy) CallTimeout() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return DefaultTimeout
}

// Check reports the first mistake in p, naming the field.
func (p *Policy) Check() error {
	for _, list := range []struct {
		name  string
		paths []string
	}{{"allow_read", p.AllowRead}, {"allow_write", p.AllowWrite}} {
		for _, path := range list.paths {
			if !filepath.IsAbs(path) {
				return fmt.Errorf("%s: %q is not an absolute path", list.name, path)
			}
		}
	}
	if err := p.Runtime.check(); err != nil {
		return err
	}
	switch p.Net {
	case "", NetNone, NetAll:
		if len(p.NetAllow) > 0 {
			return fmt.Errorf("allow_net: a host:port list needs network mode %q", NetList)
		}
	case NetList:
		if len(p.NetAllow) == 0 {
			return errors.New("allow_net: the list is empty (use \"none\")")
		}
		for _, hp := range p.NetAllow {
			if _, err := netPort(hp); err != nil {
				return fmt.Errorf("allow_net: %w", err)
			}
			if err := checkNetHost(hp); err != nil {
				return fmt.Errorf("allow_net: %w", err)
			}
		}
	default:
		return fmt.Errorf("allow_net: unknown mode %q (want none, all or a list of host:port)", p.Net)
	}
	switch {
	case p.Memory < 0:
		return fmt.Errorf("memory: negative (%d)", p.Memory)
	case p.Memory > 0 && p.Memory < 16<<20:
		return fmt.Errorf("memory: %d bytes is too little for any plugin (at least 16 MiB)", p.Memory)
	case p.Pids < 0:
		return fmt.Errorf("pids: negative (%d)", p.Pids)
	case p.Files < 0:
		return fmt.Errorf("files: negative (%d)", p.Files)
	case p.CPU < 0:
		return fmt.Errorf("cpu: negative (%v)", p.CPU)
	case p.Timeout < 0:
		return fmt.Errorf("timeout: negative (%v)", p.Timeout)
	case p.TmpSize < 0:
		return fmt.Errorf("tmp_size: negative (%d)", p.TmpSize)
	case p.TmpSize > 0 && p.TmpSize < 1<<20:
		return fmt.Errorf("tmp_size: %d bytes is too little for any plugin (at least 1 MiB)", p.TmpSize)
	case p.DataSize < 0:
		return fmt.Errorf("data_size: negative (%d)", p.DataSize)
	case p.DataSize > 0 && p.DataSize < 1<<20:
		return fmt.Errorf("data_size: %d bytes is too little for any plugin (at least 1 MiB)", p.DataSize)
	}
	seen := map[string]bool{}
	for _, d := range p.Dirs {
		switch {
		case !validDirName(d.Name):
			return fmt.Errorf("dir %q: a name is 1 to 64 of [a-zA-Z0-9_-]", d.Name)
		case seen[d.Name]:
			return fmt.Errorf("dir %q: granted twice", d.Name)
		case !filepath.IsAbs(d.Path):
			return fmt.Errorf("dir %q: path %q is not an absolute path", d.Name, d.Path)
		}
		seen[d.Name] = true
	}
	for _, name := range p.Env {
		if name == "" || slices.ContainsFunc([]rune(name), func(r rune) bool { return r == '=' || r == 0 }) {
			return fmt.Errorf("env: %q is not a variable name", name)
		}
	}
	return nil
}

// netPort returns the port of a "host:port" entry.
func netPort(hostport string) (uint16, error) {
	_, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return 0, fmt.Errorf("%q is not host:port", hostport)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%q: port must be 1-65535", hostport)
	}
	return uint16(n), nil
}

func (p *Policy) memory() int64 {
	return cmp.Or(p.Memory, DefaultMemory)
}

func (p *Policy) tmpSize() int64 {
	return cmp.Or(p.TmpSize, DefaultTmpSize)
}

func (p *Policy) dataSize() int64 {
	return cmp.Or(p.DataSize, DefaultDataSize)
}

func (p *Policy) pids() int {
	return cmp.Or(p.Pids, DefaultPids)
}

func (p *Policy) files() int {
	return cmp.Or(p.Files, DefaultFiles)
}

func (p *Policy) net() NetMode {
	if p.Net == "" {
		return NetNone
	}
	return p.Net
}

// Report says which layers confine a plugin process.
type Report struct {
	// Active lists the layers in force, in the order they were applied.
	Active []Layer `json:"active"`
	// Missing maps each layer that could not be applied to the reason.
	Missing map[Layer]string `json:"missing,omitempty"`
}

// String is the one-line summary the host logs and `plughost plugins`
// shows: "userns,pidns,…,seccomp", or "none".
func (r *Report) String() string {
	if r == nil || len(r.Active) == 0 {
		return "none"
	}
	s := ""
	for i, l := range r.Active {
		if i > 0 {
			s += ","
		}
		s += string(l)
	}
	return s
}

// ErrUnavailable is returned (wrapped) when a strict policy needs a layer
// this machine cannot apply, or when there is no sandbox on this platform.
var ErrUnavailable = errors.New("sandbox layer unavailable")

// Clone returns a deep copy of p.
func (p *Policy) Clone() *Policy {
	c := *p
	c.AllowRead = slices.Clone(p.AllowRead)
	c.AllowWrite = slices.Clone(p.AllowWrite)
	c.NetAllow = slices.Clone(p.NetAllow)
	c.Env = slices.Clone(p.Env)
	c.Dirs = slices.Clone(p.Dirs)
	if p.AllowJIT != nil {
		jit := *p.AllowJIT
		c.AllowJIT = &jit
	}
	return &c
}

// Readable reports whether the policy lets the plugin read path (a clean
// absolute path) beyond the default policy: it lies in an allow_read or
// allow_write path or a named directory.
func (p *Policy) Readable(path string) bool {
	granted := slices.Concat(p.AllowRead, p.AllowWrite)
	for _, d := range p.Dirs {
		granted = append(granted, d.Path)
	}
	return slices.ContainsFunc(granted, func(g string) bool { return within(path, filepath.Clean(g)) })
}

// within reports whether path is dir or beneath it.
func within(path, dir string) bool {
	if dir == "/" {
		return true
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}
