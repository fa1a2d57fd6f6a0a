package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/plughost/plughost/bench/internal/grpcfloor"
)

// latencies summarises a set of durations.
type latencies []time.Duration

func (l latencies) quantile(q float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	i := int(q * float64(len(s)-1))
	return s[i]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
func mib(b int64) float64        { return float64(b) / (1 << 20) }

// callFigures are one server's figures for tools/call over one transport.
type callFigures struct {
	Server    string  `json:"server"`
	Transport string  `json:"transport"`
	P50us     float64 `json:"p50_us"`
	P99us     float64 `json:"p99_us"`
	CallsPerS float64 `json:"calls_per_s"`
	// CPU per call at 16 in flight: all the server's processes, and the host
	// process alone (the same for an in-process server).
	CPUus     float64 `json:"cpu_per_call_us"`
	HostCPUus float64 `json:"host_cpu_per_call_us"`
	// CPU per call in the sequential phase.
	SeqCPUus float64 `json:"seq_cpu_per_call_us"`
	// Peak RSS (VmHWM): all processes summed, and the host alone.
	PeakMiB     float64 `json:"peak_rss_mib"`
	HostPeakMiB float64 `json:"host_peak_rss_mib"`
	Processes   int     `json:"processes"`
}

// benchCalls runs the call load against one server: initialize, wait for
// the echo tool, warm up, sequential calls, then cfg.inFlight calls in flight
// for cfg.duration.
func benchCalls(ctx context.Context, cfg *config, sp serverSpec, tr transport) (callFigures, error) {
	f := callFigures{Server: sp.Name, Transport: string(tr)}
	s, err := startServer(ctx, sp, tr, cfg.work)
	if err != nil {
		return f, err
	}
	defer s.stop()
	if _, err := initialize(ctx, s.conn); err != nil {
		return f, fmt.Errorf("%w (stderr: %s)", err, s.stderrTail())
	}
	if _, err := waitForTools(ctx, s.conn, 30*time.Second, hasTool("echo")); err != nil {
		return f, fmt.Errorf("%w (stderr: %s)", err, s.stderrTail())
	}
	echo := sp.echoCall(cfg.textLen)
	one := func() error {
		resp, err := s.conn.call(ctx, "tools/call", echo.params)
		if err != nil {
			return err
		}
		return echo.check(resp)
	}
	for range cfg.warmup {
		if err := one(); err != nil {
			return f, err
		}
	}

	lat := make(latencies, cfg.seqCalls)
	before := sampleCPU(s.pid())
	for i := range lat {
		t := time.Now()
		if err := one(); err != nil {
			return f, err
		}
		lat[i] = time.Since(t)
	}
	_, seqTree := sampleCPU(s.pid()).since(before)
	f.P50us, f.P99us = us(lat.quantile(0.5)), us(lat.quantile(0.99))
	f.SeqCPUus = us(seqTree) / float64(cfg.seqCalls)

	var calls atomic.Int64
	var firstErr error
	var errOnce sync.Once
	stop := make(chan struct{})
	var wg sync.WaitGroup
	before = sampleCPU(s.pid())
	t0 := time.Now()
	for range cfg.inFlight {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := one(); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				calls.Add(1)
			}
		})
	}
	timer := time.NewTimer(cfg.duration)
	<-timer.C
	close(stop)
	wg.Wait()
	elapsed := time.Since(t0)
	host, tree := sampleCPU(s.pid()).since(before)
	if firstErr != nil {
		return f, firstErr
	}
	n := float64(calls.Load())
	f.CallsPerS = n / elapsed.Seconds()
	f.CPUus, f.HostCPUus = us(tree)/n, us(host)/n
	m := sampleMem(s.pid())
	f.PeakMiB, f.HostPeakMiB = mib(m.TreePeak), mib(m.HostPeak)
	f.Processes = 1 + len(descendants(s.pid()))
	return f, s.stop()
}

// grpcFigures are the bare gRPC floor's figures, per mode.
type grpcFigures struct {
	Mode      string  `json:"mode"` // "unary" or "stream" (a fresh bidirectional stream per call)
	P50us     float64 `json:"p50_us"`
	P99us     float64 `json:"p99_us"`
	CallsPerS float64 `json:"calls_per_s"`
	// ClientCPUus is this process's CPU per call at 16 in flight.
	ClientCPUus float64 `json:"client_cpu_per_call_us"`
}

