//go:build unix

package rundir_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/plughost/plughost/internal/rundir"
)

// TestHelperProcess is not a test: run by holder with RUNDIR_BASE set, it
// creates a run directory there, prints its path and waits for stdin to
// close (go-plugin's pattern for tests that need real processes).
func TestHelperProcess(t *testing.T) {
	base := os.Getenv("RUNDIR_BASE")
	if base == "" {
		return
	}
	d, err := rundir.Create(base)
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString(d.Path() + "\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the test closes stdin
	if err := d.Remove(); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	os.Exit(0)
}

// holder is another process holding a run directory under base.
type holder struct {
	cmd   *exec.Cmd
	stdin interface{ Close() error }
	dir   string
}

func startHolder(t *testing.T, base string) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "RUNDIR_BASE="+base)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the helper process printed no run directory: %v", err)
	}
	return &holder{cmd: cmd, stdin: stdin, dir: strings.TrimSpace(line)}
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

// A killed process's directory is swept; a live one's, this process's own
// and whatever is not a run directory stay.
func TestSweepRemovesOnlyTheDead(t *testing.T) {
	base := t.TempDir()
	dead, live := startHolder(t, base), startHolder(t, base)
	if err := os.WriteFile(filepath.Join(dead.dir, "left"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := dead.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = dead.cmd.Wait() // reaped: its lock is released
	own, err := rundir.Create(base)
	if err != nil {
		t.Fatal(err)
	}
	others := []string{filepath.Join(base, "plughost-bench-1"), filepath.Join(base, "plughost-12-x")}
	for _, d := range others {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}

	removed, err := rundir.Sweep(base)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{dead.dir}) {
		t.Errorf("Sweep removed %q, want only the killed process's %q", removed, dead.dir)
	}
	for _, d := range append([]string{live.dir, own.Path()}, others...) {
		if !exists(t, d) {
			t.Errorf("%s was removed; only a dead host's run directory may be", d)
		}
	}

	// An ordinary end removes the directory.
	live.stdin.Close()
	if err := live.cmd.Wait(); err != nil {
		t.Fatalf("helper process: %v", err)
	}
	if err := own.Remove(); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{live.dir, own.Path()} {
		if exists(t, d) {
			t.Errorf("%s is left after Remove", d)
		}
	}
}

// Run directories never share a name, are locked from the start (a sweep
// passes them over), and let others pass through but not list them.
func TestCreateNamesAreLockedAndDistinct(t *testing.T) {
	base := t.TempDir()
	a, err := rundir.Create(base)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rundir.Create(base)
	if err != nil {
		t.Fatal(err)
	}
	if a.Path() == b.Path() {
		t.Fatalf("two run directories share %s", a.Path())
	}
	if removed, err := rundir.Sweep(base); err != nil || len(removed) != 0 {
		t.Errorf("Sweep of locked directories: removed %q, error %v; want none", removed, err)
	}
	st, err := os.Stat(a.Path())
	if err != nil {
		t.Fatal(err)
	}
	if mode := st.Mode().Perm(); mode != 0o711 {
		t.Errorf("run directory mode %o, want 711", mode)
	}
}
