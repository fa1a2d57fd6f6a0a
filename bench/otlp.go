package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

// The otlp section (issue 35): what exporting traces costs a call.
// plughost serves echo over stdio with the calls section's load, in four
// rows that differ only in the observability block: export off; export
// on over gRPC; on over HTTP (each sample_ratio = 1: every call is a
// sampled trace of three spans, sent to a real OTLP receiver, the
// collector's otlpreceiver in internal/otlpsink, which counts them); off
// again (the machine's drift shows between the two off rows). The table
// gives each row's p50, calls/s and host CPU per call, and what they add
// to the first row; the JSON has them under "otlp" (row, calls, the
// added_* figures and spans_received).

type otlpRow struct {
	name     string
	protocol string // "" for export off
}

var otlpRows = []otlpRow{{name: "export off"}, {name: "export on, grpc", protocol: "grpc"},
	{name: "export on, http", protocol: "http"}, {name: "export off (again)"}}

// otlpFigures is one row's call figures and what it adds to the first row.
type otlpFigures struct {
	Row       string      `json:"row"`
	Calls     callFigures `json:"calls"`
	AddedP50  float64     `json:"added_p50_us"`
	AddedHost float64     `json:"added_host_cpu_per_call_us"`
	// SpansReceived is what the receiver counted for the row (0 when off).
	SpansReceived int `json:"spans_received"`
}

func benchOTLP(ctx context.Context, cfg *config) ([]otlpFigures, error) {
	sinkBin := filepath.Join(cfg.binDir, "otlpsink")
	if _, err := os.Stat(sinkBin); err != nil {
		return nil, fmt.Errorf("no OTLP receiver (make bench-bin builds internal/otlpsink into %s): %w", cfg.binDir, err)
	}
	dir := filepath.Join(cfg.work, "otlp-plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := linkOrCopy(filepath.Join(cfg.pluginsDir, "echo"), filepath.Join(dir, "echo")); err != nil {
		return nil, err
	}
	var out []otlpFigures
	for i, row := range otlpRows {
		fmt.Fprintf(os.Stderr, "bench: otlp: %s\n", row.name)
		args := []string{}
		var sink *benchSink
		if row.protocol != "" {
			var err error
			if sink, err = startBenchSink(sinkBin); err != nil {
				return nil, err
			}
			endpoint := map[string]string{"grpc": sink.grpc, "http": sink.http}[row.protocol]
			path := filepath.Join(cfg.work, fmt.Sprintf("otlp-%d.hcl", i))
			c := fmt.Sprintf("observability {\n  sample_ratio = 1\n  otlp {\n    endpoint = \"http://%s\"\n    protocol = %q\n  }\n}\n", endpoint, row.protocol)
			if err := os.WriteFile(path, []byte(c), 0o644); err != nil {
				sink.stop()
				return nil, err
			}
			args = append(args, "--config", path)
		}
		f, err := benchCalls(ctx, cfg, cfg.plughost("plughost "+row.name, args, dir), stdio)
		o := otlpFigures{Row: row.name, Calls: f}
		if sink != nil {
			o.SpansReceived = sink.stop() // after the host's exit: it flushed
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", row.name, err)
		}
		if len(out) > 0 {
			o.AddedP50 = f.P50us - out[0].Calls.P50us
			o.AddedHost = f.HostCPUus - out[0].Calls.HostCPUus
		}
		out = append(out, o)
	}
	return out, nil
}

// benchSink is a running otlpsink -count.
type benchSink struct {
	grpc, http string
	cmd        *exec.Cmd
	stdin      io.Closer
	stdout     *bufio.Reader
}

func startBenchSink(path string) (*benchSink, error) {
	s := &benchSink{grpc: benchFreeAddr(), http: benchFreeAddr()}
	s.cmd = exec.Command(path, "-count", "-grpc", s.grpc, "-http", s.http)
	stdin, err := s.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	s.stdin, s.stdout = stdin, bufio.NewReader(stdout)
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		stdin.Close()
		s.cmd.Wait()
		return nil, fmt.Errorf("otlpsink did not start: %q %v", line, err)
	}
	return s, nil
}

// stop ends the sink and returns the spans it received.
func (s *benchSink) stop() int {
	s.stdin.Close()
	var got struct{ Spans int }
	_ = json.NewDecoder(s.stdout).Decode(&got)
	s.cmd.Wait()
	return got.Spans
}

func benchFreeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer l.Close()
	return l.Addr().String()
}

// printOTLP prints the otlp section's table.
func printOTLP(w io.Writer, rows []otlpFigures) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "otlp: echo over stdio, traces exported (every call sampled)\tp50 µs\tp99 µs\tcalls/s\thost CPU µs/call\tp50 added µs\thost CPU added µs\tspans received\t")
	for _, f := range rows {
		c := f.Calls
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.0f\t%.1f\t%+.1f\t%+.1f\t%d\t\n", f.Row, c.P50us, c.P99us, c.CallsPerS, c.HostCPUus, f.AddedP50, f.AddedHost, f.SpansReceived)
	}
	tw.Flush()
	fmt.Fprintln(w)
}
