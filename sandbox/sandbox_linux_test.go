package sandbox

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The test binary is its own stage (TestMain) and its own "plugin": run
// with SANDBOX_TEST_PLUGIN=1 it prints what it can do and exits.
func TestMain(m *testing.M) {
	RunStageIfRequested()
	if os.Getenv("SANDBOX_TEST_PLUGIN") == "lookup" {
		lookupPlugin()
	}
	writtenPlugin(os.Getenv("SANDBOX_TEST_PLUGIN"))
	if os.Getenv("SANDBOX_TEST_PLUGIN") == "1" {
		_, err := os.ReadFile("/etc/shadow")
		fd, serr := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if serr == nil {
			unix.Close(fd)
		}
		mem, merr := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE|unix.PROT_EXEC, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if merr == nil {
			unix.Munmap(mem)
		}
		mfd, mferr := unix.MemfdCreate("plain", 0)
		if mferr == nil {
			unix.Close(mfd)
		}
		uid := "0"
		if os.Getuid() != 0 {
			uid = "not 0"
		}
		os.Stdout.WriteString("plugin ran; shadow: " + errName(err) + "; inet socket: " + errName(serr) + "; wx mapping: " + errName(merr) + "; plain memfd: " + errName(mferr) + "; uid " + uid + "\n")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func errName(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// run wraps the test binary as a plugin under pol and returns its stdout
// and the report.
func run(t *testing.T, opts Options, pol *Policy) (string, *Report, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	opts.StateDir = t.TempDir()
	opts.PassEnv = []string{"SANDBOX_TEST_PLUGIN"}
	l, err := New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd := &exec.Cmd{Path: self, Args: []string{self}, Env: append(os.Environ(), "SANDBOX_TEST_PLUGIN=1", "SECRET=x"), Stdout: &out, Stderr: &errOut}
	launch, err := l.Wrap("test", pol, cmd)
	if err != nil {
		return "", nil, err
	}
	if err := launch.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rep, err := launch.Started(launch.Cmd.Process.Pid)
	waitErr := launch.Cmd.Wait()
	launch.Exited()
	if err == nil && waitErr != nil {
		t.Fatalf("plugin: %v\nstderr: %s", waitErr, errOut.String())
	}
	return out.String(), rep, err
}

// The default policy: every layer. A plain memfd is sealed against
// execution as root (vm.memfd_noexec = 2 in the plugin's pid namespace,
// the host's value untouched) and refused by seccomp otherwise.
func TestDefaultPolicyAllLayers(t *testing.T) {
	hostNoExec, _ := os.ReadFile("/proc/sys/vm/memfd_noexec")
	out, rep, err := run(t, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	memfd := "EPERM"
	if os.Geteuid() == 0 {
		memfd = "ok"
	}
	if want := "plugin ran; shadow: EACCES; inet socket: EPERM; wx mapping: EPERM; plain memfd: " + memfd + "; uid not 0\n"; out != want {
		t.Errorf("plugin output = %q, want %q", out, want)
	}
	if after, _ := os.ReadFile("/proc/sys/vm/memfd_noexec"); string(after) != string(hostNoExec) {
		t.Errorf("the host's vm.memfd_noexec changed from %q to %q", hostNoExec, after)
	}
	for _, l := range []Layer{LayerPidNS, LayerNetNS, LayerMountNS, LayerUID, LayerMounts, LayerRlimits, LayerNoNewPrivs, LayerLandlock, LayerCaps, LayerSeccomp, LayerMemfdNoExec, LayerWriteXorExec} {
		if !slices.Contains(rep.Active, l) {
			t.Errorf("layer %s not active: %v (missing %v)", l, rep.Active, rep.Missing)
		}
	}
}

// allow_jit lets a plugin map writable and executable memory; the report
// says so, as a missing layer with the reason. Refusing it for a JIT
// runtime takes allow_jit = false.
func TestAllowJIT(t *testing.T) {
	yes := true
	out, rep, err := run(t, Options{}, &Policy{AllowJIT: &yes})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "; wx mapping: ok;") {
		t.Errorf("plugin output = %q, want the writable and executable mapping to work", out)
	}
	if why := rep.Missing[LayerWriteXorExec]; !strings.Contains(why, "allow_jit") || slices.Contains(rep.Active, LayerWriteXorExec) {
		t.Errorf("report: active %v, missing %v; want write-xor-exec missing, naming allow_jit", rep.Active, rep.Missing)
	}
	if !slices.Contains(rep.Active, LayerMemfdNoExec) {
		t.Errorf("layer %s not active under allow_jit: %v", LayerMemfdNoExec, rep.Active)
	}
}

func TestPolicyJIT(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := func(name, line string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(line+"\nconsole.log(1)\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	node := script("server.js", "#!/usr/bin/env node")
	deno := script("deno-server", "#!/usr/local/bin/deno run")
	shell := script("plugin.sh", "#!/bin/sh")
	yes, no := true, false
	for name, c := range map[string]struct {
		pol     Policy
		program string
		want    bool
	}{
		"a binary":               {Policy{}, "/usr/bin/true", false},
		"a shell script":         {Policy{}, shell, false},
		"node itself":            {Policy{}, "/usr/bin/node", true},
		"env node script":        {Policy{}, node, true},
		"deno script":            {Policy{}, deno, true},
		"runtime node":           {Policy{Runtime: RuntimeNode}, shell, true},
		"node, allow_jit false":  {Policy{AllowJIT: &no}, node, false},
		"binary, allow_jit true": {Policy{AllowJIT: &yes}, "/usr/bin/true", true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, why := c.pol.JIT(c.program)
			if got != c.want || (got && why == "") {
				t.Errorf("JIT(%s) = %v, %q; want %v with a reason", c.program, got, why, c.want)
			}
		})
	}
}

// Without namespaces (as under Docker's default profile) a best-effort
// policy still gets Landlock, seccomp and rlimits; a strict one is refused.
func TestNoNamespaces(t *testing.T) {
	t.Run("best effort", func(t *testing.T) {
		out, rep, err := run(t, Options{NoNamespaces: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// No pid namespace of its own, so no vm.memfd_noexec: seccomp
		// refuses the plain memfd.
		if want := "plugin ran; shadow: EACCES; inet socket: EPERM; wx mapping: EPERM; plain memfd: EPERM; uid not 0\n"; out != want {
			t.Errorf("plugin output = %q, want %q", out, want)
		}
		for _, l := range []Layer{LayerRlimits, LayerNoNewPrivs, LayerLandlock, LayerCaps, LayerSeccomp, LayerUID, LayerMemfdNoExec, LayerWriteXorExec} {
			if !slices.Contains(rep.Active, l) {
				t.Errorf("layer %s not active: %v", l, rep.Active)
			}
		}
		for _, l := range []Layer{LayerPidNS, LayerNetNS, LayerMountNS, LayerMounts} {
			if _, ok := rep.Missing[l]; !ok || slices.Contains(rep.Active, l) {
				t.Errorf("layer %s: want it reported missing; active %v, missing %v", l, rep.Active, rep.Missing)
			}
		}
	})
	t.Run("strict", func(t *testing.T) {
		out, _, err := run(t, Options{NoNamespaces: true}, &Policy{Strict: true})
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no namespaces") {
			t.Errorf("Wrap = %v, want ErrUnavailable naming the namespaces", err)
		}
		if out != "" {
			t.Errorf("the plugin ran: %q", out)
		}
	})
}

func TestPolicyCheck(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		p    Policy
		want string
	}{
		"default":         {Policy{}, ""},
		"relative read":   {Policy{AllowRead: []string{"etc"}}, `allow_read: "etc" is not an absolute path`},
		"list without":    {Policy{Net: NetList}, "allow_net: the list is empty"},
		"bad port":        {Policy{Net: NetList, NetAllow: []string{"example.com:http"}}, "port must be 1-65535"},
		"bad host":        {Policy{Net: NetList, NetAllow: []string{"a b.example.com:443"}}, "neither a host name nor an IP address"},
		"any host":        {Policy{Net: NetList, NetAllow: []string{":443", "[::1]:80", "10.0.0.1:22"}}, ""},
		"list in none":    {Policy{NetAllow: []string{"a:1"}}, "needs network mode"},
		"tiny memory":     {Policy{Memory: 1 << 20}, "too little"},
		"env with equals": {Policy{Env: []string{"A=B"}}, "not a variable name"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := c.p.Check()
			if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Errorf("Check() = %v, want %q", err, c.want)
			}
		})
	}
}

// The seccomp filter, run in x/net/bpf's VM on hand-made seccomp_data.
func TestSeccompFilter(t *testing.T) {
	t.Parallel()
	arch, _ := auditArch()
	data := func(nr uintptr, args ...uint64) []byte {
		b := make([]byte, 64)
		// x/net/bpf's VM loads words big-endian where the kernel loads
		// them in native order: write each 32-bit word the VM's way.
		le := func(off int, v uint64) {
			for i := 0; i < 4; i++ {
				b[off+i] = byte(uint32(v) >> (8 * (3 - i)))
			}
		}
		le(0, uint64(nr))
		le(4, uint64(arch))
		for i, a := range args {
			le(16+8*i, a)
		}
		return b
	}
	none, list, all := filterOpts{net: NetNone, memfd: true}, filterOpts{net: NetList, memfd: true}, filterOpts{net: NetAll, memfd: true}
	jit, sealed := filterOpts{net: NetNone, memfd: true, jit: true}, filterOpts{net: NetNone}
	noShared := filterOpts{net: NetNone, noShared: true}
	const rw, rwx = unix.PROT_READ | unix.PROT_WRITE, unix.PROT_READ | unix.PROT_WRITE | unix.PROT_EXEC
	for name, c := range map[string]struct {
		opts filterOpts
		in   []byte
		want uint32
	}{
		"read allowed":           {none, data(unix.SYS_READ), retAllow},
		"ptrace denied":          {none, data(unix.SYS_PTRACE), retEPERM},
		"unix socket":            {none, data(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM), retAllow},
		"inet socket none":       {none, data(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM), retEPERM},
		"tcp socket list":        {list, data(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC), retAllow},
		"udp socket list":        {list, data(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM), retEPERM},
		"mptcp list":             {list, data(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), retEPERM},
		"sctp list":              {list, data(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_SCTP), retEPERM},
		"tcp list by number":     {list, data(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP), retAllow},
		"mptcp all":              {all, data(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP), retEPERM},
		"udp all":                {all, data(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM), retAllow},
		"thread clone":           {none, data(unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_THREAD), retAllow},
		"clone new userns":       {none, data(unix.SYS_CLONE, unix.CLONE_NEWUSER), retEPERM},
		"clone3":                 {none, data(unix.SYS_CLONE3), retNOSYS},
		"TIOCSTI":                {none, data(unix.SYS_IOCTL, 0, unix.TIOCSTI), retEPERM},
		"TCGETS":                 {none, data(unix.SYS_IOCTL, 0, unix.TCGETS), retAllow},
		"foreign arch killed":    {none, func() []byte { b := data(unix.SYS_READ); b[7] = 0; return b }(), retKill},
		"execveat a path":        {none, data(unix.SYS_EXECVEAT, 3, 0, 0, 0, 0), retAllow},
		"execveat AT_EMPTY_PATH": {none, data(unix.SYS_EXECVEAT, 3, 0, 0, 0, unix.AT_EMPTY_PATH), retEPERM},
		"memfd plain":            {none, data(unix.SYS_MEMFD_CREATE, 0, unix.MFD_CLOEXEC), retEPERM},
		"memfd MFD_EXEC":         {none, data(unix.SYS_MEMFD_CREATE, 0, unix.MFD_EXEC), retEPERM},
		"memfd sealed":           {none, data(unix.SYS_MEMFD_CREATE, 0, unix.MFD_CLOEXEC|unix.MFD_NOEXEC_SEAL), retAllow},
		"memfd, sysctl sealed":   {sealed, data(unix.SYS_MEMFD_CREATE, 0, unix.MFD_CLOEXEC), retAllow},
		"mmap rw":                {none, data(unix.SYS_MMAP, 0, 4096, rw), retAllow},
		"mmap rx":                {none, data(unix.SYS_MMAP, 0, 4096, unix.PROT_READ|unix.PROT_EXEC), retAllow},
		"mmap rwx":               {none, data(unix.SYS_MMAP, 0, 4096, rwx), retEPERM},
		"mprotect wx":            {none, data(unix.SYS_MPROTECT, 0, 4096, unix.PROT_WRITE|unix.PROT_EXEC), retEPERM},
		"pkey_mprotect rwx":      {none, data(unix.SYS_PKEY_MPROTECT, 0, 4096, rwx, 1), retEPERM},
		"shmat SHM_EXEC":         {none, data(unix.SYS_SHMAT, 0, 0, shmExec), retEPERM},
		"shmat":                  {none, data(unix.SYS_SHMAT, 0, 0, 0), retAllow},
		"mmap rwx, jit":          {jit, data(unix.SYS_MMAP, 0, 4096, rwx), retAllow},
		"mprotect rwx, jit":      {jit, data(unix.SYS_MPROTECT, 0, 4096, rwx), retAllow},
		"execveat fd, jit":       {jit, data(unix.SYS_EXECVEAT, 3, 0, 0, 0, unix.AT_EMPTY_PATH), retEPERM},
		"memfd plain, jit":       {jit, data(unix.SYS_MEMFD_CREATE, 0, 0), retEPERM},
		// Without a memory cgroup: no shared memory RLIMIT_DATA misses.
		"shared anon, cgroup":      {none, data(unix.SYS_MMAP, 0, 3<<30, rw, unix.MAP_SHARED|unix.MAP_ANONYMOUS), retAllow},
		"shared anon, no cgroup":   {noShared, data(unix.SYS_MMAP, 0, 3<<30, rw, unix.MAP_SHARED|unix.MAP_ANONYMOUS), retEPERM},
		"validate anon, no cgroup": {noShared, data(unix.SYS_MMAP, 0, 4096, rw, unix.MAP_SHARED_VALIDATE|unix.MAP_ANONYMOUS), retEPERM},
		"private anon, no cgroup":  {noShared, data(unix.SYS_MMAP, 0, 4096, rw, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS), retAllow},
		"shared file, no cgroup":   {noShared, data(unix.SYS_MMAP, 0, 4096, rw, unix.MAP_SHARED, 3), retAllow},
		"memfd sealed, no cgroup":  {noShared, data(unix.SYS_MEMFD_CREATE, 0, unix.MFD_NOEXEC_SEAL), retEPERM},
		"shmget, no cgroup":        {noShared, data(unix.SYS_SHMGET, 0, 1<<30, 0), retEPERM},
		"shmget, cgroup":           {none, data(unix.SYS_SHMGET, 0, 1<<30, 0), retAllow},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, err := seccompFilter(c.opts)
			if err != nil {
				t.Fatal(err)
			}
			insns, ok := bpf.Disassemble(raw)
			if !ok {
				t.Fatal("filter does not disassemble")
			}
			vm, err := bpf.NewVM(insns)
			if err != nil {
				t.Fatal(err)
			}
			got, err := vm.Run(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if uint32(got) != c.want {
				t.Errorf("filter returned %#x, want %#x", got, c.want)
			}
		})
	}
}

func TestScrubEnv(t *testing.T) {
	t.Parallel()
	got := scrubEnv([]string{"SECRET=1", "PLUGIN_X=a", "LANG=C", "LANG=fr", "PLUGHOST_PLUGIN=c"}, []string{"LANG", "PLUGHOST_PLUGIN"})
	want := []string{"PLUGIN_X=a", "LANG=fr", "PLUGHOST_PLUGIN=c"}
	if !slices.Equal(got, want) {
		t.Errorf("scrubEnv = %v, want %v", got, want)
	}
}

// A "#!" script plugin may read and execute its interpreter (and, through
// env, the program env finds) under the default policy, also when the
// plugin directory holds a symbolic link to it (the stage execs the
// script itself: the link's directory, under /tmp, is hidden).
func TestScriptPlugins(t *testing.T) {
	for name, shebang := range map[string]string{"direct": "#!/bin/sh", "env": "#!/usr/bin/env sh", "link": "#!/bin/sh"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o755); err != nil { // reachable by uid 65534 when the test runs as root
				t.Fatal(err)
			}
			script := filepath.Join(dir, "plugin.sh")
			if err := os.WriteFile(script, []byte(shebang+"\necho script ran\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			if name == "link" {
				script = symlink(t, script, filepath.Join(t.TempDir(), "plugins", "script"))
			}
			l, err := New(&Options{StateDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			cmd := &exec.Cmd{Path: script, Args: []string{script}, Stdout: &out, Stderr: &errOut}
			launch, err := l.Wrap("script", nil, cmd)
			if err != nil {
				t.Fatal(err)
			}
			if err := launch.Cmd.Start(); err != nil {
				t.Fatal(err)
			}
			_, startErr := launch.Started(launch.Cmd.Process.Pid)
			waitErr := launch.Cmd.Wait()
			launch.Exited()
			if startErr != nil || waitErr != nil || out.String() != "script ran\n" {
				t.Errorf("script plugin: started %v, exit %v, stdout %q, stderr %q; want it to run", startErr, waitErr, out.String(), errOut.String())
			}
		})
	}
}

// A path granted inside a directory granted under a hidden one (a venv's
// console script inside the venv, both read-only) comes back with the
// directory. Putting it back on its own created its mount point inside
// the read-only directory (EROFS), which failed the private mounts before
// the fresh /proc: Landlock's all-threads call then waited forever for
// another process's threads. A writable path inside a read-only one
// still gets its own writable mount.
func TestNestedPutBack(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	if !within(base, "/tmp") {
		t.Skipf("the test's temporary directory %s is not under /tmp", base)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	venv := filepath.Join(base, "venv")
	data := writeFile(t, filepath.Join(venv, "lib", "data.txt"), "granted twice\n", 0o644)
	state := filepath.Join(venv, "state")
	if err := os.MkdirAll(state, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(state, 0o777); err != nil {
		t.Fatal(err)
	}
	script := writeFile(t, filepath.Join(venv, "bin", "server"),
		"#!/bin/sh\nread a < "+data+" && echo \"$a\" && echo written > "+state+"/out && read b < "+state+"/out && echo \"$b\"\n"+
			"(echo no > "+venv+"/lib/new) 2>/dev/null || echo read-only\n", 0o755)
	l, err := New(&Options{StateDir: t.TempDir(), StageTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd := &exec.Cmd{Path: script, Args: []string{script}, Stdout: &out, Stderr: &errOut}
	launch, err := l.Wrap("nested", &Policy{AllowRead: []string{venv, data, script}, AllowWrite: []string{state}}, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := launch.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rep, err := launch.Started(launch.Cmd.Process.Pid)
	waitErr := launch.Cmd.Wait()
	launch.Exited()
	if err != nil {
		t.Fatalf("Started: %v\nstderr: %s", err, errOut.String())
	}
	if want := "granted twice\nwritten\nread-only\n"; out.String() != want || waitErr != nil {
		t.Errorf("plugin output %q (exit %v, stderr %q), want %q", out.String(), waitErr, errOut.String(), want)
	}
	for _, ly := range []Layer{LayerMounts, LayerLandlock} {
		if !slices.Contains(rep.Active, ly) {
			t.Errorf("layer %s not active: missing %v", ly, rep.Missing)
		}
	}
}

// A stage that never reports fails Started after Options.StageTimeout,
// naming the stage, and its process group is killed. The stage here is a
// script that sleeps instead of confining anything.
func TestStageTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stage := writeFile(t, filepath.Join(dir, "stage"), "#!/bin/sh\n[ \"$2\" = nscheck ] && exit 0\n( while :; do sleep 1; done ) &\nexec sleep 600\n", 0o755)
	l, err := New(&Options{StateDir: t.TempDir(), Self: stage, StageTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cmd := &exec.Cmd{Path: "/bin/true", Args: []string{"/bin/true"}}
	launch, err := l.Wrap("hangs", nil, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := launch.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = launch.Started(launch.Cmd.Process.Pid)
	if !errors.Is(err, ErrStageTimeout) || !strings.Contains(err.Error(), "sandbox stage of hangs did not report within 300ms") {
		t.Errorf("Started = %v, want ErrStageTimeout naming the sandbox stage and the limit", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- launch.Cmd.Wait() }()
	select {
	case err := <-waited:
		if ws, ok := launch.Cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Errorf("the stage exited with %v, want killed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stage still runs 10s after Started gave up")
	}
	launch.Exited()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Started returned after %s, want about 300ms", d)
	}
	if pids := processesWithArg(t, stage); len(pids) > 0 {
		t.Errorf("processes of the stage's group still run: %v", pids)
	}
}

// processesWithArg lists the pids whose command line has arg.
func processesWithArg(t *testing.T, arg string) []int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cl, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if slices.Contains(strings.Split(string(cl), "\x00"), arg) {
			out = append(out, pid)
		}
	}
	return out
}

// The stage executes the plugin file the host handed it (the prepared
// command's extra file: the file the host opened and hashed), not what
// is at its path when the stage starts (issue 31): a script renamed over
// the path after the host opened the file does not run.
func TestStageExecutesTheHandedFile(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil { // reachable by uid 65534 when the test runs as root
		t.Fatal(err)
	}
	path := filepath.Join(dir, "plugin")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o755); err != nil {
		t.Fatal(err)
	}
	hashed, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer hashed.Close()
	swapped := filepath.Join(dir, ".swapped")
	if err := os.WriteFile(swapped, []byte("#!/bin/sh\necho swapped ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(swapped, path); err != nil {
		t.Fatal(err)
	}

	l, err := New(&Options{StateDir: t.TempDir(), PassEnv: []string{"SANDBOX_TEST_PLUGIN"}})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd := &exec.Cmd{Path: path, Args: []string{path}, Env: append(os.Environ(), "SANDBOX_TEST_PLUGIN=1"),
		Stdout: &out, Stderr: &errOut, ExtraFiles: []*os.File{hashed}}
	launch, err := l.Wrap("handed", &Policy{AllowRead: []string{dir}}, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := launch.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_, startErr := launch.Started(launch.Cmd.Process.Pid)
	waitErr := launch.Cmd.Wait()
	launch.Exited()
	if startErr != nil || waitErr != nil || !strings.HasPrefix(out.String(), "plugin ran;") {
		t.Fatalf("started %v, exit %v, stdout %q, stderr %q; want the handed file to run", startErr, waitErr, out.String(), errOut.String())
	}
}
