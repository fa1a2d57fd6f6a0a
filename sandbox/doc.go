// Package sandbox confines each plugin process to the box its [Policy]
// gives it.
//
// The host cannot restrict a child between fork and exec in Go, so it
// re-executes itself: the plugin's prepared command is wrapped in a command
// that starts plughost again with the hidden argument [StageArg], in new
// namespaces. That stage restricts itself, layer by layer, then execs the
// plugin, which inherits every restriction:
//
//	l, err := sandbox.New(&sandbox.Options{StateDir: "/var/lib/plughost/plugins"})
//	launch, err := l.Wrap("echo", &sandbox.Policy{}, cmd) // cmd: the plugin's prepared command
//	err = launch.Cmd.Start()
//	report, err := launch.Started(launch.Cmd.Process.Pid) // cgroups, then the stage runs and execs
//	fmt.Println(report)                                  // "pidns,netns,…,seccomp"
//	// … once the process has been reaped:
//	why := launch.Exited() // removes the cgroups; says if the memory cgroup killed it
//
// main must call [RunStageIfRequested] first thing, before it prints
// anything: the stage's stdout is the plugin's, where go-plugin's handshake
// goes.
//
// # Layers, in order
//
//  1. Namespaces: user (only when the host is not root: the host user keeps
//     its uid and gid there, the stage gets the capabilities it needs as
//     ambient ones), pid (the plugin is PID 1 of its own), net (with no
//     interface up, when the policy allows no network), ipc, uts, mount.
//  2. cgroups, set by the host before the stage goes on (a sync pipe):
//     memory and pids (and cpu when the policy caps it), in cgroup v1 and v2
//     wherever the hierarchy is writable.
//  3. A non-zero uid, on the host and inside the user namespace: the host's
//     user, or, when the host is root, uid/gid 65534 (dropped after the
//     mounts and Landlock, which need root).
//  4. Private mounts: /tmp, /var, /run, /home, /root, /mnt, /media, /srv and
//     /dev are covered by empty read-only tmpfs; the allowed paths beneath
//     them (the binary, the data and tmp directories, go-plugin's socket
//     directory, allow_read and allow_write, /dev/null and friends) are put
//     back; /proc is mounted afresh. The plugin's tmp is a tmpfs of
//     Policy.TmpSize; unless Policy.AllowExecWritten, it, the data
//     directory and the socket directory are noexec (see writtenMounts;
//     the data directory is bounded by a walk, see [Usage]). Hiding matters for unix sockets: before
//     Landlock ABI 9, Landlock cannot stop connect() to a pathname socket.
//     As root, vm.memfd_noexec is set to 2 in the plugin's pid namespace:
//     every memfd is sealed against execution.
//     With allow_net as a list, a private /etc/hosts holding only the
//     listed names (resolved by the host at launch) and an nsswitch.conf
//     saying "hosts: files" are mounted over the machine's (layer
//     net-names; see [NetworkGrants]).
//  5. rlimits: RLIMIT_DATA (not RLIMIT_AS, which breaks the Go runtime),
//     RLIMIT_NOFILE, RLIMIT_CORE=0, and RLIMIT_NPROC (which counts per uid:
//     as root, where every plugin is uid 65534, the pids cgroup bounds each
//     plugin instead).
//  6. NO_NEW_PRIVS.
//  7. Landlock (github.com/landlock-lsm/go-landlock, best effort): reads of
//     the read paths, writes of the write paths (no execute in the tmp,
//     data and socket directories unless Policy.AllowExecWritten; /dev/zero
//     read-only), TCP connect only to the
//     allowed ports (ABI 4+), signals and abstract unix sockets scoped to the
//     plugin (ABI 6+).
//  8. Capabilities: bounding and ambient sets emptied, securebits locked so
//     uid 0 gains nothing through execve, every capability dropped.
//  9. seccomp: a classic BPF filter assembled in pure Go with
//     golang.org/x/net/bpf: foreign architectures and x32 are killed; ptrace,
//     mount, bpf, io_uring, new namespaces, TIOCSTI, MPTCP (which bypasses
//     Landlock), and sockets other than unix ones (no network) fail with
//     EPERM. So does executing from memory (layer memfd-noexec): execveat
//     of a descriptor (AT_EMPTY_PATH), and, where vm.memfd_noexec could
//     not be set, memfd_create without MFD_NOEXEC_SEAL; Landlock's execute
//     right does not cover such anonymous files. And so, unless the policy
//     allows a JIT ([Policy.AllowJIT]; node needs it), does mapping memory
//     writable and executable at once (layer write-xor-exec): a filter
//     sees single calls, so RW then RX transitions pass. Without a memory
//     cgroup, shared anonymous memory, memfd_create and shmget fail too
//     (layer no-shared-memory): RLIMIT_DATA does not count them.
//  10. execve of the plugin through /proc/self/fd (its file was opened
//     while the stage could still reach it), from the same locked OS thread.
//
// The stage reports which layers are active on a pipe that closes when the
// exec succeeds; [Launch.Started] returns that [Report]. Missing layers are
// logged loudly and the plugin runs anyway, unless its policy is Strict: then
// it is refused ([ErrUnavailable]). Where namespaces are refused (Docker's
// default seccomp profile, or [Options.NoNamespaces]), Landlock, seccomp and
// rlimits still apply. On macOS a plugin runs under Seatbelt instead
// (sandbox-exec with a profile written from its policy: files, exec and the
// network by port; no memory or process limit): see seatbelt.go. On other
// systems there is no sandbox: plugins run with the host's rights and
// strict policies are refused.
//
// A plugin whose policy permits outbound traffic may also read what name
// resolution and TLS need on this machine (the resolver's files, the
// certificate stores) and gets the variables naming extra certificates the
// host has set: see [NetworkGrants].
//
// A "#!" script may read and execute its interpreter. A Policy's Runtime
// (node, python) grants what that interpreter needs besides, read-only:
// see [Runtime] and [RuntimeGrants]. Read access always includes execute.
//
// [Probe] (plughost sandbox probe) reports what this machine supports by
// running the stage for real up to the exec.
//
// The package imports nothing of host or pluginproto; the test-only plugins
// under internal/ are main packages that do.
package sandbox
