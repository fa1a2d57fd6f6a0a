package sandbox

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// macOS has no namespaces, Landlock or seccomp; what it has is Seatbelt,
// the kernel's sandbox, which /usr/bin/sandbox-exec applies to the program
// it executes from a profile in SBPL (a Scheme dialect): every operation
// (file-read*, file-write*, process-exec, network-outbound, mach-lookup,
// sysctl-read …) is denied unless a rule allows it, and the profile is
// inherited across fork and exec. The generator below writes that profile
// from a plugin's Policy; it is portable so that every policy shape has a
// golden test here (testdata/seatbelt), while the launcher that runs
// sandbox-exec is darwin-only (launcher_darwin.go).
//
// Facts taken from the published profiles of two coding agents that do the
// same (see docs/security.md, "macOS: Seatbelt"):
//   - OpenAI Codex (codex-rs/core/src/seatbelt_base_policy.sbpl,
//     seatbelt_platform_defaults.sbpl, seatbelt_network_policy.sbpl): start
//     from (deny default); the sysctls and mach services a runtime reads at
//     start; dyld maps /usr/lib and the frameworks under /System/Library
//     (file-map-executable); the symbolic links /etc, /tmp and /var and
//     the real /private/… paths Seatbelt matches (so every granted path is
//     written in its resolved form too); /dev/null, /dev/zero, /dev/fd and
//     /dev/dtracehelper; ipc-posix-sem for python's multiprocessing; the
//     mach services DNS and TLS need (configd, DNSConfiguration, trustd,
//     SecurityServer, ocspd, networkd); run /usr/bin/sandbox-exec by its
//     absolute path, never through PATH.
//   - Anthropic's sandbox-runtime (@anthropic-ai/sandbox-runtime,
//     dist/sandbox/macos-sandbox-utils.js): strings are written as JSON
//     strings (backslash and double quote escaped); sandbox-exec rejects a
//     string literal over 1025 bytes; a network filter's host may only be
//     "*" or "localhost" — names cannot be filtered, ports can; a unix
//     socket needs system-socket (socket-domain AF_UNIX) to be created,
//     network-bind on its local path and network-outbound on its remote
//     path; directories' metadata may be read everywhere so that realpath
//     can walk to a granted path.

// LayerSeatbelt is the layer of a plugin started under sandbox-exec with a
// profile generated from its policy (macOS).
const LayerSeatbelt Layer = "seatbelt"

// seatbeltPaths are the paths of one plugin process that its policy does
// not name: where it runs from, where it writes, how it talks to the host.
type seatbeltPaths struct {
	// Program is the plugin file as it will be executed (links resolved).
	Program string
	// Interpreters are what a "#!" script's first line runs (see
	// interpreters): executable.
	Interpreters []string
	// Runtime is what the policy's runtime preset needs (RuntimeGrants):
	// readable and executable.
	Runtime []string
	// Data and Tmp are the plugin's own directories ($HOME, $TMPDIR).
	Data, Tmp string
	// Sock is go-plugin's unix socket directory (PLUGIN_UNIX_SOCKET_DIR),
	// "" when the host sets none (go-plugin then uses $TMPDIR).
	Sock string
}

// seatbeltSystemRead are what every process on macOS reads to start: the
// root directory (its working directory, getcwd), dyld and its shared
// cache (under /System/Library, or the cryptex on macOS 13 and later), the
// system libraries and frameworks, the time zone database.
var seatbeltSystemRead = []string{
	"/usr/lib", "/usr/share/zoneinfo", "/System/Library", "/Library/Apple",
	"/System/Volumes/Preboot/Cryptexes", "/private/var/db/dyld", "/private/var/db/timezone",
}

// seatbeltSystemMap are where dyld maps executable code from.
var seatbeltSystemMap = []string{"/usr/lib", "/System/Library", "/Library/Apple", "/System/Volumes/Preboot/Cryptexes", "/private/var/db/dyld"}

