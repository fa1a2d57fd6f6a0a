package manager

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plughost/plughost/host/trust"
)

// swapRig is a pinned plugin tp approved as pluginV1, whose file (or a
// link's target) a swapper replaces with pluginV2 and back in a tight
// loop, while the plugin is killed as soon as it starts so that it starts
// again and again.
type swapRig struct {
	h        *harness
	digest   string // the approved one: pluginV1's
	starts   atomic.Int64
	started  chan struct{} // a start, or a quarantine: the driver kills or waits
	mu       sync.Mutex
	approved []string // the digests of every change to state approved
}

func newSwapRig(t *testing.T, dir, approvedPath string) *swapRig {
	t.Helper()
	r := &swapRig{started: make(chan struct{}, 1)}
	trustFile := filepath.Join(t.TempDir(), "trust.json")
	r.digest = approveFile(t, trustFile, approvedPath)
	checker, err := trust.New(&trust.Options{Mode: trust.ModePinned, File: trustFile, OnChange: func(c trust.Change) {
		if c.State == trust.StateApproved {
			r.mu.Lock()
			r.approved = append(r.approved, c.Digest)
			r.mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	onEvent := func(plugin string, ev Event) {
		if plugin != "tp" || (ev != EventStarted && ev != EventQuarantined) {
			return
		}
		if ev == EventStarted {
			r.starts.Add(1)
		}
		select {
		case r.started <- struct{}{}:
		default:
		}
	}
	r.h = start(t, dir, Options{Trust: checker, OnEvent: onEvent, BackoffInitial: time.Millisecond, BackoffMax: 5 * time.Millisecond})
	return r
}

// swap replaces target with v2 and v1 alternately (a hard link renamed
// over it: atomic, as an attacker would) until stop is closed; it leaves
// v1 in place.
func swap(t *testing.T, target string, stop <-chan struct{}, done chan<- int) {
	staging := filepath.Join(filepath.Dir(target), ".swap")
	v1, v2 := staging+"-v1", staging+"-v2"
	copyFile(t, pluginV1, v1, 0o755)
	copyFile(t, pluginV2, v2, 0o755)
	n := 0
	for {
		for _, src := range []string{v2, v1} {
			_ = os.Remove(staging)
			if err := os.Link(src, staging); err == nil {
				_ = os.Rename(staging, target)
			}
		}
		n++
		select {
		case <-stop:
			done <- n
			return
		default:
		}
	}
}

// drive kills tp each time it starts until it has started want times or
// the time is up, and returns how many starts it saw.
func (r *swapRig) drive(t *testing.T, want int64, limit time.Duration) int64 {
	t.Helper()
	deadline := time.After(limit)
	for r.starts.Load() < want {
		select {
		case <-r.started:
		case <-deadline:
			return r.starts.Load()
		}
		if pid := r.h.m.Status()[0].PID; pid > 0 {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
	}
	return r.starts.Load()
}

// check asserts that pluginV2's bytes never ran (the test plugin logs
// "testplugin started" with its variant as it starts, before it could
// answer any call) and that no check found state approved for another
// digest than the approved one.
func (r *swapRig) check(t *testing.T) {
	t.Helper()
	r.h.logs.mu.Lock()
	defer r.h.logs.mu.Unlock()
	for _, line := range r.h.logs.raw {
		if strings.Contains(line, `"variant":"v2"`) || strings.Contains(line, "testplugin v2") {
			t.Errorf("the unapproved binary ran: %s", line)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.approved {
		if d != r.digest {
			t.Errorf("state approved logged for digest %s; only %s is approved", d, r.digest)
		}
	}
}

// TestPinnedPluginSwappedByRenameNeverRunsUnapproved (issue 31, attack
// 2): the approved file renamed away and an unapproved one renamed over
// it, in a tight loop across many starts: what runs is always the file
// that was hashed, so the unapproved bytes never run and are never
// logged approved.
func TestPinnedPluginSwappedByRenameNeverRunsUnapproved(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tp")
	copyFile(t, pluginV1, path, 0o755)
	r := newSwapRig(t, dir, path)
	r.h.ready()

	stop, done := make(chan struct{}), make(chan int, 1)
	go swap(t, path, stop, done)
	starts := r.drive(t, 40, 90*time.Second)
	close(stop)
	swaps := <-done
	t.Logf("%d starts during %d swaps", starts, swaps)
	if starts < 30 {
		t.Fatalf("only %d starts during the swapping; want 30 or more", starts)
	}
	r.check(t)
}

// TestPinnedPluginLinkIsRefused (issue 31, attack 2): a pinned plugin
// that is a symbolic link to a file outside the plugin directory, whose
// target is swapped in a tight loop, is refused as a link (state
// exposed) whatever its target's digest: nothing starts, and nothing is
// logged approved.
func TestPinnedPluginLinkIsRefused(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "tp-real")
	copyFile(t, pluginV1, target, 0o755)
	if err := os.Symlink(target, filepath.Join(dir, "tp")); err != nil {
		t.Fatal(err)
	}
	r := newSwapRig(t, dir, target)
	r.h.ready()
	stop, done := make(chan struct{}), make(chan int, 1)
	go swap(t, target, stop, done)
	select {
	case <-r.started:
	case <-time.After(waitLong):
		t.Fatal("tp neither started nor was quarantined")
	}
	st := r.h.status("tp")
	close(stop)
	<-done
	if st.State != StateQuarantined || st.Trust.State != trust.StateExposed ||
		!strings.Contains(st.Trust.Reason, "symbolic link to "+target) {
		t.Fatalf("a pinned plugin that is a link: %+v", st)
	}
	if n := r.starts.Load(); n != 0 {
		t.Fatalf("%d starts of a refused link", n)
	}
	r.check(t)
}

// TestExposedPluginFile (issue 31, attack 9): a plugin directory
// writable by others, a plugin file writable by others, and a plugin
// file owned by another user are refused in mode pinned (state exposed,
// the reason naming the mode bits and the owner) and signed, and run
// with a warning saying the same in mode open.
func TestExposedPluginFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user takes root")
	}
	cases := []struct {
		name    string
		prepare func(t *testing.T, dir, path string)
		want    string
	}{
		{"directory 0777", func(t *testing.T, dir, _ string) { chmod(t, dir, 0o777) }, "plugin directory %DIR% is writable by others than its owner uid 0 (root) (mode -rwxrwxrwx)"},
		{"file 0777", func(t *testing.T, _, path string) { chmod(t, path, 0o777) }, "plugin file %DIR%/tp is writable by others than its owner uid 0 (root) (mode -rwxrwxrwx)"},
		{"file of uid 1000", func(t *testing.T, _, path string) {
			if err := os.Chown(path, 1000, 1000); err != nil {
				t.Fatal(err)
			}
		}, "plugin file %DIR%/tp is owned by uid 1000"},
	}
	for _, tc := range cases {
		for _, mode := range []trust.Mode{trust.ModePinned, trust.ModeSigned, trust.ModeOpen} {
			t.Run(tc.name+"/"+string(mode), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				path := filepath.Join(dir, "tp")
				copyFile(t, pluginV1, path, 0o755)
				tc.prepare(t, dir, path)
				want := strings.ReplaceAll(tc.want, "%DIR%", dir)
				trustFile := filepath.Join(t.TempDir(), "trust.json")
				approveFile(t, trustFile, path)
				signers := filepath.Join(t.TempDir(), "allowed_signers")
				if err := os.WriteFile(signers, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				checker, err := trust.New(&trust.Options{Mode: mode, File: trustFile, AllowedSigners: signers})
				if err != nil {
					t.Fatal(err)
				}
				events := make(eventLog, 64)
				h := start(t, dir, Options{Trust: checker, OnEvent: events.onEvent})
				h.ready()
				if mode == trust.ModeOpen {
					h.expect("set", "tp")
					if st := h.status("tp"); st.State != StateRunning {
						t.Fatalf("open mode: %+v", st)
					}
					e := h.logs.await(t, "test", "plugin file may be changed by others than the host's user and root; "+
						"it runs (trust mode open), and would be refused in mode pinned or signed")
					if got, _ := e["exposures"].(string); !strings.Contains(got, want) {
						t.Fatalf("warning names %q, want %q", got, want)
					}
					return
				}
				events.await(t, EventQuarantined)
				st := h.status("tp")
				if st.State != StateQuarantined || st.Trust.State != trust.StateExposed || !strings.Contains(st.Trust.Reason, want) {
					t.Fatalf("status %+v; want exposed, naming %q", st, want)
				}
				h.noEvent()
			})
		}
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// A file started under several names (hard links) is hashed once: the
// second name's identity is the digest remembered for the same inode,
// unwritten since, not a second read of its bytes. The test shows it by
// handing the second pluginFile a descriptor of other bytes: had it
// hashed them, its digest would not be the first one's.
func TestIdentifyRemembersHashedFiles(t *testing.T) {
	if _, ok := markOf(mustStat(t, os.Args[0])); !ok {
		t.Skip("no stat mark on this platform: every identify hashes")
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(a, []byte("#!/bin/sh\necho remembered "+t.Name()+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(a, b); err != nil {
		t.Fatal(err)
	}
	pa, err := openPluginFile(dir, a)
	if err != nil {
		t.Fatal(err)
	}
	defer pa.close()
	ida, ok := pa.identify(nil)
	if !ok {
		t.Fatal("cannot identify a")
	}
	pb, err := openPluginFile(dir, b)
	if err != nil {
		t.Fatal(err)
	}
	defer pb.close()
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("other bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	pb.f.Close()
	if pb.f, err = os.Open(other); err != nil {
		t.Fatal(err)
	}
	idb, ok := pb.identify(nil)
	if !ok || idb != ida {
		t.Errorf("b = %+v, %v; want a's identity %+v, remembered", idb, ok, ida)
	}
}

func mustStat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// An ELF executable cut anywhere (a copy in progress) looks unfinished;
// whole, it does not. Scripts and other formats are never unfinished.
func TestIncompleteELF(t *testing.T) {
	data, err := os.ReadFile(os.Args[0]) // the test binary
	if err != nil {
		t.Fatal(err)
	}
	if string(data[:4]) != "\x7fELF" {
		t.Skip("the test binary is not ELF on this platform")
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	if why := incomplete(write("whole", data)); why != "" {
		t.Errorf("the whole binary looks unfinished: %s", why)
	}
	for _, n := range []int{10, 63, 64, 4096, len(data) / 2, len(data) - 1} {
		if why := incomplete(write("cut", data[:n])); !strings.HasPrefix(why, "incomplete ELF executable (") {
			t.Errorf("cut at %d bytes: incomplete = %q, want it unfinished", n, why)
		}
	}
	if why := incomplete(write("script", []byte("#!/bin/sh\n"))); why != "" {
		t.Errorf("a script looks unfinished: %s", why)
	}
}
