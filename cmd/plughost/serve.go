package main

import (
	"flag"
	"io"

	"github.com/plughost/plughost/host/serve"
)

// serveCommand is `plughost serve`: MCP over stdio, or over Streamable
// HTTP with --http (package serve assembles the host).
func serveCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	o := serve.Options{Serving: true, Devices: new(serve.DeviceOptions), Observe: new(serve.ObserveOptions), TLS: new(serve.TLSOptions)}
	registerHost(fs, &o)
	fs.BoolVar(&o.ToolSearch, "tool-search", false, "tool search mode: tools/list offers search_tools, call_tool and the pinned tools instead of every tool (as a search block in --config does; see docs/operators.md \"Tool search\")")
	registerDevices(fs, o.Devices)
	var httpOpts serve.HTTPOptions
	registerHTTP(fs, &httpOpts)
	registerObserve(fs, o.Observe)
	registerTLS(fs, o.TLS)
	fs.StringVar(&o.ConsoleListen, "console-listen", "", "serve the console (pages in a browser: plugins, approvals, callers, calls) at http://ADDR/console, "+
		"loopback only (e.g. 127.0.0.1:8765), and print its login link in the log; with --http it is served there instead of at /console "+
		"(see docs/operators.md \"The console\")")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError(stderr, fs, "unexpected argument %q", fs.Arg(0))
	}
	if err := serve.CheckTLS(o.TLS, httpOpts.Addr, o.Devices.Listen, o.Observe.MetricsListen); err != nil {
		return usageError(stderr, fs, "%v", err)
	}
	// What plughost check reports stops the start, before anything runs
	// (and everything is reported, not the first problem).
	if err := serve.Preflight(&o); err != nil {
		return err
	}
	if httpOpts.Addr != "" {
		o.HTTP = true
		return serve.HTTP(&o, &httpOpts, stderr)
	}
	return serve.Stdio(&o, stdin, stdout, stderr)
}
