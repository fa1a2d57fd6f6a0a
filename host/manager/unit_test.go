package manager

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plughost/plughost/host/tool"
)

func TestIgnoredName(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"echo":      false,
		"echo.exe":  false,
		"#notes#x":  false,
		".hidden":   true,
		".echo.swp": true,
		"echo~":     true,
		"echo.swp":  true,
		"echo.swx":  true,
		"echo.tmp":  true,
		"echo.bak":  true,
		"echo.part": true,
		"#echo#":    true,
		"4913":      true,
		"":          true,
	}
	for in, want := range tests {
		if got := ignoredName(in); got != want {
			t.Errorf("ignoredName(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := dir + "/file"
	writeScript(t, file, "true")
	tests := map[string]struct {
		opts *Options
		want string
	}{
		"nil":              {nil, "Options.Dir is required"},
		"no dir":           {&Options{}, "Options.Dir is required"},
		"missing dir":      {&Options{Dir: dir + "/nope"}, "no such file or directory"},
		"file as dir":      {&Options{Dir: file}, "is not a directory"},
		"env without =":    {&Options{Dir: dir, Env: []string{"FOO"}}, `Options.Env entry "FOO" is not KEY=value`},
		"env empty key":    {&Options{Dir: dir, Env: []string{"=x"}}, `Options.Env entry "=x" is not KEY=value`},
		"negative timeout": {&Options{Dir: dir, StartTimeout: -time.Second}, "Options.StartTimeout is negative"},
		"negative limit":   {&Options{Dir: dir, CrashLimit: -1}, "Options.CrashLimit is negative"},
		"max below initial": {&Options{Dir: dir, BackoffInitial: time.Second, BackoffMax: time.Millisecond},
			"BackoffMax (1ms) is less than BackoffInitial (1s)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestNewFillsDefaults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m, err := New(&Options{Dir: dir, CrashLimit: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		Dir:             dir,
		StartTimeout:    10 * time.Second,
		Debounce:        10 * time.Millisecond,
		BackoffInitial:  250 * time.Millisecond,
		BackoffMax:      30 * time.Second,
		CrashLimit:      2,
		CrashWindow:     time.Minute,
		StopTimeout:     2 * time.Second,
		Start:           StartEager,
		IdleTimeout:     10 * time.Minute,
		LoadConcurrency: max(16, 4*runtime.NumCPU()),
		MaxInFlight:     256,
	}
	if diff := cmp.Diff(want, m.opts, cmpopts.IgnoreFields(Options{}, "Logger", "Launcher")); diff != "" {
		t.Errorf("resolved options (-want +got):\n%s", diff)
	}
	if m.opts.Logger == nil || m.opts.Logger.IsError() {
		t.Errorf("default Logger = %v, want a null logger", m.opts.Logger)
	}
	if got := m.Status(); len(got) != 0 {
		t.Errorf("Status before Run = %v, want none", got)
	}
}

func TestPluginLoggerRenamesAtKeys(t *testing.T) {
	t.Parallel()
	var buf strings.Builder
	l := pluginLogger{Logger: hclog.New(&hclog.LoggerOptions{Name: "host", Output: &buf, JSONFormat: true})}
	l.Named("echo").Info("hi", "@module", "echo-plugin", "n", 1)
	got := buf.String()
	for _, want := range []string{`"@module":"host.echo"`, `"plugin_module":"echo-plugin"`, `"n":1`} {
		if !strings.Contains(got, want) {
			t.Errorf("log line %s lacks %s", got, want)
		}
	}
}

// go-plugin's "failed to exit gracefully" is a warning when a plugin that
// completed its handshake was asked to exit and did not, and DEBUG when it
// never completed it (nothing could be asked); other warnings stay.
func TestPluginLoggerQuietKill(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		quiet bool
		msg   string
		level string
	}{
		"asked, did not exit":  {false, notGraceful, "warn"},
		"never handshaken":     {true, notGraceful, "debug"},
		"another warning":      {true, "error closing client during Kill", "warn"},
		"another, not quieted": {false, "error closing client during Kill", "warn"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var buf strings.Builder
			quiet := new(atomic.Bool)
			quiet.Store(tc.quiet)
			l := pluginLogger{hclog.New(&hclog.LoggerOptions{Name: "host", Output: &buf, JSONFormat: true, Level: hclog.Debug}), quiet}
			l.Warn(tc.msg)
			var line struct {
				Level   string `json:"@level"`
				Message string `json:"@message"`
			}
			if err := json.Unmarshal([]byte(buf.String()), &line); err != nil {
				t.Fatalf("%v: %q", err, buf.String())
			}
			if line.Level != tc.level || !strings.HasPrefix(line.Message, tc.msg) {
				t.Errorf("logged %s %q, want %s %q", line.Level, line.Message, tc.level, tc.msg)
			}
		})
	}
}

// A message over gRPC's size limit is tool.ErrTooLarge; the text is what
// the catalog's wrapping gave before.
func TestCallErrorTooLarge(t *testing.T) {
	t.Parallel()
	in := &instance{name: "tp"}
	err := in.callError(`tool "big"`, fmt.Errorf(`call "big": %w`, status.Error(codes.ResourceExhausted, "grpc: received message larger than max")))
	const want = `tool "big" of provider "tp": plugin tp: call "big": rpc error: code = ResourceExhausted desc = grpc: received message larger than max`
	if !errors.Is(err, tool.ErrTooLarge) || err.Error() != want {
		t.Errorf("callError = %v, want tool.ErrTooLarge: %s", err, want)
	}
}

// died backs off BackoffInitial, doubled per recent death up to
// BackoffMax, and parks the plugin at the CrashLimit-th death within
// CrashWindow; deaths older than the window do not count.
func TestDied(t *testing.T) {
	t.Parallel()
	s := &supervisor{
		m:   &Manager{opts: Options{BackoffInitial: 250 * time.Millisecond, BackoffMax: time.Second, CrashLimit: 5, CrashWindow: time.Minute}},
		log: hclog.NewNullLogger(),
		g:   newGate("tp", time.Second),
	}
	l := &life{s: s, deaths: []time.Time{time.Now().Add(-2 * time.Minute)}} // outside the window
	want := []struct {
		next  stage
		delay time.Duration
		state State
	}{
		{stageBackoff, 250 * time.Millisecond, StateRestarting},
		{stageBackoff, 500 * time.Millisecond, StateRestarting},
		{stageBackoff, time.Second, StateRestarting},
		{stageBackoff, time.Second, StateRestarting},
		{stageParked, time.Second, StateParked},
	}
	for i, w := range want {
		next := l.died(errors.New("exit status 3"))
		if next != w.next || l.delay != w.delay || s.snapshot().State != w.state {
			t.Errorf("death %d: %v after %v, state %s; want %v after %v, state %s", i+1, next, l.delay, s.snapshot().State, w.next, w.delay, w.state)
		}
	}
	if got := s.snapshot().LastError; !strings.Contains(got, "exit status 3; crashed 5 times within 1m0s; parked until the file changes") {
		t.Errorf("LastError = %q", got)
	}
}

// The cache's sweep removes the temporary file of a write a dead host
// interrupted, and keeps a write in progress and the entries.
func TestCacheSweepRemovesOnlyStaleTemps(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	files := map[string]time.Duration{ // name: age
		".echo.123.tmp":  2 * staleTemp, // interrupted
		".clock.456.tmp": time.Second,   // in progress
		"echo.json":      2 * staleTemp, // an entry
	}
	for name, age := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	(&catalogCache{dir: dir, log: hclog.NewNullLogger()}).sweep(now)
	var left []string
	for name := range files {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			left = append(left, name)
		}
	}
	slices.Sort(left)
	if want := []string{".clock.456.tmp", "echo.json"}; !slices.Equal(left, want) {
		t.Errorf("after the sweep: %q, want %q", left, want)
	}
}
