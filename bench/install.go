package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/plughost/plughost/internal/npmregistry"
	"github.com/plughost/plughost/sandbox"
)

// The install section (`-only install`): what "install once, run offline"
// (issue 29, host/packages) costs a declared npx one-liner, against the
// same server run with node directly.
//
// The server is @modelcontextprotocol/server-memory at the version
// conformance/package-lock.json pins, declared as its README says to run
// it:
//
//	{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory@VERSION"]}
//
// It comes from a local npm registry, the Verdaccio of
// internal/npmregistry, with an uplink to this machine's configured
// registry (`npm config get registry`) for the package and its dependency
// closure. One untimed `npm install` through Verdaccio primes it (every
// document and tarball is then in its storage, the metadata fresh for an
// hour), and leaves the tree the direct row runs; the timed installs are
// served from Verdaccio's storage, so that they measure plughost's install
// and not the internet.
//
// Rows, each exec of a process → initialize → a tools/list holding
// read_graph, over stdio, with an empty catalog cache:
//
//   - first: plughost serving the declaration with an empty package cache
//     (a new XDG_STATE_HOME each run): resolve, the sandboxed npm install,
//     then the server's start;
//   - later: plughost again on the package cache the last first start
//     filled: the installed tree runs offline (checked: the registry is
//     asked nothing);
//   - direct: the peer, `node dist/index.js` from the primed tree, the same
//     node plughost runs it with (the first `node` of sandbox.PluginPATH).
//
// Then calls: read_graph (no arguments; the memory file does not exist,
// so the answer is the empty graph) sequentially through a later-start
// plughost and directly, p50/p90/p99.

// startFigures summarise the start times of one row.
type startFigures struct {
	Runs     int       `json:"runs"`
	MedianMS float64   `json:"median_ms"`
	MinMS    float64   `json:"min_ms"`
	MaxMS    float64   `json:"max_ms"`
	AllMS    []float64 `json:"all_ms"`
}

