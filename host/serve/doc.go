// Package serve assembles plughost's host from a parsed configuration:
// the plugin manager and its sandbox, the catalog it feeds, and around
// them what `plughost serve` runs for clients and operators. Every command
// that loads plugins (serve, plugins, call, approve, upgrade) starts one
// with Start; cmd/plughost parses the flags into Options and prints.
//
//	h, err := serve.Start(&serve.Options{Plugins: dir, Version: v}, os.Stderr)
//	defer h.Stop()
//	<-h.Manager().Ready()
//	report := h.Report() // each plugin, what it offers, what failed
//
// Serve itself is Stdio or HTTP, which start the host and run the MCP
// server over it until stdin closes or a signal arrives.
//
// # The order of assembly
//
// Start takes its steps in an order that makes a mistake stop the start
// before any plugin runs, and keeps secrets away from the plugins:
//
//  1. The logger, the plugin directory (created when it is the default)
//     and the files plugin's workspace (dirs.go).
//  2. The configuration file (config.go): plughost serve has checked it
//     already with Preflight, the checks of plughost check.
//  3. The services that must open first (openServices): the metrics and
//     the audit log (observe.go), the TLS pair (tls.go), and when serving
//     the sealer of requestState (statekey.go) and the tasks service with
//     its store (tasks.go). Then the secrets leave the environment, which
//     a plugin run without the sandbox would inherit.
//  4. The run directory, where plugins keep their sockets and tmp
//     directories; those of hosts that died are swept (rundir.go).
//  5. The manager's options (manager.go): the sandbox launcher
//     (launcher.go), a declared server's launch through the wrapper
//     (wrapped.go, wrapped_oauth.go) and its package install
//     (packages.go), what a failure tells (failures.go), the trust check
//     and the held store (trust.go, pins.go), the start modes and the
//     catalog cache.
//  6. Tool search mode's index (search.go), the catalog and the manager,
//     run in the background; the device bridge (device.go) last.
//
// A step that fails undoes those before it; once the manager runs, Stop
// undoes them all.
//
// # Reloading
//
// While Stdio or HTTP serve, SIGHUP or a change of the configuration
// file calls Host.Reload (reload.go, reload_watch.go): the file is
// checked whole as Preflight checks it, refused whole if it fails, else
// handed to each area's reloader in turn, which applies what can change
// for new work; reload_next.go names what waits for the next start.
//
// A serving host gives the manager options that read the configuration
// each time they are asked (liveconfig.go), a trust it can swap
// (livetrust.go) and hooks in a hooks.Swap: reloadPlugins
// (reload_plugins.go) sets the new configuration in them, then has the
// manager restart the plugins whose sandbox policy changed.
package serve