// benchGRPC measures a bare gRPC round trip to grpcfloor over a unix socket.
func benchGRPC(ctx context.Context, cfg *config) ([]grpcFigures, error) {
	sock := filepath.Join(cfg.work, "grpcfloor.sock")
	cmd := exec.Command(filepath.Join(cfg.binDir, "grpcfloor"), sock)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() {
		stdin.Close() // grpcfloor stops when its stdin closes
		_ = cmd.Wait()
	}()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		return nil, fmt.Errorf("grpcfloor did not start: %q %v", line, err)
	}
	cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(grpcfloor.Codec{})))
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	payload := make([]byte, 100) // about a CallStart or a result of the 64-byte echo
	unary := func() error {
		out := new(grpcfloor.Msg)
		return cc.Invoke(ctx, grpcfloor.UnaryMethod, &grpcfloor.Msg{B: payload}, out)
	}
	stream := func() error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel() // ends the stream, as pluginclient.Client.CallTool does
		st, err := cc.NewStream(ctx, &grpcfloor.StreamDesc, grpcfloor.StreamMethod)
		if err != nil {
			return err
		}
		if err := st.SendMsg(&grpcfloor.Msg{B: payload}); err != nil {
			return err
		}
		out := new(grpcfloor.Msg)
		return st.RecvMsg(out)
	}
	// streamEOF reads the stream to its end (the server's trailers) instead
	// of cancelling it, which spares an RST_STREAM each way.
	streamEOF := func() error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		st, err := cc.NewStream(ctx, &grpcfloor.StreamDesc, grpcfloor.StreamMethod)
		if err != nil {
			return err
		}
		if err := st.SendMsg(&grpcfloor.Msg{B: payload}); err != nil {
			return err
		}
		out := new(grpcfloor.Msg)
		if err := st.RecvMsg(out); err != nil {
			return err
		}
		if err := st.RecvMsg(out); err != io.EOF {
			return fmt.Errorf("want the end of the stream, got %v", err)
		}
		return nil
	}
	var out []grpcFigures
	for _, m := range []struct {
		name string
		call func() error
	}{{"unary", unary}, {"stream", stream}, {"stream-to-eof", streamEOF}} {
		g := grpcFigures{Mode: m.name}
		for range cfg.warmup {
			if err := m.call(); err != nil {
				return nil, err
			}
		}
		lat := make(latencies, cfg.seqCalls)
		for i := range lat {
			t := time.Now()
			if err := m.call(); err != nil {
				return nil, err
			}
			lat[i] = time.Since(t)
		}
		g.P50us, g.P99us = us(lat.quantile(0.5)), us(lat.quantile(0.99))
		var calls atomic.Int64
		var firstErr error
		var errOnce sync.Once
		stop := make(chan struct{})
		var wg sync.WaitGroup
		cpu0, t0 := selfCPU(), time.Now()
		for range cfg.inFlight {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := m.call(); err != nil {
						errOnce.Do(func() { firstErr = err })
						return
					}
					calls.Add(1)
				}
			})
		}
		timer := time.NewTimer(cfg.duration)
		<-timer.C
		close(stop)
		wg.Wait()
		if firstErr != nil {
			return nil, firstErr
		}
		n := float64(calls.Load())
		g.CallsPerS = n / time.Since(t0).Seconds()
		g.ClientCPUus = us(selfCPU()-cpu0) / n
		out = append(out, g)
	}
	return out, nil
}

// coldFigures: a plugin binary renamed into the watched directory until
// list_changed reaches the client.
type coldFigures struct {
	Server  string    `json:"server"`
	Runs    int       `json:"runs"`
	P50ms   float64   `json:"median_ms"`
	MinMS   float64   `json:"min_ms"`
	MaxMS   float64   `json:"max_ms"`
	AllMS   []float64 `json:"all_ms"`
	Sandbox bool      `json:"sandbox"`
}