func startFiguresOf(lat latencies) startFigures {
	f := startFigures{Runs: len(lat), MedianMS: ms(lat.quantile(0.5)), MinMS: ms(lat.quantile(0)), MaxMS: ms(lat.quantile(1))}
	for _, d := range lat {
		f.AllMS = append(f.AllMS, ms(d))
	}
	return f
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// seqFigures are sequential tools/call latencies of one row.
type seqFigures struct {
	Calls int     `json:"calls"`
	P50us float64 `json:"p50_us"`
	P90us float64 `json:"p90_us"`
	P99us float64 `json:"p99_us"`
}

// installFigures are the install section's figures.
type installFigures struct {
	Package  string `json:"package"`  // name@version
	Packages int    `json:"packages"` // in the installed tree, the server's own included
	Registry string `json:"registry"` // what served it
	Node     string `json:"node"`     // the node both rows run, and its version
	Server   string `json:"server"`   // plughost's variant: plughost+sandbox or plughost
	// Starts: plughost with an empty package cache, plughost with the tree
	// installed, and node directly.
	First  startFigures `json:"first_start"`
	Later  startFigures `json:"later_start"`
	Direct startFigures `json:"direct_start"`
	// Medians ÷ the direct row's.
	FirstVsDirect float64 `json:"first_vs_direct"`
	LaterVsDirect float64 `json:"later_vs_direct"`
	// read_graph, sequentially, through plughost (a later start) and
	// directly, and plughost's p50 and p90 ÷ direct's.
	Wrapped      seqFigures `json:"wrapped_call"`
	DirectCall   seqFigures `json:"direct_call"`
	CallP50x     float64    `json:"call_p50_vs_direct"`
	CallP90x     float64    `json:"call_p90_vs_direct"`
	PrimeSeconds float64    `json:"prime_seconds"` // the untimed priming install, through the uplink
}

// memoryPackage is the server the section installs.
const memoryPackage = "@modelcontextprotocol/server-memory"

// lockedVersion returns the version of pkg that an npm lockfile pins.
func lockedVersion(lockfile, pkg string) (string, error) {
	b, err := os.ReadFile(lockfile)
	if err != nil {
		return "", err
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		return "", fmt.Errorf("%s: %w", lockfile, err)
	}
	v := lock.Packages["node_modules/"+pkg].Version
	if v == "" {
		return "", fmt.Errorf("%s pins no %s", lockfile, pkg)
	}
	return v, nil
}

// configuredRegistry is what `npm config get registry` says: the registry
// Verdaccio's uplink fetches from.
func configuredRegistry() (string, error) {
	out, err := exec.Command("npm", "config", "get", "registry").Output()
	if err != nil {
		return "", fmt.Errorf("npm config get registry: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// prime installs name@version through the registry at url into tree,
// untimed, as a user would (npm install, no install scripts), and returns
// the entry point of its bin and the number of packages installed.
func prime(ctx context.Context, url, tree, name, version string) (entry string, n int, err error) {
	cmd := exec.CommandContext(ctx, "npm", "install", "--prefix", tree, "--registry", url, "--cache", filepath.Join(tree, ".npm-cache"),
		"--ignore-scripts", "--no-audit", "--no-fund", "--no-update-notifier", name+"@"+version)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", 0, fmt.Errorf("npm install %s@%s through %s: %w\n%s", name, version, url, err, out)
	}
	dir := filepath.Join(tree, "node_modules", name)
	var pj struct {
		Bin map[string]string `json:"bin"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pj)
	}
	if err != nil || len(pj.Bin) != 1 {
		return "", 0, fmt.Errorf("%s: want one bin in package.json (%v)", dir, err)
	}
	for _, file := range pj.Bin {
		entry = filepath.Join(dir, file)
	}
	var lock struct {
		Packages map[string]json.RawMessage `json:"packages"`
	}
	if b, err = os.ReadFile(filepath.Join(tree, "package-lock.json")); err == nil {
		err = json.Unmarshal(b, &lock)
	}
	if err != nil {
		return "", 0, err
	}
	return entry, len(lock.Packages) - 1, nil // less the root
}

// benchInstall runs the install section with cfg.coldRuns later and direct
// starts and firstRuns first starts.
func benchInstall(ctx context.Context, cfg *config, firstRuns int) (*installFigures, error) {
	version, err := lockedVersion(cfg.lockfile, memoryPackage)
	if err != nil {
		return nil, err
	}
	uplink := cfg.uplink
	if uplink == "" {
		if uplink, err = configuredRegistry(); err != nil {
			return nil, err
		}
	}
	node, err := sandbox.LookCommand("node", sandbox.PluginPATH)
	if err != nil {
		return nil, err
	}
	nodeVersion, _ := exec.Command(node, "--version").Output()
	v := cfg.variants[0]
	f := &installFigures{Package: memoryPackage + "@" + version, Server: v.name,
		Registry: "Verdaccio on loopback, uplink " + uplink + ", primed by one untimed install",
		Node:     node + " " + strings.TrimSpace(string(nodeVersion))}

	// The registry, on the Node 22 of conformance/ (what runs Verdaccio
	// does not matter to the figures), primed.
	reg, stop, err := npmregistry.Run(cfg.node, &npmregistry.Options{Dir: filepath.Join(cfg.work, "registry"), Verdaccio: cfg.verdaccio, Uplink: uplink})
	if err != nil {
		return nil, err
	}
	defer stop()
	fmt.Fprintf(os.Stderr, "bench: install: priming %s with %s (through %s)\n", reg.URL, f.Package, uplink)
	t := time.Now()
	entry, n, err := prime(ctx, reg.URL, filepath.Join(cfg.work, "direct-tree"), memoryPackage, version)
	if err != nil {
		return nil, err
	}
	f.PrimeSeconds, f.Packages = time.Since(t).Seconds(), n

	// The declaration, as the server's README writes it (the memory file
	// in the server's own HOME, its data directory).
	dir := filepath.Join(cfg.work, "install-plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	decl, err := json.Marshal(map[string]any{"command": "npx", "args": []string{"-y", f.Package},
		"env": map[string]string{"MEMORY_FILE_PATH": "${HOME}/memory.jsonl"}})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.mcp.json"), decl, 0o644); err != nil {
		return nil, err
	}
	// hosted is plughost on the package cache (and trust state) under
	// state; startServer gives each start an empty catalog cache.
	hosted := func(state string) serverSpec {
		sp := cfg.plughost(v.name, v.args, dir)
		sp.Env = []string{"XDG_DATA_HOME=" + filepath.Join(cfg.work, "install-data"), "XDG_STATE_HOME=" + state, "npm_config_registry=" + reg.URL}
		return sp
	}
	direct := serverSpec{Name: directName, Env: []string{"MEMORY_FILE_PATH=" + filepath.Join(cfg.work, "direct-memory.jsonl")},
		Command: func(string) []string { return []string{node, entry} }}
	const tool, installLimit = "read_graph", 10 * time.Minute

	var first latencies
	var state string
	for i := range firstRuns {
		if state, err = os.MkdirTemp(cfg.work, "install-state-"); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "bench: install: first start %d/%d (empty package cache)\n", i+1, firstRuns)
		d, err := startOnce(ctx, cfg, hosted(state), tool, installLimit)
		if err != nil {
			return nil, fmt.Errorf("first start: %w", err)
		}
		if _, err := os.Stat(filepath.Join(state, "plughost", "packages", "memory")); err != nil {
			return nil, fmt.Errorf("first start: no package cache: %w", err)
		}
		first = append(first, d)
	}

	// Later and direct starts alternate, so that a change in the machine's
	// load falls on both rows alike.
	fmt.Fprintf(os.Stderr, "bench: install: %d later starts and %d direct starts, alternating\n", cfg.coldRuns, cfg.coldRuns)
	asked := len(reg.Requests())
	var later, straight latencies
	for range cfg.coldRuns {
		d, err := startOnce(ctx, cfg, hosted(state), tool, time.Minute)
		if err != nil {
			return nil, fmt.Errorf("later start: %w", err)
		}
		later = append(later, d)
		if d, err = startOnce(ctx, cfg, direct, tool, time.Minute); err != nil {
			return nil, fmt.Errorf("direct start: %w", err)
		}
		straight = append(straight, d)
	}
	if again := reg.Requests(); len(again) != asked {
		return nil, fmt.Errorf("later starts asked the registry: %q", again[asked:])
	}
	f.First, f.Later, f.Direct = startFiguresOf(first), startFiguresOf(later), startFiguresOf(straight)
	f.FirstVsDirect = ratio(f.First.MedianMS, f.Direct.MedianMS)
	f.LaterVsDirect = ratio(f.Later.MedianMS, f.Direct.MedianMS)

	call := echoCall{params: []byte(`{"name":"read_graph","arguments":{}}`), want: []byte(`entities`)}
	fmt.Fprintf(os.Stderr, "bench: install: %d sequential read_graph calls, through plughost and directly\n", cfg.seqCalls)
	if f.Wrapped, err = seqCalls(ctx, cfg, hosted(state), tool, call); err != nil {
		return nil, fmt.Errorf("calls through plughost: %w", err)
	}
	if f.DirectCall, err = seqCalls(ctx, cfg, direct, tool, call); err != nil {
		return nil, fmt.Errorf("direct calls: %w", err)
	}
	f.CallP50x = ratio(f.Wrapped.P50us, f.DirectCall.P50us)
	f.CallP90x = ratio(f.Wrapped.P90us, f.DirectCall.P90us)
	return f, nil
}

// seqCalls starts sp, waits for tool, makes cfg.warmup calls, then times
// cfg.seqCalls calls one after another.
func seqCalls(ctx context.Context, cfg *config, sp serverSpec, tool string, c echoCall) (seqFigures, error) {
	s, err := startServer(ctx, sp, stdio, cfg.work)
	if err != nil {
		return seqFigures{}, err
	}
	defer s.stop()
	if _, err := initialize(ctx, s.conn); err != nil {
		return seqFigures{}, fmt.Errorf("%w (stderr: %s)", err, s.stderrTail())
	}
	if _, err := waitForTools(ctx, s.conn, time.Minute, hasTool(tool)); err != nil {
		return seqFigures{}, fmt.Errorf("%w (stderr: %s)", err, s.stderrTail())
	}
	one := func() error {
		resp, err := s.conn.call(ctx, "tools/call", c.params)
		if err != nil {
			return err
		}
		return c.check(resp)
	}
	for range cfg.warmup {
		if err := one(); err != nil {
			return seqFigures{}, err
		}
	}
	lat := make(latencies, cfg.seqCalls)
	for i := range lat {
		t := time.Now()
		if err := one(); err != nil {
			return seqFigures{}, err
		}
		lat[i] = time.Since(t)
	}
	f := seqFigures{Calls: len(lat), P50us: us(lat.quantile(0.5)), P90us: us(lat.quantile(0.9)), P99us: us(lat.quantile(0.99))}
	return f, s.stop()
}

// printInstall writes the install section's table and ratios.
func printInstall(w io.Writer, f *installFigures) {
	fmt.Fprintf(w, "install: %s (%d packages), declared as npx -y; registry: %s; node: %s\n", f.Package, f.Packages, f.Registry, f.Node)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "start: exec → initialize → tools/list\truns\tmedian ms\tmin ms\tmax ms\t÷ direct (medians)\t")
	for _, r := range []struct {
		name string
		s    startFigures
		x    string
	}{
		{f.Server + ", first (install)", f.First, fmt.Sprintf("%.1f×", f.FirstVsDirect)},
		{f.Server + ", later (offline)", f.Later, fmt.Sprintf("%.2f×", f.LaterVsDirect)},
		{directName + " (node dist/index.js)", f.Direct, ""},
	} {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t%s\t\n", r.name, r.s.Runs, r.s.MedianMS, r.s.MinMS, r.s.MaxMS, r.x)
	}
	tw.Flush()
	fmt.Fprintln(tw, "read_graph, sequential\tcalls\tp50 µs\tp90 µs\tp99 µs\t")
	fmt.Fprintf(tw, "%s (later start)\t%d\t%.0f\t%.0f\t%.0f\t\n", f.Server, f.Wrapped.Calls, f.Wrapped.P50us, f.Wrapped.P90us, f.Wrapped.P99us)
	fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t\n", directName, f.DirectCall.Calls, f.DirectCall.P50us, f.DirectCall.P90us, f.DirectCall.P99us)
	tw.Flush()
	fmt.Fprintf(w, "install %s ÷ %s:  first start %.1f×  later start %.2f×  call p50 %.2f×  p90 %.2f×  (priming through the uplink took %.1f s, untimed)\n\n",
		f.Server, directName, f.FirstVsDirect, f.LaterVsDirect, f.CallP50x, f.CallP90x, f.PrimeSeconds)
}
