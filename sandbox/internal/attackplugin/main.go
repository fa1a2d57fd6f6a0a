//go:build linux

// Command attackplugin is a test-only plughost plugin: each tool attempts
// one escape from the sandbox and returns what happened, as
// "denied ERRNO: message", "ok: ..." or "ESCAPED: ...". With the tool
// "allowed" it does only what its policy allows (the control plugin). The
// end-to-end tests in cmd/plughost drive it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/plughost/plughost/pluginproto"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "sleep" { // a fork-bomb child
		time.Sleep(time.Minute)
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "escaped" { // the payload, run from memory
		fmt.Println("ESCAPED: ran a copy of itself from memory")
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "ran-written" { // exec_written's payload
		fmt.Println("ESCAPED: ran a program it wrote")
		return
	}
	if len(os.Args) > 2 && os.Args[1] == "memfd" { // the memfd attacks' child
		fmt.Print(memfdExec(os.Args[2]))
		return
	}
	if len(os.Args) > 2 && os.Args[1] == "shared" { // the shared memory attacks' child
		fmt.Print(holdShared(os.Args[2]))
		return
	}
	p := pluginproto.New("attack", "1")
	for name, f := range attacks {
		p.AddTool(pluginproto.Tool{
			Name:        name,
			Description: "attempts: " + name,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"target":{"type":"string"}}}`),
		}, func(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
			var args struct{ Target string }
			if err := req.Bind(&args); err != nil {
				return nil, err
			}
			return pluginproto.TextResult(f(args.Target)), nil
		})
	}
	pluginproto.Serve(p)
}

// outcome describes err: "denied EACCES: ..." or "ESCAPED: <what>".
func outcome(err error, escaped string) string {
	if err == nil {
		return "ESCAPED: " + escaped
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return fmt.Sprintf("denied %s: %v", unix.ErrnoName(errno), err)
	}
	return "denied: " + err.Error()
}

var attacks = map[string]func(target string) string{
	"read_file": func(target string) string {
		b, err := os.ReadFile(target)
		return outcome(err, fmt.Sprintf("read %d bytes", len(b)))
	},
	"write_file": func(target string) string {
		return outcome(os.WriteFile(target, []byte("pwned"), 0o644), "wrote "+target)
	},
	"getenv": func(target string) string {
		if v, ok := os.LookupEnv(target); ok {
			return "ESCAPED: " + target + "=" + v
		}
		return "denied: " + target + " is not set"
	},
	"tcp_connect": func(target string) string {
		c, err := net.DialTimeout("tcp", target, 2*time.Second)
		if c != nil {
			c.Close()
		}
		return outcome(err, "connected to "+target)
	},
	"unix_connect": func(target string) string {
		c, err := net.DialTimeout("unix", target, 2*time.Second)
		if c != nil {
			c.Close()
		}
		return outcome(err, "connected to "+target)
	},
	"udp_socket": func(string) string {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if err == nil {
			unix.Close(fd)
		}
		return outcome(err, "opened a UDP socket")
	},
	"ptrace": func(string) string {
		// Any process will do: the host's is invisible; try our parent's
		// pid 0 fallback and pid 1 (ourselves in a pid namespace).
		err := unix.PtraceAttach(os.Getppid())
		if os.Getppid() == 0 {
			err = unix.PtraceAttach(1)
		}
		return outcome(err, "attached")
	},
	"mount": func(string) string {
		return outcome(unix.Mount("none", os.TempDir(), "tmpfs", 0, ""), "mounted a tmpfs")
	},
	"userns": func(string) string {
		return outcome(unix.Unshare(unix.CLONE_NEWUSER), "created a user namespace")
	},
	"tiocsti": func(string) string {
		c := byte('x')
		var last error
		for _, fd := range []uintptr{0, 1, 2} {
			_, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
			if errno == 0 {
				return fmt.Sprintf("ESCAPED: injected into fd %d", fd)
			}
			last = errno
		}
		return outcome(last, "")
	},
	"fork_bomb": func(string) string {
		self, err := os.Executable()
		if err != nil {
			return "denied: " + err.Error()
		}
		var pids []int
		defer func() {
			for _, pid := range pids {
				_ = unix.Kill(pid, unix.SIGKILL)
				var ws unix.WaitStatus
				_, _ = unix.Wait4(pid, &ws, 0, nil)
			}
		}()
		for i := 0; i < 1000; i++ {
			pid, err := syscall.ForkExec(self, []string{self, "sleep"}, &syscall.ProcAttr{})
			if err != nil {
				return fmt.Sprintf("%s after %d processes", outcome(err, ""), len(pids))
			}
			pids = append(pids, pid)
		}
		return fmt.Sprintf("ESCAPED: started %d processes", len(pids))
	},
	"alloc": func(target string) string {
		b := make([]byte, 2<<30)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		return fmt.Sprintf("ESCAPED: allocated and touched %d bytes", len(b))
	},
	"stdin": func(string) string {
		buf := make([]byte, 4096)
		n, err := os.Stdin.Read(buf)
		if n > 0 {
			return fmt.Sprintf("ESCAPED: read %q from stdin", buf[:n])
		}
		if errors.Is(err, io.EOF) {
			return "denied EOF: stdin is empty"
		}
		return outcome(err, "")
	},
	"uid": func(string) string {
		return fmt.Sprintf("uid %d gid %d", os.Getuid(), os.Getgid())
	},
	// The memfd attacks copy the plugin's own binary into a memfd and run
	// it, in a child process so that the plugin survives a success: by
	// execveat(AT_EMPTY_PATH), by execve of /proc/self/fd/N, and by
	// execve of a memfd asking for MFD_EXEC.
	"memfd_execveat":  memfdAttack("execveat"),
	"memfd_proc_path": memfdAttack("proc"),
	"memfd_mfd_exec":  memfdAttack("mfd_exec"),
	"wx_mmap": func(string) string {
		b, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE|unix.PROT_EXEC, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err == nil {
			unix.Munmap(b)
		}
		return outcome(err, "mapped memory writable and executable")
	},
	"wx_mprotect": func(string) string {
		b, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return "FAILED: " + err.Error()
		}
		defer unix.Munmap(b)
		return outcome(unix.Mprotect(b, unix.PROT_READ|unix.PROT_WRITE|unix.PROT_EXEC), "made memory writable and executable")
	},
	// proc_self_mem opens its own memory for writing, through which a
	// process may patch its read-only, executable code (the kernel writes
	// past page protections there): write xor execute without mprotect.
	"proc_self_mem": func(string) string {
		f, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
		if f != nil {
			f.Close()
		}
		return outcome(err, "opened /proc/self/mem for writing")
	},
	// fill_tmp writes 4 GiB into its tmp ($TMPDIR), a MiB at a time.
	"fill_tmp": func(string) string {
		p := filepath.Join(os.TempDir(), "fill")
		defer os.Remove(p)
		f, err := os.Create(p)
		if err != nil {
			return "FAILED: " + err.Error()
		}
		defer f.Close()
		chunk := make([]byte, 1<<20)
		for i := range 4 << 10 {
			if _, err := f.Write(chunk); err != nil {
				return fmt.Sprintf("%s after %d MiB", outcome(err, ""), i)
			}
		}
		return "ESCAPED: wrote 4096 MiB into " + p
	},
	// exec_written copies the plugin into its tmp (target "tmp") or data
	// directory ("data") and runs the copy.
	"exec_written": func(target string) string {
		dir := os.TempDir()
		if target == "data" {
			dir = os.Getenv("HOME")
		}
		self, err := os.Executable()
		if err != nil {
			return "FAILED: " + err.Error()
		}
		payload, err := os.ReadFile(self)
		if err != nil {
			return "FAILED: " + err.Error()
		}
		p := filepath.Join(dir, "dropped")
		defer os.Remove(p)
		if err := os.WriteFile(p, payload, 0o755); err != nil {
			return "FAILED: " + err.Error()
		}
		out, err := exec.Command(p, "ran-written").Output()
		if err != nil {
			return outcome(err, "")
		}
		return string(out)
	},
	// The shared memory attacks hold 3 GiB the plugin's memory limit
	// should count, in a child (which the memory cgroup's OOM killer
	// picks, so that the plugin survives): mapped MAP_SHARED|MAP_ANONYMOUS,
	// in a memfd, in /dev/shm, in a System V segment, and mapped shared
	// from /dev/zero.
	"shared_anon":  sharedAttack("anon"),
	"shared_memfd": sharedAttack("memfd"),
	"shared_shm":   sharedAttack("devshm"),
	"shared_sysv":  sharedAttack("sysv"),
	"shared_zero":  sharedAttack("zero"),
	// allowed does only what the default policy allows: it writes and reads
	// back a file in its data directory ($HOME) and its tmp, and reads its
	// own binary.
	"allowed": func(string) string {
		for _, dir := range []string{os.Getenv("HOME"), os.TempDir()} {
			p := filepath.Join(dir, "control.txt")
			if err := os.WriteFile(p, []byte("fine"), 0o600); err != nil {
				return "FAILED: " + err.Error()
			}
			if b, err := os.ReadFile(p); err != nil || string(b) != "fine" {
				return fmt.Sprintf("FAILED: read back %q, %v", b, err)
			}
		}
		self, err := os.Executable()
		if err != nil {
			return "FAILED: " + err.Error()
		}
		if _, err := os.ReadFile(self); err != nil {
			return "FAILED: " + err.Error()
		}
		return "ok"
	},
}

// memfdAttack runs the plugin again as a child that attempts variant (see
// memfdExec) and returns what the child printed.
func memfdAttack(variant string) func(string) string {
	return func(string) string {
		self, err := os.Executable()
		if err != nil {
			return "FAILED: " + err.Error()
		}
		out, err := exec.Command(self, "memfd", variant).Output()
		if err != nil && len(out) == 0 {
			return "FAILED: the child: " + err.Error()
		}
		return string(out)
	}
}

// memfdExec copies this binary into a memfd and executes it with the
// argument "escaped", which prints an ESCAPED line: through
// execveat(fd, "", AT_EMPTY_PATH) ("execveat"), execve("/proc/self/fd/N")
// ("proc"), or the latter for a memfd created with MFD_EXEC ("mfd_exec").
// It returns only when that failed, saying which step did.
func memfdExec(variant string) string {
	self, err := os.Executable()
	if err != nil {
		return "FAILED: " + err.Error()
	}
	payload, err := os.ReadFile(self)
	if err != nil {
		return "FAILED: " + err.Error()
	}
	flags := 0
	if variant == "mfd_exec" {
		flags = unix.MFD_EXEC
	}
	fd, err := unix.MemfdCreate("payload", flags)
	if err != nil {
		return outcome(fmt.Errorf("memfd_create: %w", err), "")
	}
	if _, err := unix.Write(fd, payload); err != nil {
		return "FAILED: writing the memfd: " + err.Error()
	}
	argv := []string{self, "escaped"}
	if variant != "execveat" {
		path := fmt.Sprintf("/proc/self/fd/%d", fd)
		return outcome(fmt.Errorf("execve %s: %w", path, syscall.Exec(path, argv, os.Environ())), "")
	}
	argvp, _ := syscall.SlicePtrFromStrings(argv)
	envp, _ := syscall.SlicePtrFromStrings(os.Environ())
	empty := []byte{0}
	_, _, errno := syscall.Syscall6(unix.SYS_EXECVEAT, uintptr(fd), uintptr(unsafe.Pointer(&empty[0])),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])), unix.AT_EMPTY_PATH, 0)
	return outcome(fmt.Errorf("execveat AT_EMPTY_PATH: %w", errno), "")
}

// sharedAttack runs the plugin again as a child that holds 3 GiB of
// shared memory of kind (see holdShared), and says how that ended.
func sharedAttack(kind string) func(string) string {
	return func(string) string {
		self, err := os.Executable()
		if err != nil {
			return "FAILED: " + err.Error()
		}
		out, err := exec.Command(self, "shared", kind).Output()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return fmt.Sprintf("denied %s: the child was killed holding shared memory (%s)", unix.SignalName(ws.Signal()), out)
			}
		}
		if err != nil && len(out) == 0 {
			return "FAILED: the child: " + err.Error()
		}
		return string(out)
	}
}

// holdShared maps 3 GiB of shared memory of kind and touches every page:
// "anon" (MAP_SHARED|MAP_ANONYMOUS), "memfd", "devshm" (a file in
// /dev/shm), "sysv" (shmget) or "zero" (/dev/zero opened for writing). It
// returns "ESCAPED: ..." once it holds it all, or how it was refused.
func holdShared(kind string) string {
	const size = 3 << 30
	var mem []byte
	var err error
	switch kind {
	case "anon":
		mem, err = unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
		err = wrap("mmap MAP_SHARED|MAP_ANONYMOUS", err)
	case "memfd", "devshm", "zero":
		var fd int
		switch kind {
		case "memfd":
			fd, err = unix.MemfdCreate("hold", unix.MFD_NOEXEC_SEAL)
			err = wrap("memfd_create", err)
		case "devshm":
			fd, err = unix.Open("/dev/shm/hold", unix.O_RDWR|unix.O_CREAT, 0o600)
			err = wrap("open /dev/shm/hold", err)
		default:
			fd, err = unix.Open("/dev/zero", unix.O_RDWR, 0)
			err = wrap("open /dev/zero", err)
		}
		if err == nil && kind != "zero" {
			err = wrap("ftruncate", unix.Ftruncate(fd, size))
		}
		if err == nil {
			mem, err = unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			err = wrap("mmap", err)
		}
	case "sysv":
		var id int
		id, err = unix.SysvShmGet(unix.IPC_PRIVATE, size, unix.IPC_CREAT|0o600)
		err = wrap("shmget", err)
		if err == nil {
			mem, err = unix.SysvShmAttach(id, 0, 0)
			err = wrap("shmat", err)
			// Removed once detached: a killed child leaves nothing.
			_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
		}
	}
	if err != nil {
		return outcome(err, "")
	}
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1
	}
	return fmt.Sprintf("ESCAPED: held %d MiB of %s shared memory", len(mem)>>20, kind)
}

// wrap prefixes err (nil stays nil) with what failed.
func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