// seatbeltSysctls are the sysctls the Go runtime, node and python read at
// start (the number of CPUs, the page size, the OS version …); a subset of
// Codex's list.
var seatbeltSysctls = []string{
	"hw.activecpu", "hw.byteorder", "hw.cachelinesize_compat", "hw.cpufamily", "hw.cputype",
	"hw.logicalcpu", "hw.logicalcpu_max", "hw.machine", "hw.memsize", "hw.ncpu", "hw.nperflevels",
	"hw.pagesize", "hw.pagesize_compat", "hw.physicalcpu", "hw.physicalcpu_max", "hw.tbfrequency_compat",
	"hw.vectorunit", "kern.argmax", "kern.hostname", "kern.maxfilesperproc", "kern.osproductversion",
	"kern.osrelease", "kern.ostype", "kern.osvariant_status", "kern.osversion", "kern.secure_kernel",
	"kern.usrstack64", "kern.version", "machdep.cpu.brand_string", "sysctl.proc_cputype", "vm.loadavg",
}

// seatbeltSysctlPrefixes are sysctl name prefixes read the same way.
var seatbeltSysctlPrefixes = []string{"hw.optional.", "hw.perflevel", "kern.proc.pid."}

// seatbeltNetRead are what name resolution reads on macOS once a plugin
// has network: the resolver configuration configd writes, hosts, services.
var seatbeltNetRead = []string{
	"/private/var/run/resolv.conf", "/private/etc/hosts", "/private/etc/services",
	"/private/etc/protocols", "/private/etc/ssl",
}

// seatbeltNetMach are the mach services DNS and TLS verification go
// through (Codex's network policy).
var seatbeltNetMach = []string{
	"com.apple.SystemConfiguration.DNSConfiguration", "com.apple.SystemConfiguration.configd",
	"com.apple.networkd", "com.apple.trustd", "com.apple.trustd.agent", "com.apple.SecurityServer", "com.apple.ocspd",
}

// seatbeltMaxString is the longest string literal sandbox-exec reads
// (1025 bytes with its quotes, as Anthropic's sandbox-runtime found).
const seatbeltMaxString = 1023

// seatbeltString writes s as an SBPL string literal: in double quotes,
// with backslash and double quote escaped, as a JSON string would be (what
// Anthropic's sandbox-runtime writes). Characters beyond ASCII are written
// as they are (UTF-8, the only encoding macOS file names have). A control
// character cannot be written faithfully (SBPL's escapes for them are
// not documented), and a string sandbox-exec cannot read would fail the
// plugin's start with a message naming neither: both are refused here,
// naming the path.
func seatbeltString(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("%q is not valid UTF-8", s)
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }); i >= 0 {
		return "", fmt.Errorf("%q holds a control character (byte %d), which a Seatbelt profile cannot name", s, i)
	}
	q := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
	if len(q) > seatbeltMaxString+2 {
		return "", fmt.Errorf("%q is %d bytes escaped, longer than the %d a Seatbelt profile's string may hold", s, len(q)-2, seatbeltMaxString)
	}
	return q, nil
}

