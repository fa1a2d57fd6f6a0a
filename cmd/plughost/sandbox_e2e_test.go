package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The sandbox's proof by attack: a real plughost runs the test-only attack
// plugin (sandbox/internal/attackplugin) twice, as "attack" and "control",
// next to the bundled files plugin; every escape attempt must fail with the
// specific failure asserted, and the allowed work must succeed. When the
// tests run as root, the same runs again with plughost as uid 1000. The
// control plugin's policy has allow_jit = true: it may map writable and
// executable memory, and still not execute anything from memory.

var buildAttack = sync.OnceValues(func() (string, error) {
	out := filepath.Join(bin.dir, "attackplugin")
	cmd := exec.Command("go", "build", "-o", out, "../../sandbox/internal/attackplugin")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", err
	}
	// uid 1000 and uid 65534 must be able to run what TestMain built.
	return out, os.Chmod(bin.dir, 0o755)
})

func TestSandboxAttacks(t *testing.T) {
	t.Parallel()
	if _, err := buildAttack(); err != nil {
		t.Fatal(err)
	}
	t.Run("host uid "+fmt.Sprint(os.Geteuid()), func(t *testing.T) { runAttacks(t, -1) })
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("setpriv"); err != nil {
			t.Fatal("running as root, the uid 1000 run needs setpriv (util-linux)")
		}
		t.Run("host uid 1000", func(t *testing.T) { runAttacks(t, 1000) })
	}
}

// sandboxHost is a plughost serving a plugin directory, as uid (or as the
// test's own uid when uid < 0), driven by the go-sdk client.
type sandboxHost struct {
	base, plugins, workspace, state string
	cmd                             *exec.Cmd
	session                         *mcp.ClientSession
	stderr                          *lineBuffer
}

