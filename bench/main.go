// Command bench measures plughost against its peers in one run, with one
// load client for every server, and reports each figure as a ratio to each
// peer next to the targets of issue 6.
//
//	make bench          # the full run (a few minutes)
//	make bench-quick    # a short run, for iteration
//
// or by hand, after `make build` and `cd bench && go build -o ../bin/bench/ ./...`:
//
//	bin/bench/bench -plughost bin/plughost -plugins bin/plugins -bin bin/bench [-quick] [-only calls,cold,scale,ondemand,grpc,wrapped,install,toolsearch,hooks,rolling,otlp]
//	bin/bench/bench -compare bench/out/BEFORE.json,bench/out/AFTER.json   # every figure of two runs, after ÷ before
//
// The servers: plughost serving the bundled echo plugin; and, serving the
// same echo tool in-process, a go-sdk server (raw-schema tool), an mcp-go
// server and a hand-written newline-JSON-RPC server (the floor). Every server
// runs as its own process; the load client (client.go) speaks raw JSON-RPC
// over its stdin/stdout, or over Streamable HTTP with keep-alive once
// `plughost serve --http` exists. Server CPU and peak RSS come from /proc
// (proc.go) and cover the host and its plugin processes together.
//
// The install section measures a declared npx one-liner's first start (the
// install), its later starts and its calls against node running the same
// server directly (install.go).
//
// The toolsearch section measures tool search mode (issue 19) on
// ../shared/toolsearch through MCP (toolsearch.go).
//
// The figures go to stdout as a table and to bench/out/<timestamp>.json.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// variant is one way of running plughost (the sandbox on or off).
type variant struct {
	name string
	args []string
}

type config struct {
	quick      bool
	plughostBn string // bin/plughost
	pluginsDir string // bin/plugins (the echo plugin)
	binDir     string // bin/bench (peers, tenplugin, grpcfloor)
	outDir     string
	only       map[string]bool
	variants   []variant
	noSandbox  []string // extra serve args that turn the sandbox off, if any
	sandbox    bool     // this plughost has a sandbox
	http       bool     // this plughost serves --http
	rateLimit  bool     // this plughost has --rate-limit (lifted for the load)
	work       string   // scratch directory
	echoDir    string   // a plugin directory holding only echo
	node       string   // Node 22 (the wrapped section), symlinks resolved
	everything string   // server-everything's dist/index.js (the wrapped section)
	toolSearch string   // ../shared/toolsearch (the toolsearch section)
	lockfile   string   // conformance/package-lock.json: the install section's server version
	verdaccio  string   // Verdaccio's program (the install section's registry)
	uplink     string   // the registry Verdaccio fetches from; empty: npm config get registry

	textLen  int
	inFlight int
	seqCalls int
	warmup   int
	duration time.Duration
	coldRuns int
	scale    []int
	listRuns int
}