// seatbeltForms returns each path as given and, when it differs, as its
// symbolic links resolve (/tmp/x is /private/tmp/x; Seatbelt matches the
// resolved path, while a program opens, and reads the link of, the one it
// was given), without duplicates. A path that does not exist is kept as
// given: a rule for it does no harm.
func seatbeltForms(paths ...string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		p = filepath.Clean(p)
		forms := []string{p}
		if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
			forms = append(forms, r)
		}
		for _, f := range forms {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// profileWriter accumulates a profile and the first path it could not
// write.
type profileWriter struct {
	b   strings.Builder
	err error
}

func (w *profileWriter) line(s string) { w.b.WriteString(s + "\n") }

// rule writes "(allow OPS (FILTER "path") …)", one path a line, or
// nothing when paths is empty. what names the paths' origin in an error.
func (w *profileWriter) rule(ops, filter, what string, paths []string) {
	if len(paths) == 0 {
		return
	}
	w.line("(allow " + ops)
	for _, p := range paths {
		q, err := seatbeltString(p)
		if err != nil {
			if w.err == nil {
				w.err = fmt.Errorf("%s: %w", what, err)
			}
			continue
		}
		w.line("  (" + filter + " " + q + ")")
	}
	w.line(")")
}

// seatbeltProfile returns the Seatbelt profile confining plugin under pol
// (its named directories and network grants already added to its read
// and write paths: see Launcher.Wrap) with the paths of p.
//
// What it allows, and nothing else (deny default):
//   - fork; exec of the plugin file, its interpreters, its runtime's
//     grants and allow_read (reading includes executing, as on Linux), and
//     of its data, tmp and socket directories only under allow_exec_written;
//     signals and process information within the sandbox;
//   - reading: what starting needs (seatbeltSystemRead, the directories'
//     metadata, the standard devices), the plugin, its runtime and
//     allow_read; reading and writing its data, tmp and socket directories
//     and allow_write;
//   - unix sockets in its socket and tmp directories (go-plugin's);
//   - the network as allow_net says: none, nothing; a list, TCP to its
//     ports on any host (Seatbelt filters no names) and DNS; all,
//     everything.
//
// A JIT runtime (Policy.JIT) may also read and set V8's thread sysctls and
// ask the host port for CPU information. Memory, processes and a JIT's
// writable and executable memory are outside what Seatbelt governs: the
// launcher reports them missing.
func seatbeltProfile(plugin string, pol *Policy, p seatbeltPaths) (string, error) {
	w := &profileWriter{}
	name, err := seatbeltString(plugin)
	if err != nil {
		return "", fmt.Errorf("plugin name: %w", err)
	}
	w.line("(version 1)")
	w.line("; plughost: the Seatbelt profile of plugin " + name + ", generated from its sandbox policy.")
	w.line("(deny default)")
	w.line("")
	w.line("; Processes: fork (runtimes fork: python's multiprocessing, node's child_process);")
	w.line("; exec only where process-exec is allowed below.")
	w.line("(allow process-fork)")
	w.line("(allow signal (target same-sandbox))")
	w.line("(allow process-info* (target same-sandbox))")
	w.line("(allow ipc-posix-sem)")
	w.line("(allow sysctl-read")
	for _, s := range seatbeltSysctls {
		w.line(`  (sysctl-name "` + s + `")`)
	}
	for _, s := range seatbeltSysctlPrefixes {
		w.line(`  (sysctl-name-prefix "` + s + `")`)
	}
	w.line(")")
	w.line("(allow mach-lookup")
	w.line(`  (global-name "com.apple.system.opendirectoryd.libinfo")`)
	w.line(`  (global-name "com.apple.system.logger")`)
	w.line(`  (global-name "com.apple.logd")`)
	w.line(")")
	w.line("")
	w.line("; Starting: dyld, the system libraries and frameworks, the time zones.")
	w.line(`(allow file-read* (literal "/") (literal "/private/etc/localtime"))`)
	w.line(`(allow file-read-metadata (vnode-type DIRECTORY) (literal "/etc") (literal "/tmp") (literal "/var"))`)
	w.rule("file-read*", "subpath", "system path", seatbeltSystemRead)
	w.rule("file-map-executable", "subpath", "system path", seatbeltSystemMap)
	w.line(`(allow file-read* file-write-data (literal "/dev/null") (literal "/dev/zero") (subpath "/dev/fd"))`)
	w.line(`(allow file-read* (literal "/dev/random") (literal "/dev/urandom"))`)
	w.line(`(allow file-read* file-write-data file-ioctl (literal "/dev/dtracehelper"))`)
	w.line("")
	w.line("; The plugin and its interpreters: read and executed.")
	w.rule("file-read* file-map-executable process-exec", "literal", "plugin", seatbeltForms(append([]string{p.Program}, p.Interpreters...)...))
	if len(p.Runtime) > 0 {
		w.line("; runtime " + strconv.Quote(string(pol.Runtime)) + ": the interpreter and what it reads to start, read and executed.")
		w.rule("file-read* file-map-executable process-exec", "subpath", "runtime", seatbeltForms(p.Runtime...))
	}
	if len(pol.AllowRead) > 0 {
		w.line("; allow_read (reading includes executing, as on Linux).")
		w.rule("file-read* file-map-executable process-exec", "subpath", "allow_read", seatbeltForms(pol.AllowRead...))
	}
	written := seatbeltForms(p.Data, p.Tmp, p.Sock)
	w.line("; Its data, tmp and socket directories" + map[bool]string{true: ", and allow_write", false: ""}[len(pol.AllowWrite) > 0] + ": read and written.")
	w.rule("file-read* file-write*", "subpath", "allow_write or the plugin's directories", append(slices.Clone(written), seatbeltForms(pol.AllowWrite...)...))
	if pol.AllowExecWritten {
		w.line("; allow_exec_written: what it writes there may run.")
		w.rule("file-map-executable process-exec", "subpath", "data directory", written)
	}
	w.line("")
	w.line("; go-plugin's unix sockets, in its socket directory (or $TMPDIR).")
	w.line("(allow system-socket (socket-domain AF_UNIX))")
	sockets := seatbeltForms(p.Sock, p.Tmp)
	var filters []string
	for _, s := range sockets {
		q, err := seatbeltString(s)
		if err != nil {
			return "", fmt.Errorf("socket directory: %w", err)
		}
		filters = append(filters, "(local unix-socket (subpath "+q+"))")
	}
	w.line("(allow network-bind network-inbound " + strings.Join(filters, " ") + ")")
	w.line("(allow network-outbound " + strings.ReplaceAll(strings.Join(filters, " "), "(local ", "(remote ") + ")")
	w.line("")
	switch pol.net() {
	case NetNone:
		w.line(`; allow_net = "none": no other network.`)
	case NetList:
		w.line("; allow_net as a list: TCP to its ports on any host. Seatbelt filters ports, not")
		w.line("; names (a rule's host is \"*\" or \"localhost\"): the names are not enforced.")
		w.line("(allow network-outbound")
		var ports []uint16
		for _, hp := range pol.NetAllow {
			port, err := netPort(hp)
			if err != nil {
				return "", fmt.Errorf("allow_net: %w", err)
			}
			if !slices.Contains(ports, port) {
				ports = append(ports, port)
			}
		}
		slices.Sort(ports)
		for _, port := range ports {
			w.line(fmt.Sprintf(`  (remote tcp "*:%d")`, port))
		}
		w.line(")")
		w.line("; Name resolution: DNS, and mDNSResponder, which the system's resolver asks.")
		w.line(`(allow network-outbound (remote udp "*:53") (remote tcp "*:53") (literal "/private/var/run/mDNSResponder"))`)
		seatbeltNetCommon(w)
	case NetAll:
		w.line(`; allow_net = "all": the host's network.`)
		w.line("(allow network-outbound network-inbound network-bind system-socket)")
		seatbeltNetCommon(w)
	}
	if jit, why := pol.JIT(p.Program); jit {
		// Seatbelt does not govern memory protections: what a JIT runtime
		// needs besides is what V8 and libuv ask the kernel (Anthropic's
		// profile allows V8's tcsm sysctls, Codex's libuv's host_processor_info).
		w.line("")
		w.line("; A JIT runtime (" + strings.ReplaceAll(why, "\n", " ") + "): V8's thread sysctls and libuv's")
		w.line("; CPU information (os.cpus()). Memory protections are not Seatbelt's to refuse.")
		w.line(`(allow sysctl-read (sysctl-name "kern.tcsm_available") (sysctl-name "kern.tcsm_enable"))`)
		w.line(`(allow sysctl-write (sysctl-name "kern.tcsm_enable"))`)
		w.line("(allow mach-host*)")
	}
	if pol.Strict {
		w.line("")
		w.line("; strict: the plugin is refused where sandbox-exec is missing.")
	}
	if w.err != nil {
		return "", w.err
	}
	return w.b.String(), nil
}

// seatbeltNetCommon writes what a plugin with network needs besides its
// sockets: the resolver's files, the mach services of DNS and TLS
// verification, the routing table.
func seatbeltNetCommon(w *profileWriter) {
	w.rule("file-read*", "subpath", "network", seatbeltNetRead)
	w.line("(allow mach-lookup")
	for _, m := range seatbeltNetMach {
		w.line(`  (global-name "` + m + `")`)
	}
	w.line(")")
	w.line(`(allow sysctl-read (sysctl-name-prefix "net.routetable"))`)
}

// sandboxExec is macOS's sandbox-exec, always run by this absolute path:
// a program of that name elsewhere in PATH could be anything.
const sandboxExec = "/usr/bin/sandbox-exec"

// seatbeltExecArg follows StageArg in the arguments of the darwin stage
// that sets the plugin's rlimits and execs sandbox-exec (Go cannot set a
// child's rlimits between fork and exec, and a plughost that lowered its
// own before starting a plugin would lower them for every goroutine and
// every other plugin starting at the same time).
const seatbeltExecArg = "seatbelt-exec"

// seatbeltStageArgs is the command line of the darwin stage (self is the
// plughost executable) that sets RLIMIT_NOFILE to nofile and RLIMIT_CORE
// to 0, then runs program with args (args[0] is replaced: sandbox-exec
// passes program as the plugin's argv[0]) under the profile in the file
// profile.
//
// The profile is passed as a file (-f), not a string (-p): a profile of
// several KiB in argv would show in every ps listing and count against
// ARG_MAX, while the file, beside the plugin's tmp, shows an operator
// exactly what the plugin got, and `sandbox-exec -f FILE prog` reruns it
// by hand. It names its paths itself rather than through -D parameters
// for the same reason: the file is complete.
func seatbeltStageArgs(self string, nofile int, profile, program string, args []string) []string {
	out := []string{self, StageArg, seatbeltExecArg, strconv.Itoa(nofile), sandboxExec, "-f", profile, program}
	if len(args) > 1 {
		out = append(out, args[1:]...)
	}
	return out
}

// seatbeltCommand turns cmd, the plugin's prepared command, into the
// darwin stage's (self is the plughost executable) that runs program
// under the profile in profileFile: its environment scrubbed to what
// passEnv and the policy pass, with HOME, TMPDIR and PATH of the sandbox.
// Everything else of cmd (its pipes, its extra files: the descriptors
// survive both execs) is kept.
func seatbeltCommand(cmd *exec.Cmd, self string, passEnv []string, pol *Policy, profileFile, program, data, tmp string) {
	env := scrubEnv(cmd.Env, append(slices.Clone(passEnv), pol.Env...))
	cmd.Env = append(env, "HOME="+data, "TMPDIR="+tmp, "PATH="+PluginPATH)
	cmd.Args = seatbeltStageArgs(self, pol.files(), profileFile, program, cmd.Args)
	cmd.Path = self
}

// parseSeatbeltStage reads the arguments after StageArg and
// seatbeltExecArg: the open-files limit and the command line to exec,
// which must run sandbox-exec (the stage runs nothing else).
func parseSeatbeltStage(args []string) (nofile uint64, argv []string, err error) {
	if len(args) < 5 {
		return 0, nil, fmt.Errorf("%s: want a file limit and a sandbox-exec command line, got %q", seatbeltExecArg, args)
	}
	n, err := strconv.ParseUint(args[0], 10, 64)
	if err != nil || n == 0 {
		return 0, nil, fmt.Errorf("%s: file limit %q is not a positive number", seatbeltExecArg, args[0])
	}
	if args[1] != sandboxExec || args[2] != "-f" {
		return 0, nil, fmt.Errorf("%s: the command must be %s -f PROFILE, not %q", seatbeltExecArg, sandboxExec, args[1:3])
	}
	return n, args[1:], nil
}

// seatbeltMissing are the layers a plugin under pol, running program,
// lacks on macOS, with why: what Seatbelt does not govern, and what
// the darwin stage cannot set.
func seatbeltMissing(pol *Policy, program string) map[Layer]string {
	m := map[Layer]string{
		LayerCgroupMemory: "Seatbelt has no memory limit, and macOS's RLIMIT_DATA does not count memory mapped with mmap, where Go, node and python allocate: memory is not bounded",
		LayerCgroupPids:   "Seatbelt has no process limit, and RLIMIT_NPROC counts every process of the host's user, not the plugin's: processes are not bounded",
	}
	if jit, why := pol.JIT(program); jit {
		m[LayerWriteXorExec] = "writable and executable memory allowed for a JIT compiler: " + why + " (Seatbelt does not govern memory protections in any case)"
	} else {
		m[LayerWriteXorExec] = "Seatbelt does not govern memory protections: memory may be mapped writable and executable"
	}
	if pol.net() == NetList {
		m[LayerNetNames] = "Seatbelt filters connections by port, not by name: allow_net's ports are enforced on every host, and DNS (port 53) is reachable"
	}
	return m
}
