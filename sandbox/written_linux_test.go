package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// writtenPlugin is the test binary as a plugin that fills its tmp and
// tries to run what it wrote (mode "written"), or, as mode "exit0", the
// program it runs: it exits at once.
func writtenPlugin(mode string) {
	switch mode {
	case "exit0":
		os.Exit(0)
	case "filldata":
		// 16 MiB into $HOME, then wait to be killed.
		chunk := bytes.Repeat([]byte{1}, 1<<20)
		for i := range 16 {
			if err := os.WriteFile(filepath.Join(os.Getenv("HOME"), fmt.Sprint(i)), chunk, 0o600); err != nil {
				fmt.Println("write:", errName(err))
				os.Exit(1)
			}
		}
		fmt.Println("wrote 16 MiB")
		time.Sleep(time.Minute)
		os.Exit(0)
	case "written":
	default:
		return
	}
	var out []string
	say := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	// 4 GiB into $TMPDIR, a MiB at a time (or SANDBOX_TEST_FILL_MIB).
	fill := 4 << 10
	if n, err := strconv.Atoi(os.Getenv("SANDBOX_TEST_FILL_MIB")); err == nil {
		fill = n
	}
	f, err := os.Create(filepath.Join(os.TempDir(), "fill"))
	if err != nil {
		say("tmp: create: %s", errName(err))
	} else {
		chunk := bytes.Repeat([]byte{1}, 1<<20)
		n := 0
		for ; n < fill; n++ {
			if _, err = f.Write(chunk); err != nil {
				break
			}
		}
		say("tmp: %s after %d MiB", errName(err), n)
		f.Close()
		os.Remove(f.Name())
	}
	self, _ := os.Executable()
	payload, err := os.ReadFile(self)
	if err != nil {
		say("read self: %s", errName(err))
	}
	for _, dir := range []string{os.TempDir(), os.Getenv("HOME")} {
		name := "tmp"
		if dir == os.Getenv("HOME") {
			name = "data"
		}
		p := filepath.Join(dir, "copy")
		if err := os.WriteFile(p, payload, 0o755); err != nil {
			say("%s: write: %s", name, errName(err))
			continue
		}
		cmd := exec.Command(p)
		cmd.Env = []string{"SANDBOX_TEST_PLUGIN=exit0"}
		say("exec %s: %s", name, errName(cmd.Run()))
		g, err := os.Open(p)
		if err == nil {
			m, err := unix.Mmap(int(g.Fd()), 0, 4096, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
			if err == nil {
				unix.Munmap(m)
			}
			say("map exec %s: %s", name, errName(err))
			g.Close()
		}
		os.Remove(p)
	}
	os.Stdout.WriteString(strings.Join(out, "; ") + "\n")
	os.Exit(0)
}

// runWritten runs the test binary as the "written" plugin under pol and
// returns its stdout.
func runWritten(t *testing.T, opts Options, pol *Policy, env ...string) (string, *Report) {
	t.Helper()
	out, rep, why, err := runMode(t, opts, pol, "written", env...)
	if err != nil || why != "" {
		t.Fatalf("plugin: %v %s", err, why)
	}
	return out, rep
}

// runMode runs the test binary as the plugin of mode under pol, and
// returns its stdout, report, what Exited said, and the error of Started
// or of the process.
func runMode(t *testing.T, opts Options, pol *Policy, mode string, env ...string) (string, *Report, string, error) {
	t.Helper()
	self := mustExecutable(t)
	if os.Geteuid() == 0 {
		// The plugin runs as uid 65534: without a mount namespace it
		// reaches its binary and directories only through paths it may
		// search.
		dir := openDir(t)
		self = filepath.Join(dir, "plugin")
		copyFile(t, mustExecutable(t), self)
		opts.Self = self
		if opts.StateDir == "" {
			opts.StateDir = filepath.Join(dir, "state")
		}
	} else if opts.StateDir == "" {
		opts.StateDir = t.TempDir()
	}
	opts.PassEnv = []string{"SANDBOX_TEST_PLUGIN", "SANDBOX_TEST_FILL_MIB"}
	l, err := New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd := &exec.Cmd{Path: self, Args: []string{self}, Env: append(append(os.Environ(), "SANDBOX_TEST_PLUGIN="+mode), env...), Stdout: &out, Stderr: &errOut}
	launch, err := l.Wrap("written", pol, cmd)
	if err != nil {
		return "", nil, "", err
	}
	if err := launch.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rep, err := launch.Started(launch.Cmd.Process.Pid)
	waitErr := launch.Cmd.Wait()
	why := launch.Exited()
	if err == nil && waitErr != nil {
		err = fmt.Errorf("exit %v, stderr %s", waitErr, errOut.String())
	}
	return out.String(), rep, why, err
}

// Attack 4 and 10 of issue 31: a plugin writes 4 GiB into its tmp (a write
// past tmp_size fails with ENOSPC), and writes a program into its tmp and
// data directories and runs it (EACCES), or maps it executable (EPERM),
// unless allow_exec_written.
func TestWrittenPlaces(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		// Room for the test binary's copy (larger under -race).
		out, _ := runWritten(t, Options{}, &Policy{TmpSize: 64 << 20})
		want := "tmp: ENOSPC after 64 MiB; exec tmp: EACCES; map exec tmp: EPERM; exec data: EACCES; map exec data: EPERM\n"
		if out != want {
			t.Errorf("plugin output = %q, want %q", out, want)
		}
	})
	t.Run("allow_exec_written", func(t *testing.T) {
		out, _ := runWritten(t, Options{}, &Policy{TmpSize: 200 << 20, AllowExecWritten: true})
		// The tmpfs holds what the plugin wrote: its copy of itself
		// fits beside nothing else.
		want := "tmp: ENOSPC after 200 MiB; exec tmp: ok; map exec tmp: ok; exec data: ok; map exec data: ok\n"
		if out != want {
			t.Errorf("plugin output = %q, want %q", out, want)
		}
	})
	t.Run("no namespaces: Landlock alone", func(t *testing.T) {
		// No mount namespace, no tmpfs: the tmp is on the host's disk,
		// the storage watch's to bound (TestDataSize shows its kill);
		// Landlock still refuses execve (not mmap: it has no right for
		// that). The limit is above what the plugin writes (16 MiB, then
		// a copy of this test binary), so that the watch, polling, never
		// ends it before it has tried: under load it once did.
		out, _ := runWritten(t, Options{NoNamespaces: true}, &Policy{TmpSize: 1 << 30}, "SANDBOX_TEST_FILL_MIB=16")
		if !strings.Contains(out, "exec tmp: EACCES; map exec tmp: ok; exec data: EACCES;") {
			t.Errorf("plugin output = %q, want execve refused in tmp and data", out)
		}
	})
}

// A plugin that writes past its data_size is killed by the storage watch,
// which says why, and is not started again while its data directory
// stays over the limit; the watch reports what it holds.
func TestDataSize(t *testing.T) {
	opts := Options{StateDir: openDir(t), StorageCheckInterval: 20 * time.Millisecond}
	pol := &Policy{DataSize: 4 << 20}
	out, _, why, err := runMode(t, opts, pol, "filldata")
	if err == nil || !strings.Contains(why, "killed: its data directory held") || !strings.Contains(why, "over its limit of 4.0 MiB (data_size)") {
		t.Errorf("plugin: stdout %q, error %v, exited %q; want it killed naming data_size", out, err, why)
	}
	_, _, _, err = runMode(t, opts, pol, "exit0")
	if err == nil || !strings.Contains(err.Error(), "over its limit of 4.0 MiB: remove files there, or raise data_size") {
		t.Errorf("second start: %v, want it refused naming data_size", err)
	}
	if _, _, _, err := runMode(t, opts, &Policy{DataSize: 64 << 20}, "exit0"); err != nil {
		t.Errorf("with data_size raised: %v", err)
	}
}

// openDir is a temporary directory that every user may search, in /tmp.
func openDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sandbox-written-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustExecutable(t *testing.T) string {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