func main() {
	var cfg config
	var only, noSandbox string
	flag.BoolVar(&cfg.quick, "quick", false, "a short run for iteration (fewer calls, starts and installs)")
	flag.StringVar(&cfg.plughostBn, "plughost", "bin/plughost", "the plughost binary")
	flag.StringVar(&cfg.pluginsDir, "plugins", "bin/plugins", "the directory of the bundled plugins (echo is used)")
	flag.StringVar(&cfg.binDir, "bin", "bin/bench", "the directory of the benchmark's binaries (peer-*, tenplugin, grpcfloor)")
	flag.StringVar(&cfg.outDir, "out", "bench/out", "where the JSON figures are written")
	flag.StringVar(&only, "only", "", "comma-separated sections to run: calls, cold, scale, ondemand, grpc, wrapped, install, toolsearch, hooks, rolling (default all)")
	flag.StringVar(&cfg.toolSearch, "toolsearch", "../shared/toolsearch", "the tool-search corpus (tools.jsonl, queries-dev.jsonl), for the toolsearch section")
	flag.StringVar(&cfg.node, "node", "conformance/node_modules/.bin/node", "the node binary of the wrapped section (Node 22, from npm ci in conformance/)")
	flag.StringVar(&cfg.everything, "everything", "conformance/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "server-everything's entry point, for the wrapped section")
	flag.StringVar(&cfg.lockfile, "lockfile", "conformance/package-lock.json", "the npm lockfile that pins server-memory's version, for the install section")
	flag.StringVar(&cfg.verdaccio, "verdaccio", "internal/npmregistry/node_modules/verdaccio/bin/verdaccio", "Verdaccio's program (npm ci in internal/npmregistry), the install section's registry")
	flag.StringVar(&cfg.uplink, "uplink", "", "the registry `URL` the install section's Verdaccio fetches server-memory and its dependencies from (default: npm config get registry)")
	flag.StringVar(&noSandbox, "nosandbox-args", "", "extra `ARGS` for plughost serve that turn the sandbox off, for the no-sandbox rows (default: a --config file with sandbox { disabled = true } when plughost has a sandbox)")
	comparing := flag.String("compare", "", "`BEFORE.json,AFTER.json`: print every figure two earlier runs share, with after ÷ before, and run nothing")
	flag.Parse()
	if *comparing != "" {
		before, after, ok := strings.Cut(*comparing, ",")
		if !ok {
			fmt.Fprintln(os.Stderr, "bench: -compare wants BEFORE.json,AFTER.json")
			os.Exit(2)
		}
		if err := compare(os.Stdout, before, after); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(&cfg, only, noSandbox); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(cfg *config, only, noSandbox string) error {
	if only != "" {
		cfg.only = map[string]bool{}
		for s := range strings.SplitSeq(only, ",") {
			cfg.only[strings.TrimSpace(s)] = true
		}
	}
	cfg.inFlight, cfg.textLen = 16, 64
	if cfg.quick {
		cfg.seqCalls, cfg.warmup, cfg.duration, cfg.coldRuns, cfg.scale, cfg.listRuns = 1000, 200, 1500*time.Millisecond, 5, []int{1, 10, 100}, 20
	} else {
		cfg.seqCalls, cfg.warmup, cfg.duration, cfg.coldRuns, cfg.scale, cfg.listRuns = 5000, 500, 5*time.Second, 20, []int{1, 10, 100}, 100
	}
	for _, p := range []*string{&cfg.plughostBn, &cfg.pluginsDir, &cfg.binDir, &cfg.outDir, &cfg.node, &cfg.everything, &cfg.toolSearch, &cfg.lockfile, &cfg.verdaccio} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	help, _ := exec.Command(cfg.plughostBn, "serve", "--help").CombinedOutput()
	cfg.http = strings.Contains(string(help), "-http")
	cfg.sandbox = exec.Command(cfg.plughostBn, "sandbox", "probe").Run() == nil
	name := "plughost"
	if cfg.sandbox {
		name = "plughost+sandbox"
	}
	cfg.rateLimit = strings.Contains(string(help), "-rate-limit")
	cfg.variants = []variant{{name: name}}

	work, err := os.MkdirTemp("", "plughost-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	cfg.work = work
	if noSandbox == "" && cfg.sandbox {
		// The sandbox's off switch (host/config): a config file whose
		// sandbox block has disabled = true.
		path := filepath.Join(work, "nosandbox.hcl")
		if err := os.WriteFile(path, []byte("sandbox {\n  disabled = true\n}\n"), 0o644); err != nil {
			return err
		}
		noSandbox = "--config " + path
	}
	if noSandbox != "" {
		cfg.noSandbox = strings.Fields(noSandbox)
		cfg.variants = append(cfg.variants, variant{name: "plughost", args: cfg.noSandbox})
	}
	cfg.echoDir = filepath.Join(work, "echo-plugins")
	if err := os.Mkdir(cfg.echoDir, 0o755); err != nil {
		return err
	}
	if err := linkOrCopy(filepath.Join(cfg.pluginsDir, "echo"), filepath.Join(cfg.echoDir, "echo")); err != nil {
		return fmt.Errorf("the echo plugin (run make build): %w", err)
	}

	rep := &report{
		Date:    time.Now().UTC().Format(time.RFC3339),
		Quick:   cfg.quick,
		Machine: machine{CPU: cpuModel(), Cores: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version(), LoadBefore: loadAvg()},
		Settings: settings{TextBytes: cfg.textLen, InFlight: cfg.inFlight, SequentialCalls: cfg.seqCalls, Warmup: cfg.warmup,
			ThroughputSeconds: cfg.duration.Seconds(), ColdRuns: cfg.coldRuns, ListRuns: cfg.listRuns},
		Sandbox: cfg.sandbox, HTTP: cfg.http,
	}
	ctx := context.Background()
	t0 := time.Now()
	section := func(name string) bool { return cfg.only == nil || cfg.only[name] }

	if section("calls") {
		transports := []transport{stdio}
		if cfg.http {
			transports = append(transports, streamHTP)
		} else {
			fmt.Fprintln(os.Stderr, "bench: plughost serve has no --http yet: HTTP rows skipped")
		}
		for _, tr := range transports {
			for _, sp := range specs(cfg) {
				fmt.Fprintf(os.Stderr, "bench: calls over %s: %s\n", tr, sp.Name)
				f, err := benchCalls(ctx, cfg, sp, tr)
				if err != nil {
					return fmt.Errorf("calls over %s, %s: %w", tr, sp.Name, err)
				}
				rep.Calls = append(rep.Calls, f)
			}
		}
	}
	if section("grpc") {
		fmt.Fprintln(os.Stderr, "bench: bare gRPC floor")
		g, err := benchGRPC(ctx, cfg)
		if err != nil {
			return fmt.Errorf("grpc floor: %w", err)
		}
		rep.GRPC = g
	}
	if section("cold") {
		for _, v := range cfg.variants {
			fmt.Fprintf(os.Stderr, "bench: cold start: %s\n", v.name)
			c, err := benchCold(ctx, cfg, v)
			if err != nil {
				return fmt.Errorf("cold start, %s: %w", v.name, err)
			}
			rep.Cold = append(rep.Cold, c)
		}
	}
	if section("scale") {
		for _, n := range cfg.scale {
			fmt.Fprintf(os.Stderr, "bench: scale: %d plugins\n", n)
			s, err := benchScale(ctx, cfg, cfg.variants[0], n)
			if err != nil {
				return fmt.Errorf("scale %d: %w", n, err)
			}
			rep.Scale = append(rep.Scale, s)
		}
	}
	if section("ondemand") {
		n := 100
		if cfg.quick {
			n = 20
		}
		fmt.Fprintf(os.Stderr, "bench: on demand: %d plugins\n", n)
		f, err := benchOnDemand(ctx, cfg, cfg.variants[0], n, 20)
		if err != nil {
			return fmt.Errorf("on demand, %d plugins: %w", n, err)
		}
		rep.OnDemand = append(rep.OnDemand, f)
	}
	if section("wrapped") {
		// The declaration needs the real node binary: the sandbox grants
		// what the command resolves to.
		node, err := filepath.EvalSymlinks(cfg.node)
		if err == nil {
			cfg.node = node
			_, err = os.Stat(cfg.everything)
		}
		switch {
		case err == nil:
			w, err := benchWrapped(ctx, cfg)
			if err != nil {
				return fmt.Errorf("wrapped: %w", err)
			}
			rep.Wrapped = w
		case cfg.only != nil:
			return fmt.Errorf("wrapped: %w (run npm ci in conformance/, or pass -node and -everything)", err)
		default:
			fmt.Fprintf(os.Stderr, "bench: wrapped section skipped: %v (run npm ci in conformance/)\n", err)
		}
	}
	if section("install") {
		// The registry runs on the Node 22 of conformance/.
		node, err := filepath.EvalSymlinks(cfg.node)
		if err == nil {
			cfg.node = node
			_, err = os.Stat(cfg.verdaccio)
		}
		switch {
		case err == nil:
			first := 3
			if cfg.quick {
				first = 1
			}
			f, err := benchInstall(ctx, cfg, first)
			if err != nil {
				return fmt.Errorf("install: %w", err)
			}
			rep.Install = f
		case cfg.only != nil:
			return fmt.Errorf("install: %w (run npm ci in conformance/ and internal/npmregistry/)", err)
		default:
			fmt.Fprintf(os.Stderr, "bench: install section skipped: %v (run npm ci in conformance/ and internal/npmregistry/)\n", err)
		}
	}
	if section("toolsearch") {
		rounds := 20
		if cfg.quick {
			rounds = 5
		}
		fmt.Fprintln(os.Stderr, "bench: tool search: the corpus as plugins, full and search mode")
		f, err := benchToolSearch(ctx, cfg, cfg.toolSearch, rounds)
		if err != nil {
			return fmt.Errorf("tool search: %w", err)
		}
		rep.ToolSearch = &f
	}
	if section("hooks") {
		h, err := benchHooks(ctx, cfg)
		if err != nil {
			return fmt.Errorf("hooks: %w", err)
		}
		rep.Hooks = h
	}
	if section("rolling") {
		fmt.Fprintln(os.Stderr, "bench: rolling: two replicas behind HAProxy, each restarted under load")
		f, err := benchRolling(ctx, cfg)
		if err != nil {
			return fmt.Errorf("rolling: %w", err)
		}
		rep.Rolling = f
	}
	if section("otlp") {
		o, err := benchOTLP(ctx, cfg)
		if err != nil {
			return fmt.Errorf("otlp: %w", err)
		}
		rep.OTLP = o
	}
	rep.Machine.LoadAfter = loadAvg()
	rep.Seconds = time.Since(t0).Seconds()
	rep.Targets = targets(rep)

	printReport(os.Stdout, rep)
	if err := os.MkdirAll(cfg.outDir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(cfg.outDir, time.Now().UTC().Format("20060102T150405Z")+".json")
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Printf("\nfigures written to %s (%.0f s)\n", path, rep.Seconds)
	return nil
}

// plughost returns the spec of plughost serving dir with extra args.
func (cfg *config) plughost(name string, extra []string, dir string) serverSpec {
	return serverSpec{Name: name, Host: true, Command: func(addr string) []string {
		argv := []string{cfg.plughostBn, "serve", "--plugins", dir, "--workspace", cfg.work, "--log-level", "warn"}
		argv = append(argv, extra...)
		if addr != "" {
			argv = append(argv, "--http", addr)
			if cfg.rateLimit {
				argv = append(argv, "--rate-limit", "-1") // the load is the point here
			}
		}
		return argv
	}}
}
