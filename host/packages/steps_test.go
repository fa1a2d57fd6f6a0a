package packages

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a Runner that records the steps and fails the n-th (from
// 1), succeeding (printing nothing) before it.
type recorder struct {
	mu    sync.Mutex
	steps []Step
	fail  int
	out   []byte // what the steps print on stdout
}

var errStep = errors.New("step failed")

func (r *recorder) run(_ context.Context, st Step) ([]byte, []byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, st)
	if len(r.steps) == r.fail {
		return nil, []byte("ERROR: failed"), errStep
	}
	return r.out, nil, nil
}

func newInstaller(t *testing.T, r *recorder) *Installer {
	t.Helper()
	i, err := New(&Options{Dir: t.TempDir(), Run: r.run})
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// The Python steps run with HOME the server's data directory: they must
// not read a user site-packages (a planted .pth) from it.
func TestPipStepsIgnoreUserSite(t *testing.T) {
	t.Parallel()
	if _, err := pipWheel(); err != nil {
		t.Skip(err)
	}
	for fail := 1; fail <= 2; fail++ {
		r := &recorder{fail: fail}
		i := newInstaller(t, r)
		s := &Spec{Manager: Pip, Name: "notes-mcp"}
		if _, err := i.Install(context.Background(), s, false); err == nil || !strings.Contains(err.Error(), errStep.Error()) {
			t.Fatalf("Install = %v, want the step's error", err)
		}
		st := r.steps[len(r.steps)-1]
		if len(st.Args) == 0 || st.Args[0] != "-I" {
			t.Errorf("step %d: python %q, want -I (isolated) first", fail, st.Args)
		}
		if !slices.Contains(st.Env, "PYTHONNOUSERSITE=1") {
			t.Errorf("step %d: env %q lacks PYTHONNOUSERSITE=1", fail, st.Env)
		}
	}
	if !slices.Contains(stepEnv, "PYTHONNOUSERSITE=1") {
		t.Errorf("stepEnv = %q: every sandboxed step should get PYTHONNOUSERSITE=1", stepEnv)
	}
}

// npm reads its configuration from the files the install names, never
// from HOME's .npmrc.
func TestNPMStepsNameTheirConfig(t *testing.T) {
	t.Parallel()
	r := &recorder{fail: 1}
	i := newInstaller(t, r)
	if _, err := i.Install(context.Background(), &Spec{Manager: NPM, Name: "notes-mcp"}, false); err == nil || !strings.Contains(err.Error(), errStep.Error()) {
		t.Fatalf("Install = %v, want the step's error", err)
	}
	args := strings.Join(r.steps[0].Args, " ")
	for _, want := range []string{"--userconfig ", "--globalconfig ", "--cache "} {
		if !strings.Contains(args, want) {
			t.Errorf("npm %s: no %s", args, want)
		}
	}
}

// The npm settings the steps read (with the operator's grant, their
// tokens) do not outlive the install.
func TestNPMSettingsRemovedAfterInstall(t *testing.T) {
	t.Parallel()
	for fail := 1; fail <= 3; fail++ {
		r := &recorder{fail: fail, out: []byte(`{"name":"notes-mcp","version":"1.0.0"}`)}
		i, err := New(&Options{Dir: t.TempDir(), Run: r.run, NPM: &Settings{NPMRC: "//npm.example/:_authToken=SECRET\n"}})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = i.Install(context.Background(), &Spec{Manager: NPM, Name: "notes-mcp"}, false)
		var rc string
		for j, a := range r.steps[0].Args {
			if a == "--userconfig" {
				rc = r.steps[0].Args[j+1]
			}
		}
		if rc == "" {
			t.Fatalf("npm %q: no --userconfig", r.steps[0].Args)
		}
		err = filepath.WalkDir(i.opts.Dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "SECRET") {
				t.Errorf("fail at step %d: %s holds the token after the install", fail, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Dir(rc)); err == nil && filepath.Dir(rc) != i.opts.Dir {
			t.Errorf("fail at step %d: %s is left", fail, filepath.Dir(rc))
		}
	}
}

// A URL-valued npm setting keeps its user and password only when the
// operator granted the credentials.
func TestNPMSettingsURLCredentials(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line     string
		want     string // without the grant
		wantDrop bool
	}{
		{"registry=https://user:pass@npm.corp.example/", "registry=https://npm.corp.example/", true},
		{"registry=https://token@npm.corp.example/", "registry=https://npm.corp.example/", true},
		{"@acme:registry=https://u:p@npm.acme.example/x/", "@acme:registry=https://npm.acme.example/x/", true},
		{"proxy=http://user:pass@proxy.example:3128", "proxy=http://proxy.example:3128", true},
		{"https-proxy=http://user:pass@proxy.example:3128", "https-proxy=http://proxy.example:3128", true},
		{"http-proxy=http://user:p%zz@proxy.example:3128", "http-proxy=http://proxy.example:3128", true},
		{"registry=https://npm.corp.example/", "registry=https://npm.corp.example/", false},
		{"noproxy=user@host", "noproxy=user@host", false},
		{"cafile=/etc/a@b/ca.pem", "cafile=/etc/a@b/ca.pem", false},
	}
	for _, tc := range tests {
		for _, auth := range []bool{false, true} {
			rc := filepath.Join(t.TempDir(), "npmrc")
			if err := os.WriteFile(rc, []byte(tc.line+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := NPMSettings([]string{rc}, nil, func(string) string { return "" }, auth)
			if err != nil {
				t.Fatal(err)
			}
			want, drop := tc.want, tc.wantDrop
			if auth {
				want, drop = tc.line, false
			}
			if got := strings.TrimSpace(s.NPMRC); got != want {
				t.Errorf("%s (auth %v): %q, want %q", tc.line, auth, got, want)
			}
			if (len(s.Dropped) > 0) != drop {
				t.Errorf("%s (auth %v): Dropped %q", tc.line, auth, s.Dropped)
			}
		}
	}
}

// The version is the registry's word: one that is not a version never
// names a path outside Dir/trees.
func TestTreePath(t *testing.T) {
	t.Parallel()
	i := newInstaller(t, &recorder{})
	trees := filepath.Join(i.opts.Dir, "trees")
	tests := []struct {
		name, version string
		ok            bool
	}{
		{"notes-mcp", "1.2.3", true},
		{"@acme/notes-mcp", "1.2.3-beta.1+build.5", true},
		{"notes-mcp", "1!2.0.post1+local_x", true},
		{"notes-mcp", "2024.1.0rc1", true},
		{"notes-mcp", "", false},
		{"notes-mcp", "../../../etc", false},
		{"notes-mcp", "1.0/../../x", false},
		{"notes-mcp", "..", false},
		{"notes-mcp", ".1", false},
		{"notes-mcp", "-1", false},
		{"notes-mcp", "1.0\n", false},
		{"notes-mcp", "1.0 x", false},
		{"notes-mcp", "1.0\\x", false},
		{"notes-mcp", strings.Repeat("1", 129), false},
		{"..", "1.0", false}, // a hidden name, as the install's scratch trees are
		{".hidden", "1.0", false},
	}
	for _, tc := range tests {
		tree, err := i.treePath(tc.name, tc.version)
		if (err == nil) != tc.ok {
			t.Errorf("treePath(%q, %q) = %q, %v; want ok %v", tc.name, tc.version, tree, err, tc.ok)
			continue
		}
		if err == nil && filepath.Dir(tree) != trees {
			t.Errorf("treePath(%q, %q) = %q, not in %s", tc.name, tc.version, tree, trees)
		}
	}
}

// An install refuses a version that would name a path elsewhere before
// it touches anything.
func TestInstallRefusesBadVersion(t *testing.T) {
	t.Parallel()
	r := &recorder{out: []byte(`{"name":"notes-mcp","version":"../../victim"}`)}
	i := newInstaller(t, r)
	_, err := i.Install(context.Background(), &Spec{Manager: NPM, Name: "notes-mcp"}, false)
	if err == nil || !strings.Contains(err.Error(), "not a version") {
		t.Fatalf("Install = %v, want a refusal of the version", err)
	}
	if len(r.steps) != 1 {
		t.Errorf("%d steps ran, want only the resolution", len(r.steps))
	}
}

// A step's standard output is kept up to a bound, past which the step is
// stopped; of its standard error, the end is kept.
func TestStepOutputBounds(t *testing.T) {
	t.Parallel()
	if maxStepStdout > 64<<20 || maxStepStderr > 1<<20 {
		t.Errorf("bounds %d, %d: too large to buffer", maxStepStdout, maxStepStderr)
	}
	out := &limitBuffer{max: 10}
	stopped := 0
	out.setOver(func() { stopped++ })
	for _, w := range []string{"0123", "4567", "89"} {
		if n, err := out.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if out.overflowed() || string(out.Bytes()) != "0123456789" || stopped != 0 {
		t.Fatalf("at the bound: %q, overflowed %v, stopped %d", out.Bytes(), out.overflowed(), stopped)
	}
	for range 3 {
		if n, err := out.Write([]byte("x")); n != 1 || err != nil {
			t.Fatalf("Write past the bound = %d, %v: the step would block", n, err)
		}
	}
	if !out.overflowed() || string(out.Bytes()) != "0123456789" || stopped != 1 {
		t.Errorf("past the bound: %q, overflowed %v, stopped %d times, want once", out.Bytes(), out.overflowed(), stopped)
	}
	late := &limitBuffer{max: 1}
	_, _ = late.Write([]byte("xx"))
	late.setOver(func() { stopped++ })
	if stopped != 2 {
		t.Error("an overflow before the step's start does not stop it")
	}

	errb := &tailBuffer{max: 8}
	var all strings.Builder
	for _, w := range []string{"abc", "defgh", "ij", "", "klmnopqrstuvwxyz", "12"} {
		_, _ = errb.Write([]byte(w))
		all.WriteString(w)
		s := all.String()
		if want := s[max(0, len(s)-8):]; string(errb.Bytes()) != want {
			t.Errorf("after %q: tail %q, want %q", w, errb.Bytes(), want)
		}
	}
}

// Install (plughost upgrade's) and Ensure (a start's) take the server's
// install lock, and wait for it no longer than their context lets them.
func TestInstallWaitsForTheLock(t *testing.T) {
	t.Parallel()
	r := &recorder{fail: 1}
	i := newInstaller(t, r)
	unlock, err := i.lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := &Spec{Manager: NPM, Name: "notes-mcp"}
	for name, call := range map[string]func(context.Context) error{
		"Install": func(ctx context.Context) error { _, err := i.Install(ctx, s, true); return err },
		"Ensure":  func(ctx context.Context) error { _, err := i.Ensure(ctx, s); return err },
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		err := call(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s with the lock held elsewhere = %v, want the context's error", name, err)
		}
	}
	if len(r.steps) != 0 {
		t.Errorf("%d steps ran while another install held the lock", len(r.steps))
	}
	unlock()
	if _, err := i.Install(context.Background(), s, false); err == nil || len(r.steps) != 1 {
		t.Errorf("Install once the lock is free = %v, %d steps; want the step's failure", err, len(r.steps))
	}
}