func startSandboxHost(t *testing.T, uid int, env ...string) *sandboxHost {
	t.Helper()
	attack, _ := buildAttack()
	base, err := os.MkdirTemp("", "plughost-sandbox-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	h := &sandboxHost{base: base, plugins: filepath.Join(base, "plugins"), workspace: filepath.Join(base, "workspace"),
		state: filepath.Join(base, "state"), stderr: newLineBuffer()}
	for _, d := range []string{h.plugins, h.workspace, h.state, filepath.Join(base, "data")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(base, 0o755)
	os.Chmod(h.workspace, 0o777) // as root, plugins run as 65534
	data, err := os.ReadFile(attack)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"attack", "control"} {
		if err := os.WriteFile(filepath.Join(h.plugins, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyPlugin(t, "files", h.plugins, "files")
	// Another plugin's data directory, with a secret in it.
	secretDir := filepath.Join(h.state, "plughost", "plugins", "control", "data")
	if err := os.MkdirAll(secretDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secretDir, "secret"), []byte("control's secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(base, "plughost.hcl")
	if err := os.WriteFile(config, []byte("sandbox {\n  plugin \"control\" {\n    allow_jit = true\n    allow_exec_written = true\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{bin.plughost, "serve", "--plugins", h.plugins, "--workspace", h.workspace, "--config", config, "--log-level", "debug"}
	if uid >= 0 {
		for _, d := range []string{base, h.plugins, h.workspace, h.state, filepath.Join(base, "data")} {
			filepath.Walk(d, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, uid, uid) })
		}
		args = append([]string{"setpriv", "--reuid", fmt.Sprint(uid), "--regid", fmt.Sprint(uid), "--clear-groups"}, args...)
	}
	h.cmd = exec.Command(args[0], args[1:]...)
	h.cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(base, "data"), "XDG_CACHE_HOME="+filepath.Join(base, "cache"), "XDG_STATE_HOME="+h.state, "HOME="+base)
	h.cmd.Env = append(h.cmd.Env, env...)
	h.cmd.Stderr = h.stderr
	stdin, err := h.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { h.cmd.Wait(); close(exited) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "sandbox-e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h.session, err = client.Connect(ctx, &mcp.IOTransport{Reader: stdout, Writer: stdin}, sessionEra)
	if err != nil {
		h.cmd.Process.Kill()
		t.Fatalf("connect: %v\nstderr:\n%s", err, h.stderr)
	}
	t.Cleanup(func() {
		h.session.Close()
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			h.cmd.Process.Kill()
			t.Errorf("plughost did not exit within 15s of stdin closing")
			<-exited
		}
		if leftover := processesUnder(h.plugins); len(leftover) > 0 {
			t.Errorf("plugin processes outlived the host: %v", leftover)
		}
		if t.Failed() {
			t.Logf("plughost stderr:\n%s", h.stderr)
		}
	})
	return h
}

func (h *sandboxHost) call(t *testing.T, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return text(res), res.IsError
}

// awaitTools waits until every named tool is listed.
func (h *sandboxHost) awaitTools(t *testing.T, names ...string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var have []string
		for tl, err := range h.session.Tools(context.Background(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			have = append(have, tl.Name)
		}
		missing := 0
		for _, n := range names {
			if !strings.Contains(" "+strings.Join(have, " ")+" ", " "+n+" ") {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools %v not all listed; have %v\nstderr:\n%s", names, have, h.stderr)
		}
		h.stderr.awaitChange(100 * time.Millisecond)
	}
}

func runAttacks(t *testing.T, uid int) {
	const secret = "PLUGHOST_TEST_SECRET"
	start := time.Now()
	h := startSandboxHost(t, uid, secret+"=hunter2")
	// Both attack plugins expose the same tools: clients see them as
	// attack__<tool> and control__<tool>.
	h.awaitTools(t, "attack__read_file", "control__allowed", "create_file")

	tcp, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	sock := filepath.Join(h.base, "host.sock")
	unixLn, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer unixLn.Close()
	os.Chmod(sock, 0o777)
	home, _ := os.UserHomeDir()
	homeFile, err := os.CreateTemp(home, ".plughost-attack-")
	if err != nil {
		t.Fatal(err)
	}
	homeFile.WriteString("operator's notes")
	homeFile.Close()
	os.Chmod(homeFile.Name(), 0o644)
	t.Cleanup(func() { os.Remove(homeFile.Name()) })

	// Inside its namespaces a plugin is uid 65534 when plughost runs as
	// root, and keeps plughost's own uid (never 0) when it does not. A
	// memfd is sealed against execution as root (vm.memfd_noexec = 2 in
	// the plugin's pid namespace: execve fails with EACCES, MFD_EXEC too);
	// as an ordinary user seccomp refuses a memfd that is not sealed.
	pluginUID, memfdPath, memfdExec := 65534, "denied EACCES: execve /proc/self/fd/", "denied EACCES: memfd_create"
	if uid >= 0 || os.Geteuid() != 0 {
		pluginUID = max(uid, os.Geteuid())
		memfdPath, memfdExec = "denied EPERM: memfd_create", "denied EPERM: memfd_create"
	}
	memfdAt := "denied EPERM: execveat AT_EMPTY_PATH"
	if pluginUID != 65534 {
		memfdAt = "denied EPERM: memfd_create"
	}
	// Shared memory: as root the memory cgroup counts it, and kills the
	// child holding it; as an ordinary user there is no cgroup, and the
	// sandbox refuses what RLIMIT_DATA would not count (issue 31, attack
	// 18).
	sharedAnon, sharedMemfd, sharedSysv := "denied SIGKILL", "denied SIGKILL", "denied SIGKILL"
	if pluginUID != 65534 {
		sharedAnon, sharedMemfd, sharedSysv = "denied EPERM: mmap MAP_SHARED|MAP_ANONYMOUS", "denied EPERM: memfd_create", "denied EPERM: shmget"
	}
	for _, a := range []struct {
		name, tool, target string
		want               string // prefix of the outcome
	}{
		{"run as uid 0 inside its namespace", "uid", "", fmt.Sprintf("uid %d gid %d", pluginUID, pluginUID)},
		{"execveat a memfd holding an ELF (AT_EMPTY_PATH)", "memfd_execveat", "", memfdAt},
		{"execve a memfd holding an ELF through /proc/self/fd", "memfd_proc_path", "", memfdPath},
		{"create an executable memfd (MFD_EXEC)", "memfd_mfd_exec", "", memfdExec},
		{"map memory writable and executable", "wx_mmap", "", "denied EPERM"},
		{"mprotect memory writable and executable", "wx_mprotect", "", "denied EPERM"},
		{"patch its own code through /proc/self/mem", "proc_self_mem", "", "denied EACCES"},
		{"read /etc/shadow", "read_file", "/etc/shadow", "denied EACCES"},
		{"read a 0644 file in the operator's home", "read_file", homeFile.Name(), "denied ENOENT"},
		{"read another plugin's data directory", "read_file", filepath.Join(h.state, "plughost", "plugins", "control", "data", "secret"), "denied ENOENT"},
		{"read the host's environment", "getenv", secret, "denied: " + secret + " is not set"},
		{"read the host's environ file", "read_file", fmt.Sprintf("/proc/%d/environ", h.cmd.Process.Pid), "denied ENOENT"},
		// The plugin directory is under /tmp: hidden, only the binary is put back.
		{"write outside its allowed dirs", "write_file", filepath.Join(h.plugins, "dropped"), "denied EROFS"},
		{"write into the host's state directory", "write_file", filepath.Join(h.state, "dropped"), "denied EROFS"},
		{"write to /etc", "write_file", "/etc/plughost-pwned", "denied EACCES"},
		{"connect to the host's TCP listener", "tcp_connect", tcp.Addr().String(), "denied EPERM"},
		{"connect to the host's unix socket", "unix_connect", sock, "denied ENOENT"},
		{"open an outbound UDP socket", "udp_socket", "", "denied EPERM"},
		{"ptrace another process", "ptrace", "", "denied EPERM"},
		{"mount", "mount", "", "denied EPERM"},
		{"create a user namespace", "userns", "", "denied EPERM"},
		{"inject into the terminal (TIOCSTI)", "tiocsti", "", "denied EPERM"},
		{"fork-bomb", "fork_bomb", "", "denied EAGAIN"},
		{"read the host's stdin", "stdin", "", "denied EOF"},
		// Issue 31: attacks 4 (disks), 10 (exec from written places) and 18 (shared memory).
		{"write 4 GiB into its tmp", "fill_tmp", "", "denied ENOSPC"},
		{"run a program it wrote into its tmp", "exec_written", "tmp", "denied EACCES"},
		{"run a program it wrote into its data directory", "exec_written", "data", "denied EACCES"},
		{"hold 3 GiB mapped MAP_SHARED|MAP_ANONYMOUS", "shared_anon", "", sharedAnon},
		{"hold 3 GiB in a memfd", "shared_memfd", "", sharedMemfd},
		{"hold 3 GiB in a System V segment", "shared_sysv", "", sharedSysv},
		{"hold 3 GiB in /dev/shm", "shared_shm", "", "denied ENOENT: open /dev/shm/hold"},
		{"hold 3 GiB mapped shared from /dev/zero", "shared_zero", "", "denied EACCES: open /dev/zero"},
	} {
		t.Run(a.name, func(t *testing.T) {
			got, isErr := h.call(t, "attack__"+a.tool, map[string]any{"target": a.target})
			if isErr || !strings.HasPrefix(got, a.want) {
				t.Errorf("%s(%q) = %q (isError %v), want %q…", a.tool, a.target, got, isErr, a.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(h.plugins, "dropped")); err == nil {
		t.Errorf("the attack plugin wrote into the plugin directory")
	}

	t.Run("control does allowed work", func(t *testing.T) {
		if got, isErr := h.call(t, "control__allowed", nil); isErr || got != "ok" {
			t.Errorf("allowed = %q (isError %v), want ok", got, isErr)
		}
	})
	t.Run("allow_jit maps writable and executable memory, and no more", func(t *testing.T) {
		for tool, want := range map[string]string{
			"control__wx_mmap":        "ESCAPED: mapped memory writable and executable", // what allow_jit allows
			"control__wx_mprotect":    "ESCAPED: made memory writable and executable",
			"control__memfd_execveat": memfdAt,
			"control__memfd_mfd_exec": memfdExec,
			"control__exec_written":   "ESCAPED: ran a program it wrote", // what allow_exec_written allows
		} {
			if got, isErr := h.call(t, tool, nil); isErr || !strings.HasPrefix(got, want) {
				t.Errorf("%s = %q (isError %v), want %q…", tool, got, isErr, want)
			}
		}
		h.stderr.await(t, "allowed for a JIT compiler: allow_jit")
	})
	t.Run("files writes inside its workspace", func(t *testing.T) {
		got, isErr := h.call(t, "create_file", map[string]any{"filename": "notes/today.txt", "content": "hi"})
		if isErr {
			t.Fatalf("create_file: %s", got)
		}
		if b, err := os.ReadFile(filepath.Join(h.workspace, "notes", "today.txt")); err != nil || string(b) != "hi" {
			t.Errorf("workspace file = %q, %v", b, err)
		}
	})
	t.Run("allocate 2 GiB", func(t *testing.T) {
		got, isErr := h.call(t, "attack__alloc", nil)
		if !isErr || !strings.Contains(got, "plugin attack exited") {
			t.Errorf("alloc = %q (isError %v), want a failed call naming the plugin's exit", got, isErr)
		}
		h.stderr.await(t, "out of memory")
	})
	// The host is healthy after the fork bomb and the allocation, and the
	// attack plugin was restarted.
	for strings.Count(h.stderr.String(), "plugin loaded: plugin=attack") < 2 {
		h.stderr.awaitChange(time.Second)
		if t.Failed() || time.Since(start) > 3*time.Minute {
			t.Fatalf("the attack plugin was not restarted")
		}
	}
	h.awaitTools(t, "attack__read_file", "control__allowed")
	if got, _ := h.call(t, "attack__stdin", nil); !strings.HasPrefix(got, "denied EOF") {
		t.Errorf("after restart: stdin = %q", got)
	}
	h.stderr.await(t, `sandbox="`)
}

// awaitChange waits until more stderr arrives, or at most d.
func (b *lineBuffer) awaitChange(d time.Duration) {
	b.mu.Lock()
	ch := b.changed
	b.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(d):
	}
}
