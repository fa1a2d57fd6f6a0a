// Command profhost is plughost's serve path (catalog, plugin manager,
// host/mcp server, over stdio or with --http over Streamable HTTP) wired as
// cmd/plughost wires it, with a CPU profile, for profiling the hot path
// under the benchmark's load:
//
//	PROFHOST_CPUPROFILE=/tmp/cpu.pprof bin/bench/bench -quick -only calls -plughost bin/bench/profhost
//	go tool pprof -top bin/bench/profhost /tmp/cpu.pprof
//
// It takes the arguments of `plughost serve` that the benchmark passes.
// The profile covers the process's whole life (start and shutdown too).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/grants"
	"github.com/plughost/plughost/host/catalog"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/streamable"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, "usage: profhost serve --plugins DIR [--workspace DIR] [--log-level L]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	dir := fs.String("plugins", "", "plugin directory")
	workspace := fs.String("workspace", "", "the directory granted to the plugins as \"workspace\" (as plughost grants --workspace to the files plugin)")
	level := fs.String("log-level", "warn", "log level")
	addr := fs.String("http", "", "serve Streamable HTTP at ADDR until SIGTERM instead of stdio")
	rate := fs.Float64("rate-limit", 100, "requests per second one HTTP session may send (negative: no limit)")
	_ = fs.Parse(os.Args[2:])
	if err := run(*dir, *workspace, *level, *addr, *rate); err != nil {
		fmt.Fprintln(os.Stderr, "profhost:", err)
		os.Exit(1)
	}
}

// workspaceGrant is $PLUGHOST_GRANTS naming workspace as the writable
// directory "workspace" (no sandbox here: the grant is only told).
func workspaceGrant(workspace string) string {
	b, _ := json.Marshal(grants.Grants{AllowNet: "none", Dirs: map[string]grants.Dir{"workspace": {Path: workspace, Write: true}}})
	return string(b)
}

func run(dir, workspace, level, addr string, rate float64) error {
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
	log := hclog.New(&hclog.LoggerOptions{Name: "profhost", Level: hclog.LevelFromString(level), Output: os.Stderr})
	cat := catalog.New(&catalog.Options{Logger: log.Named("catalog")})
	defer cat.Close()
	mgr, err := manager.New(&manager.Options{
		Dir:       dir,
		Logger:    log.Named("plugins"),
		Publisher: cat,
		Env:       []string{grants.Env + "=" + workspaceGrant(workspace)},
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Run(ctx) }()
	srv := mcp.NewServer(cat, &mcp.Options{Logger: log.Named("mcp")})
	var serveErr error
	if addr == "" {
		serveErr = srv.ServeStdio(context.Background(), os.Stdin, os.Stdout)
	} else {
		serveErr = serveHTTP(srv, addr, rate)
	}
	cancel()
	if err := <-done; err != nil {
		return err
	}
	return serveErr
}

// serveHTTP serves srv over Streamable HTTP at addr until SIGTERM or SIGINT.
func serveHTTP(srv *mcp.Server, addr string, rate float64) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return streamable.Serve(ctx, srv, ln, &streamable.Options{RateLimit: rate})
}
