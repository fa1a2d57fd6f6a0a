package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/internal/redistest"
	"github.com/plughost/plughost/internal/rollout"
)

// TestRollingUpgrade is issue 35's rolling upgrade: two replicas sharing
// a state key and their tasks in a real redis-server, behind a real
// HAProxy configured by the haproxy.cfg of docs/operators.md "Rolling
// upgrades" (addresses aside), under a load of stateless (2026-07-28)
// echo calls and 2025-11-25 sessions (the go-sdk client), are restarted
// one at a time on a plughost built with another version (internal/rollout
// runs the scenario). Each replica stops on SIGTERM; with --drain-delay
// 5s /readyz answers 503 before its listener closes (probed throughout).
// A task it runs, waiting for its user, is answered through the balancer
// (another replica) once its drain delay is over, and completes within its
// grace period. Then: no stateless request failed, no session call failed
// but by the session's 404 (each such session initialized again), and
// serverInfo.version is the new binary's on every replica. Without a drain
// delay (an operator who forgot it) the same holds, HAProxy's retries and
// redispatches (logged) carrying the requests the stopping replica
// refused. The counts are logged.
func TestRollingUpgrade(t *testing.T) {
	t.Parallel()
	const newVersion = "rolled"
	next := buildVersion(t, newVersion)
	for _, drain := range []string{"5s", "0s"} {
		t.Run("drain delay "+drain, func(t *testing.T) {
			t.Parallel()
			rollUnderLoad(t, next, newVersion, drain)
		})
	}
}

// rollUnderLoad is TestRollingUpgrade with --drain-delay drain.
func rollUnderLoad(t *testing.T, next, newVersion, drain string) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute) // a hang guard
	defer cancel()
	rs := redistest.Start(t)
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operators.md"))
	if err != nil {
		t.Fatal(err)
	}
	haproxyCfg, err := rollout.HAProxyConfig(string(doc), "## Rolling upgrades")
	if err != nil {
		t.Fatalf("docs/operators.md: %v", err)
	}
	pluginDir := t.TempDir()
	for _, p := range []string{"echo", "askplugin"} {
		copyPlugin(t, p, pluginDir, p)
	}
	config := filepath.Join(t.TempDir(), "plughost.hcl")
	if err := os.WriteFile(config, fmt.Appendf(nil, "tasks {\n  redis {\n    address = %q\n  }\n}\n", rs.Socket), 0o644); err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("k", 40)
	dirs := make([][]string, 2) // each replica's own data, kept across its restart
	for i := range dirs {
		dirs[i] = []string{"XDG_DATA_HOME=" + t.TempDir(), "XDG_CACHE_HOME=" + t.TempDir()}
	}
	f, err := rollout.Start(ctx, rollout.Options{
		Plughost: bin.plughost, Replicas: 2, HAProxyConfig: haproxyCfg, Dir: t.TempDir(), Undrained: drain == "0s",
		// A grace long enough for a loaded machine (the task ends it).
		Args: []string{"--plugins", pluginDir, "--workspace", t.TempDir(), "--config", config,
			"--drain-delay", drain, "--shutdown-grace", "60s", "--log-level", "debug"},
		Env: func(i int) []string {
			return append(os.Environ(), append(dirs[i], "PLUGHOST_TOKEN=", "PLUGHOST_STATE_KEY="+key)...)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			for _, r := range f.Replicas {
				t.Logf("replica %s:\n%s", r.Name, r.Log)
			}
			t.Logf("haproxy:\n%s", f.BalancerLog())
		}
	})
	for i := range f.Replicas {
		if v, err := f.Version(ctx, i); err != nil || v != version {
			t.Fatalf("replica %d before the upgrade: serverInfo.version %q, %v; want %q", i, v, err, version)
		}
	}

	// 3 stateless clients and 2 sessions, each at most 50 calls a second
	// (a session's limit is 100).
	rep, err := rollout.Roll(ctx, f, next, newVersion, rollout.LoadOptions{Stateless: 3, Sessions: 2, Every: 20 * time.Millisecond}, 100)
	for i, d := range rep.Drains {
		t.Logf("replica %s stopped: /readyz answered 200 %d times, then 503 %d times, then the listener closed: %v",
			f.Replicas[i].Name, d.Ready, d.Unready, d.Refused)
	}
	t.Log(rep)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failures > 0 || rep.SessionFailures > 0 {
		t.Errorf("%d stateless requests and %d session calls failed, want none: %s", rep.Failures, rep.SessionFailures,
			strings.Join(rep.Errors, "\n"))
	}
	if rep.TasksCompleted != rep.Tasks {
		t.Errorf("%d of %d tasks completed, want all: %s", rep.TasksCompleted, rep.Tasks, strings.Join(rep.TaskErrors, "\n"))
	}
	// Every session lived on a replica that stopped (the one left
	// standing holds them all when the next stops).
	if rep.Reinitialized < len(f.Replicas) {
		t.Errorf("%d sessions initialized again after a 404, want at least one a replica stopped", rep.Reinitialized)
	}
}

// buildVersion builds plughost with main.version set to v (under the race
// detector when the tests run so): the new binary of an upgrade.
func buildVersion(t *testing.T, v string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "plughost-"+v)
	args := []string{"build", "-ldflags", "-X main.version=" + v, "-o", out}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, ".")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building plughost %s: %v\n%s", v, err, b)
	}
	return out
}
