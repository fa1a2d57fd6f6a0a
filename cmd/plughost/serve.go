package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/plughost/plughost/host/catalog"
	"github.com/plughost/plughost/host/mcp"
)

// The catalog is what the MCP server serves.
var _ mcp.Catalog = (*catalog.Catalog)(nil)

// serve runs the MCP server over stdio until stdin closes or a signal arrives.
func serve(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var hf hostFlags
	hf.register(fs)
	hf.devices = new(deviceFlags)
	hf.serving = true
	fs.BoolVar(&hf.toolSearch, "tool-search", false, "tool search mode: tools/list offers search_tools, call_tool and the pinned tools instead of every tool (as a search block in --config does; see README \"Tool search\")")
	hf.devices.register(fs)
	var httpf httpFlags
	httpf.register(fs)
	hf.observe = new(observeFlags)
	hf.observe.register(fs)
	hf.tls = new(tlsFlags)
	hf.tls.register(fs)
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(stderr, fs, "unexpected argument %q", fs.Arg(0))
	}
	if err := hf.tls.check(httpf.addr, hf.devices.listen, hf.observe.metricsListen); err != nil {
		return usageError(stderr, fs, "%v", err)
	}
	// What plughost check reports stops the start, before anything runs
	// (and everything is reported, not the first problem).
	if err := preflightServe(&hf); err != nil {
		return err
	}
	if httpf.addr != "" {
		hf.http = true
		return serveHTTP(&hf, &httpf, stderr)
	}
	h, err := startHost(&hf, stderr)
	if err != nil {
		return err
	}
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()

	stopMetrics, err := h.obs.serveMetrics(hf.observe, h.tlsConfig(), h.log)
	if err != nil {
		return errors.Join(err, h.stop())
	}
	defer stopMetrics()
	if m := h.obs.metrics; m != nil {
		m.Sessions("stdio", +1)
		defer m.Sessions("stdio", -1)
	}
	srv := mcp.NewServer(h.catalog, h.mcpOptions())
	h.sampler.use(srv) // devices' text tasks ask the stdio client's model
	if f, ok := stdin.(*os.File); ok && isTerminal(f) {
		h.log.Info("serving MCP over stdio: type one JSON-RPC message per line, or connect an MCP client that runs this command",
			"try", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"terminal","version":"0"}}}`)
	}
	serveErr := srv.ServeStdio(ctx, stdin, stdout)
	if ctx.Err() != nil && errors.Is(serveErr, context.Cause(ctx)) {
		// SIGINT or SIGTERM: an ordinary stop, as stdin's end is.
		h.log.Info("stopping", "reason", serveErr)
		serveErr = nil
	}
	stopErr := h.stop()
	if serveErr != nil {
		return serveErr
	}
	return stopErr
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
