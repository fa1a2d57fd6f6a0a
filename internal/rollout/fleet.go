// Package rollout runs `plughost serve --http` replicas behind a real
// HAProxy, configured by the haproxy.cfg docs/operators.md recommends
// ("Rolling upgrades"), and upgrades them one at a time, as an operator
// does: SIGTERM, wait for the exit, start the new binary on the same
// address, wait until HAProxy routes to it again. A Load drives clients
// through the balancer meanwhile and counts what they saw.
//
// It is shared by the end-to-end test TestRollingUpgrade (cmd/plughost)
// and the bench's rolling section, so that the figures the bench prints
// come from the scenario the test asserts. It needs no testing.T: errors
// are returned, and every process it starts ends with Fleet.Close.
package rollout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a Fleet.
type Options struct {
	// Plughost is the binary the replicas start on.
	Plughost string
	// Replicas is how many (at least 2; the haproxy.cfg has one server
	// line each).
	Replicas int
	// HAProxyConfig is the haproxy.cfg's text (see HAProxyConfig); only
	// its bind and server addresses are changed.
	HAProxyConfig string
	// Args follow `serve --http ADDR` (plugins, config, --drain-delay...).
	Args []string
	// Env returns the environment of replica i (0, 1, ...): the state
	// key, and data directories of its own.
	Env func(i int) []string
	// Dir holds the balancer's configuration and stats socket.
	Dir string
	// Undrained says the replicas run without --drain-delay: their
	// /readyz answers 503 only for the instant before the listener
	// closes, so Restart does not require a probe to see it.
	Undrained bool
}

// Fleet is the replicas and their balancer.
type Fleet struct {
	// URL is the balancer's MCP endpoint.
	URL      string
	Replicas []*Replica
	opts     Options
	lb       *balancer
}

// Replica is one `plughost serve --http`.
type Replica struct {
	Name   string // its server name in haproxy.cfg
	Addr   string // host:port, the same across restarts
	URL    string // its MCP endpoint
	Log    *Log   // its stderr, this start's
	env    []string
	cmd    *exec.Cmd
	exited chan struct{}
}

// listening is the line a replica logs once it serves, with its URL.
var listening = regexp.MustCompile(`serving MCP over Streamable HTTP.*url=(https?://[^ ]+)/mcp`)

// startWait bounds a replica's start and HAProxy's noticing it: a replica
// under the race detector on a loaded 2-core machine loads its plugins
// slowly.
const startWait = 90 * time.Second

// Start starts the replicas and the balancer, and returns once every
// replica serves and HAProxy routes to each.
func Start(ctx context.Context, opts Options) (*Fleet, error) {
	f := &Fleet{opts: opts}
	var addrs []string
	for i := range opts.Replicas {
		r := &Replica{Name: string(rune('a' + i)), env: opts.Env(i)}
		if err := f.start(ctx, r, opts.Plughost, "127.0.0.1:0"); err != nil {
			f.Close()
			return nil, err
		}
		f.Replicas = append(f.Replicas, r)
		addrs = append(addrs, r.Addr)
	}
	lb, err := startBalancer(opts.Dir, opts.HAProxyConfig, addrs)
	if err != nil {
		f.Close()
		return nil, err
	}
	f.lb, f.URL = lb, lb.url
	for i, r := range f.Replicas {
		r.Name = lb.server[i]
		wait, cancel := context.WithTimeout(ctx, startWait)
		err := lb.awaitUp(wait, r.Name)
		cancel()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%w\nhaproxy:\n%s", err, lb.out)
		}
	}
	return f, nil
}

// start runs binary serving at addr, and waits until it says it serves.
func (f *Fleet) start(ctx context.Context, r *Replica, binary, addr string) error {
	r.Log, r.exited = NewLog(), make(chan struct{})
	r.cmd = exec.Command(binary, append([]string{"serve", "--http", addr}, f.opts.Args...)...)
	r.cmd.Env = r.env
	r.cmd.Stderr = r.Log
	if err := r.cmd.Start(); err != nil {
		return err
	}
	go func() { r.cmd.Wait(); close(r.exited) }()
	wait, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	if err := r.Log.Await(wait, listening); err != nil {
		return fmt.Errorf("replica %s on %s: %w\n%s", r.Name, addr, err, r.Log)
	}
	r.URL = listening.FindStringSubmatch(r.Log.String())[1] + "/mcp"
	r.Addr = strings.TrimPrefix(strings.TrimSuffix(r.URL, "/mcp"), "http://")
	return nil
}

// Drain is what a replica's stop showed.
type Drain struct {
	// Probes counts the GET /readyz answered while it stopped: 503 ones
	// (Unready) and 200 ones before them; Refused is true once the
	// listener closed.
	Ready, Unready int
	Refused        bool
}

