package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/plughost/plughost/internal/rollout"
)

// The rolling section (-only rolling, issue 35): the rolling upgrade of
// cmd/plughost's TestRollingUpgrade, run by the same code
// (internal/rollout.Roll): two `plughost serve --http` replicas sharing a
// state key and their tasks in a redis-server of the section's own,
// behind HAProxy configured by docs/operators.md's haproxy.cfg ("Rolling
// upgrades"), under 3 stateless clients and 2 2025-11-25 sessions (each
// at most 50 calls/s), each replica restarted in turn (SIGTERM,
// --drain-delay 5s) on plughost-next (bin/bench/plughost-next, the same
// source built with another version by make bench-bin), a task of
// askplugin (bin/bench/askplugin) waiting for its user on each as it
// stops. Printed: the counts (requests, failures, HAProxy's retries and
// redispatches, sessions re-initialized after 404, tasks completed) and
// the stateless request latency p50/p99 in the steady phase and during
// the roll. It needs haproxy and redis-server on PATH (or /usr/sbin).

// rollingFigures are the rolling section's figures (JSON "rolling").
type rollingFigures struct {
	Replicas        int      `json:"replicas"`
	Requests        int      `json:"requests"`
	Failures        int      `json:"failures"`
	Retries         int      `json:"haproxy_retries"`
	Redispatches    int      `json:"haproxy_redispatches"`
	SessionCalls    int      `json:"session_calls"`
	SessionFailures int      `json:"session_failures"`
	Reinitialized   int      `json:"sessions_reinitialized"`
	Tasks           int      `json:"tasks"`
	TasksCompleted  int      `json:"tasks_completed"`
	SteadyP50us     float64  `json:"steady_p50_us"`
	SteadyP99us     float64  `json:"steady_p99_us"`
	SteadyN         int      `json:"steady_requests"`
	RollP50us       float64  `json:"roll_p50_us"`
	RollP99us       float64  `json:"roll_p99_us"`
	RollN           int      `json:"roll_requests"`
	Seconds         float64  `json:"seconds"`
	Errors          []string `json:"errors,omitempty"`
}

// rollingVersionSuffix ends plughost-next's version, as make bench-bin
// builds it.
const rollingVersionSuffix = "-next"

func benchRolling(ctx context.Context, cfg *config) (*rollingFigures, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	next := filepath.Join(cfg.binDir, "plughost-next")
	out, err := exec.Command(next, "version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s (make bench-bin builds it): %w", next, err)
	}
	// "plughost VERSION", then a line per field
	fields := strings.Fields(string(out))
	if len(fields) < 2 || !strings.HasSuffix(fields[1], rollingVersionSuffix) {
		return nil, fmt.Errorf("%s says %q, want a version ending in %s", next, out, rollingVersionSuffix)
	}
	doc, err := os.ReadFile("docs/operators.md")
	if err != nil {
		return nil, fmt.Errorf("run from the repository's root: %w", err)
	}
	haproxyCfg, err := rollout.HAProxyConfig(string(doc), "## Rolling upgrades")
	if err != nil {
		return nil, fmt.Errorf("docs/operators.md: %w", err)
	}
	dir := filepath.Join(cfg.work, "rolling")
	plugins := filepath.Join(dir, "plugins")
	if err := os.MkdirAll(plugins, 0o755); err != nil {
		return nil, err
	}
	for from, to := range map[string]string{filepath.Join(cfg.pluginsDir, "echo"): "echo", filepath.Join(cfg.binDir, "askplugin"): "askplugin"} {
		if err := linkOrCopy(from, filepath.Join(plugins, to)); err != nil {
			return nil, err
		}
	}
	redis, stopRedis, err := startRedis(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer stopRedis()
	config := filepath.Join(dir, "plughost.hcl")
	if err := os.WriteFile(config, fmt.Appendf(nil, "tasks {\n  redis {\n    address = %q\n  }\n}\n", redis), 0o644); err != nil {
		return nil, err
	}
	key := strings.Repeat("k", 40)
	f, err := rollout.Start(ctx, rollout.Options{
		Plughost: cfg.plughostBn, Replicas: 2, HAProxyConfig: haproxyCfg, Dir: dir,
		Args: []string{"--plugins", plugins, "--workspace", dir, "--config", config, "--drain-delay", "5s", "--shutdown-grace", "60s"},
		Env: func(i int) []string {
			return append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(dir, fmt.Sprint("data", i)),
				"XDG_CACHE_HOME="+filepath.Join(dir, fmt.Sprint("cache", i)), "PLUGHOST_TOKEN=", "PLUGHOST_STATE_KEY="+key)
		},
	})
	if err != nil {
		return nil, err
	}
	defer f.Close()
	warm := 500
	if cfg.quick {
		warm = 100
	}
	rep, err := rollout.Roll(ctx, f, next, fields[1], rollout.LoadOptions{Stateless: 3, Sessions: 2, Every: 20 * time.Millisecond}, warm)
	if err != nil {
		return nil, err
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	return &rollingFigures{Replicas: len(f.Replicas), Requests: rep.Requests, Failures: rep.Failures,
		Retries: rep.Retries, Redispatches: rep.Redispatches, SessionCalls: rep.SessionCalls,
		SessionFailures: rep.SessionFailures, Reinitialized: rep.Reinitialized, Tasks: rep.Tasks, TasksCompleted: rep.TasksCompleted,
		SteadyP50us: us(rep.Steady.P50), SteadyP99us: us(rep.Steady.P99), SteadyN: rep.Steady.N,
		RollP50us: us(rep.Roll.P50), RollP99us: us(rep.Roll.P99), RollN: rep.Roll.N,
		Seconds: time.Since(start).Seconds(), Errors: append(rep.Errors, rep.TaskErrors...)}, nil
}

// startRedis runs a redis-server on a unix socket in dir, keeping nothing
// on disk, and returns the socket's path once it answers PING.
func startRedis(ctx context.Context, dir string) (string, func(), error) {
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command("redis-server", "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("redis-server (Debian: apt-get install redis-server): %w", err)
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.Dial("unix", sock); err == nil {
			io.WriteString(c, "PING\r\n")
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.HasPrefix(line, "+PONG") {
				return sock, stop, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			stop()
			return "", nil, fmt.Errorf("redis-server did not answer PING on %s within 10s", sock)
		}
		time.Sleep(50 * time.Millisecond) // polling: redis-server says nothing when it listens
	}
}

// printRolling prints the rolling section.
func printRolling(w io.Writer, f *rollingFigures) {
	fmt.Fprintf(w, "\nrolling upgrade: %d replicas behind HAProxy (docs/operators.md), each restarted on a new binary under load (%.0f s)\n",
		f.Replicas, f.Seconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stateless requests\tfailed\tretries\tredispatches\tsession calls\tfailed\tre-initialized (404)\ttasks completed\t")
	fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d of %d\t\n", f.Requests, f.Failures, f.Retries, f.Redispatches,
		f.SessionCalls, f.SessionFailures, f.Reinitialized, f.TasksCompleted, f.Tasks)
	tw.Flush()
	fmt.Fprintf(w, "stateless latency: steady p50 %.0f µs p99 %.0f µs (%d); during the roll p50 %.0f µs p99 %.0f µs (%d)\n",
		f.SteadyP50us, f.SteadyP99us, f.SteadyN, f.RollP50us, f.RollP99us, f.RollN)
	for _, e := range f.Errors {
		fmt.Fprintln(w, "  "+e)
	}
}