// benchCold starts plughost on an empty directory, then cfg.coldRuns times:
// hard-links the echo plugin under a dotfile name (ignored by the watcher),
// renames it to a plugin name (the clock starts), waits for list_changed (the
// clock stops), checks the tool is listed, removes the plugin and waits for
// the list_changed of its removal.
func benchCold(ctx context.Context, cfg *config, v variant) (coldFigures, error) {
	c := coldFigures{Server: v.name, Runs: cfg.coldRuns, Sandbox: cfg.sandbox && len(v.args) == 0}
	dir, err := os.MkdirTemp(cfg.work, "cold-")
	if err != nil {
		return c, err
	}
	s, err := startServer(ctx, cfg.plughost(v.name, v.args, dir), stdio, cfg.work)
	if err != nil {
		return c, err
	}
	defer s.stop()
	if _, err := initialize(ctx, s.conn); err != nil {
		return c, err
	}
	notes := s.conn.notifications()
	waitChanged := func() error {
		timer := time.NewTimer(30 * time.Second)
		defer timer.Stop()
		for {
			select {
			case m := <-notes:
				if m == "notifications/tools/list_changed" {
					return nil
				}
			case <-timer.C:
				return fmt.Errorf("no list_changed within 30s (stderr: %s)", s.stderrTail())
			}
		}
	}
	src := filepath.Join(cfg.pluginsDir, "echo")
	var lat latencies
	for i := range cfg.coldRuns {
		tmp := filepath.Join(dir, fmt.Sprintf(".cold%d.tmp", i))
		dst := filepath.Join(dir, fmt.Sprintf("cold%d", i))
		if err := linkOrCopy(src, tmp); err != nil {
			return c, err
		}
		for len(notes) > 0 {
			<-notes
		}
		t := time.Now()
		if err := os.Rename(tmp, dst); err != nil {
			return c, err
		}
		if err := waitChanged(); err != nil {
			return c, err
		}
		lat = append(lat, time.Since(t))
		names, err := listTools(ctx, s.conn)
		if err != nil {
			return c, err
		}
		if !slices.Contains(names, "echo") {
			return c, fmt.Errorf("list_changed came but echo is not listed: %v", names)
		}
		if err := os.Remove(dst); err != nil {
			return c, err
		}
		if err := waitChanged(); err != nil {
			return c, fmt.Errorf("after removing the plugin: %w", err)
		}
	}
	c.P50ms = float64(lat.quantile(0.5)) / 1e6
	c.MinMS = float64(lat.quantile(0)) / 1e6
	c.MaxMS = float64(lat.quantile(1)) / 1e6
	for _, d := range lat {
		c.AllMS = append(c.AllMS, float64(d)/1e6)
	}
	return c, s.stop()
}

// scaleFigures: plughost with n plugins of ten tools each.
type scaleFigures struct {
	Plugins int `json:"plugins"`
	Tools   int `json:"tools"`
	// ReadyMS is from exec of plughost to a tools/list holding every tool.
	ReadyMS float64 `json:"start_to_ready_ms"`
	// ListP50us/ListP99us: a full tools/list, every page.
	ListP50us float64 `json:"list_all_pages_p50_us"`
	ListP99us float64 `json:"list_all_pages_p99_us"`
	Pages     int     `json:"pages"`
	// Host memory (the host process alone), and all processes' peaks.
	HostRSSMiB  float64 `json:"host_rss_mib"`
	HostPeakMiB float64 `json:"host_peak_rss_mib"`
	TreePeakMiB float64 `json:"all_processes_peak_rss_mib"`
}

// benchScale starts plughost on n hard links of tenplugin and measures.
func benchScale(ctx context.Context, cfg *config, v variant, n int) (scaleFigures, error) {
	sc := scaleFigures{Plugins: n, Tools: 10 * n}
	dir, err := os.MkdirTemp(cfg.work, fmt.Sprintf("scale%d-", n))
	if err != nil {
		return sc, err
	}
	defer os.RemoveAll(dir)
	for i := range n {
		if err := linkOrCopy(filepath.Join(cfg.binDir, "tenplugin"), filepath.Join(dir, fmt.Sprintf("p%03d", i))); err != nil {
			return sc, err
		}
	}
	s, err := startServer(ctx, cfg.plughost(v.name, v.args, dir), stdio, cfg.work)
	if err != nil {
		return sc, err
	}
	defer s.stop()
	if _, err := initialize(ctx, s.conn); err != nil {
		return sc, err
	}
	if _, err := waitForTools(ctx, s.conn, 2*time.Minute, func(names []string) bool { return len(names) >= sc.Tools }); err != nil {
		return sc, fmt.Errorf("%w (stderr: %s)", err, s.stderrTail())
	}
	sc.ReadyMS = float64(time.Since(s.start)) / 1e6
	// One call through the last plugin, to show the routes work.
	call := newEchoCall(fmt.Sprintf("p%03d_t9", n-1), 8)
	resp, err := s.conn.call(ctx, "tools/call", call.params)
	if err != nil {
		return sc, err
	}
	if err := call.check(resp); err != nil {
		return sc, err
	}
	names, pages, err := listToolsPages(ctx, s.conn)
	if err != nil {
		return sc, err
	}
	if len(names) != sc.Tools {
		return sc, fmt.Errorf("tools/list has %d tools, want %d", len(names), sc.Tools)
	}
	lat := make(latencies, cfg.listRuns)
	for i := range lat {
		t := time.Now()
		p, err := listAllFast(ctx, s.conn)
		if err != nil {
			return sc, err
		}
		lat[i] = time.Since(t)
		if p != pages {
			return sc, fmt.Errorf("tools/list took %d pages, then %d", pages, p)
		}
	}
	sc.ListP50us, sc.ListP99us, sc.Pages = us(lat.quantile(0.5)), us(lat.quantile(0.99)), pages
	m := sampleMem(s.pid())
	sc.HostRSSMiB, sc.HostPeakMiB, sc.TreePeakMiB = mib(m.HostRSS), mib(m.HostPeak), mib(m.TreePeak)
	return sc, s.stop()
}
