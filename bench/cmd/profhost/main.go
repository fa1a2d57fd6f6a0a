// Command profhost is plughost's serve path (package serve: the catalog,
// the plugin manager and its sandbox, the host/mcp server, over stdio or
// with --http over Streamable HTTP), assembled as cmd/plughost assembles
// it, with a CPU profile, for profiling the hot path under the benchmark's
// load:
//
//	PROFHOST_CPUPROFILE=/tmp/cpu.pprof bin/bench/bench -quick -only calls -plughost bin/bench/profhost
//	go tool pprof -top bin/bench/profhost /tmp/cpu.pprof
//
// It takes the arguments of `plughost serve` that the benchmark passes.
// The profile covers the process's whole life (start and shutdown too).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/serve"
	"github.com/plughost/plughost/sandbox"
)

func main() {
	sandbox.RunStageIfRequested()                               // the sandbox's re-exec stage, as plughost's own
	if len(os.Args) > 1 && os.Args[1] == serve.WrappedCommand { // a declared server's wrapper
		if err := serve.RunWrapped(os.Args[2:], "profhost", os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "profhost:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, "usage: profhost serve --plugins DIR [--workspace DIR] [--log-level L]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	o := serve.Options{Serving: true, Version: "profhost"}
	fs.StringVar(&o.Plugins, "plugins", "", "plugin directory")
	fs.StringVar(&o.Workspace, "workspace", "", "the files plugin's workspace (plughost's --workspace)")
	fs.StringVar(&o.LogLevel, "log-level", "warn", "log level")
	h := serve.HTTPOptions{Idle: 30 * time.Minute, MaxBody: mcp.DefaultMaxMessageSize, Shutdown: 10 * time.Second}
	fs.StringVar(&h.Addr, "http", "", "serve Streamable HTTP at ADDR until SIGTERM instead of stdio")
	fs.Float64Var(&h.Rate, "rate-limit", 100, "requests per second one HTTP session may send (negative: no limit)")
	_ = fs.Parse(os.Args[2:])
	if err := run(&o, &h); err != nil {
		fmt.Fprintln(os.Stderr, "profhost:", err)
		os.Exit(1)
	}
}

func run(o *serve.Options, h *serve.HTTPOptions) error {
	if path := os.Getenv("PROFHOST_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if h.Addr == "" {
		return serve.Stdio(o, os.Stdin, os.Stdout, os.Stderr)
	}
	o.HTTP = true
	return serve.HTTP(o, h, os.Stderr)
}