// Restart stops replica i with SIGTERM, then starts binary on its address
// and waits until HAProxy routes to it again. While it stops, /readyz is
// probed: it must answer 503 before the listener closes. stopping, when
// not nil, is called once the replica's drain delay is over (it logged
// "shutting down HTTP"): the graceful shutdown has begun; its error ends
// the restart.
func (f *Fleet) Restart(ctx context.Context, i int, binary string, stopping func() error) (Drain, error) {
	r := f.Replicas[i]
	probed := make(chan Drain, 1)
	probeCtx, stopProbe := context.WithCancel(ctx)
	go func() { probed <- probeReadyz(probeCtx, r.Addr) }()
	r.cmd.Process.Signal(syscall.SIGTERM)
	if stopping != nil {
		wait, cancel := context.WithTimeout(ctx, startWait)
		err := r.Log.Await(wait, regexp.MustCompile(`shutting down HTTP`))
		cancel()
		if err != nil {
			stopProbe()
			return <-probed, fmt.Errorf("replica %s: %w", r.Name, err)
		}
		if err := stopping(); err != nil {
			stopProbe()
			<-r.exited
			return <-probed, err
		}
	}
	select {
	case <-r.exited:
	case <-time.After(startWait):
		r.cmd.Process.Kill()
		<-r.exited
		stopProbe()
		return <-probed, fmt.Errorf("replica %s did not exit within %v of SIGTERM:\n%s", r.Name, startWait, r.Log)
	}
	stopProbe()
	d := <-probed
	if code := r.cmd.ProcessState.ExitCode(); code != 0 {
		return d, fmt.Errorf("replica %s exited with code %d:\n%s", r.Name, code, r.Log)
	}
	if d.Unready == 0 && !f.opts.Undrained {
		return d, fmt.Errorf("replica %s: /readyz never answered 503 before its listener closed (%+v)", r.Name, d)
	}
	// Its checks failed (503, then refused) before: the one that
	// brings it back is the new binary's.
	wait, cancel := context.WithTimeout(ctx, startWait)
	defer cancel()
	if err := f.lb.awaitDown(wait, r.Name); err != nil {
		return d, fmt.Errorf("%w\nhaproxy:\n%s", err, f.lb.out)
	}
	old := r.Log
	if err := f.start(ctx, r, binary, r.Addr); err != nil {
		return d, fmt.Errorf("%w\nits previous run:\n%s", err, old)
	}
	if err := f.lb.awaitUp(wait, r.Name); err != nil {
		return d, fmt.Errorf("%w\nhaproxy:\n%s", err, f.lb.out)
	}
	return d, nil
}

// probeReadyz sends GET /readyz to addr until ctx ends, counting 200s
// until the first 503, the 503s, and whether the listener closed (a
// refused connection): a 200 or a 503 after a refusal would be another
// process, and ends the count.
func probeReadyz(ctx context.Context, addr string) Drain {
	var d Drain
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	for ctx.Err() == nil && !d.Refused {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/readyz", nil)
		req.Host = "localhost"
		resp, err := c.Do(req)
		switch {
		case err != nil:
			var op *net.OpError
			if errors.As(err, &op) && op.Op == "dial" {
				d.Refused = true
			}
		case resp.StatusCode == http.StatusServiceUnavailable:
			d.Unready++
			resp.Body.Close()
		default:
			if d.Unready == 0 {
				d.Ready++
			}
			resp.Body.Close()
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond): // a probe, as a balancer's check
		}
	}
	return d
}

// Version returns serverInfo.version of the binary serving replica i,
// asked directly (server/discover, no balancer).
func (f *Fleet) Version(ctx context.Context, i int) (string, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "rollout", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: f.Replicas[i].URL}, nil)
	if err != nil {
		return "", err
	}
	defer cs.Close()
	return cs.InitializeResult().ServerInfo.Version, nil
}

// Stats are HAProxy's figures now.
func (f *Fleet) Stats(ctx context.Context) (Stats, error) { return f.lb.statsOf(ctx) }

// BalancerLog is HAProxy's output.
func (f *Fleet) BalancerLog() string {
	if f.lb == nil {
		return ""
	}
	return f.lb.out.String()
}

// Close stops the balancer and every replica (SIGTERM, then SIGKILL after
// 30 s), and reports a replica that did not exit cleanly.
func (f *Fleet) Close() error {
	if f.lb != nil {
		f.lb.stop()
	}
	var errs []error
	var started []*Replica // a restart that failed to exec leaves none
	for _, r := range f.Replicas {
		if r.cmd.Process != nil {
			r.cmd.Process.Signal(syscall.SIGTERM)
			started = append(started, r)
		}
	}
	for _, r := range started {
		select {
		case <-r.exited:
		case <-time.After(30 * time.Second):
			r.cmd.Process.Kill()
			<-r.exited
			errs = append(errs, fmt.Errorf("replica %s did not exit within 30s of SIGTERM", r.Name))
		}
		if code := r.cmd.ProcessState.ExitCode(); code != 0 {
			errs = append(errs, fmt.Errorf("replica %s exited with code %d", r.Name, code))
		}
	}
	return errors.Join(errs...)
}

// Log collects a process's output and lets a caller await a line.
type Log struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

// NewLog returns an empty Log.
func NewLog() *Log { return &Log{changed: make(chan struct{})} }

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Await waits until the output matches re, or ctx ends.
func (l *Log) Await(ctx context.Context, re *regexp.Regexp) error {
	for {
		l.mu.Lock()
		found, changed := re.Match(l.buf.Bytes()), l.changed
		l.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("never logged %q: %w", re, ctx.Err())
		}
	}
}
