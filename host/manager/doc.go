// Package manager runs the plugins of a directory and publishes what they
// offer: tools, and for a plugin of contract 2 also resources, resource
// templates, prompts and completion.
//
// An operator drops executables into a directory; the manager launches each
// one as a hashicorp/go-plugin gRPC plugin speaking the pluginproto contract,
// asks it what it offers and publishes it as a [tool.Provider] (a
// [tool.Server]) into whatever
// implements [Publisher] (the host's catalog). It then watches the directory
// and keeps the published set true to it:
//
//	m, err := manager.New(&manager.Options{
//		Dir:       "/etc/plughost/plugins",
//		Logger:    logger.Named("plugins"),
//		Publisher: cat, // *catalog.Catalog
//	})
//	if err != nil {
//		return err // bad options, or Dir is not a directory
//	}
//	go m.Run(ctx) // returns once ctx ends and every plugin is stopped
//	<-m.Ready()   // optional: the plugins found at start have loaded or failed,
//	              // or were published from the catalog cache
//	for _, s := range m.Status() {
//		fmt.Println(s.Name, s.State, s.Tools, s.LastError)
//	}
//
// # Which files are plugins
//
// Every regular file (or symlink to one) in Dir with an execute bit set is a
// plugin. So is a declaration NAME.mcp.json of an existing MCP server
// (package declared), whatever its mode, when Options.Wrapper is set: it
// is started as Wrapper followed by the declaration's path, and is
// otherwise supervised, cached and published as any plugin is, except that
// a remote server (a declared url) that fails to load is retried as a
// crashed plugin is restarted, and is never parked. Dotfiles, directories, files without an execute bit (logged at
// debug level) and editor leftovers (names ending in "~", ".swp", ".swx",
// ".tmp", ".bak", emacs "#name#", vim's "4913") are ignored.
//
// A plugin's provider name is its file name with its last extension removed
// (echo.exe → echo, my.tool.sh → my.tool → my_tool; a declaration's, its
// name without ".mcp.json") and every byte outside
// [a-zA-Z0-9_-] replaced by "_"; a name longer than 32 characters is
// shortened with a stable hash, and one starting with "device-" (the device
// bridge's prefix) gets "plugin-" in front. Package naming holds these
// rules ([naming.ForFile]); a derived name is logged and shown in
// PluginStatus.Renamed. When two files map to the same name the one seen
// first keeps it and the other is refused with a warning and listed as
// [StateRefused] until it changes again.
//
// # Life of a plugin
//
// Loading a plugin is: start it through the manager's runner, complete the
// go-plugin handshake within Options.StartTimeout, call Describe (the
// plugin's contract version must be the one its handshake named), list
// what it offers (ListTools, and ListResources, ListResourceTemplates and
// ListPrompts for what Describe says it offers), publish the provider with
// Publisher.Set, and open WatchTools so that a plugin announcing a change
// is listed and published again (and an update of a subscribed resource
// reaches a [ResourceUpdater] publisher). A
// plugin that fails any step is logged with the reason (and the head and
// the tail of its stderr, or a declared server's last lines:
// PluginStatus.LastStderr; and Options.NextStep's suggestion), is
// reported as [StateFailed], and is retried only when its file changes;
// the other plugins are unaffected. A start over its limit fails with
// [ErrStartTimeout], naming the limit and Options.StartTimeoutSetting. The
// same failure again is logged in one line, not whole (failure.go). A process killed by a signal the host did not
// send while it starts (an operator's kill, the OOM killer) is not a broken
// plugin: that counts as a death, restarted as below. A definition the manager cannot publish (one
// without its name or URI, or listed twice) is logged and reported in
// PluginStatus.Refused.
//
// Directory events are debounced per file (Options.Debounce), so a binary
// written in many small writes is loaded once, after the writes stop:
//
//   - a new executable is loaded;
//   - a changed executable (write, rename over, chmod) is reloaded: the new
//     process is started and published first, then the old one is stopped,
//     so clients see no gap in the tool list. If the new one fails to load,
//     the old one keeps serving and the failure is logged and kept as
//     LastError;
//   - a removed (or no longer executable) file is unloaded: Publisher.Remove,
//     then the process group is stopped;
//   - if Dir itself is removed, the manager logs it and keeps serving what is
//     loaded.
//
// A plugin whose process dies stays published while it restarts, so that
// its tools do not leave every client's list and come back a moment later;
// calls in flight fail with an error naming the exit ("plugin echo exited:
// exit status 3"). Calls made before it runs again wait for the new
// process when it restarts within 2 s, and are otherwise refused at once
// naming the cause ("plugin echo exited (signal: killed) and restarts in
// 4s"). It is restarted after an exponential backoff (BackoffInitial, doubling per
// crash within CrashWindow, at most BackoffMax) and published again (to
// the same effect when it offers the same). A plugin that dies CrashLimit
// times within CrashWindow is parked ([StateParked]) and unpublished until
// its file changes.
//
// # The catalog cache
//
// With Options.CacheDir set, what each plugin offers (its tools, resources,
// templates and prompts, and Describe's name, version, contract version,
// offers, title and description) is kept in <CacheDir>/<name>.json, written
// atomically (a temporary file renamed over it) in a versioned format
// ({"format":2,...})
// whenever a running plugin lists something other than the entry holds.
// An entry is valid for one key: the SHA-256 of the binary, the contract
// version the host speaks and Options.Fingerprint(name) (the host's digest
// of the plugin's sandbox policy and environment). So that a warm start
// need not hash every binary, the entry also keeps the binary's stat
// (size, mtime and ctime in ns, inode, device): while it matches, the
// stored SHA-256 is reused; otherwise the file is hashed again (on systems
// other than Linux it always is). A corrupt or foreign entry (other format,
// other name) is ignored with a warning, a stale one at debug level; the
// definitions of a valid one still pass the catalog's checks when
// published.
//
// At the first scan every plugin's entry is looked up before any plugin
// starts, and a plugin with a valid one is published from it at once and
// counts as settled for Ready. When the plugin then runs and lists other
// definitions, they are published (the catalog sends list_changed) and the
// entry is rewritten; the same ones change nothing.
//
// # Start on demand, stop when idle
//
// Options.Start (per plugin: Options.StartFor) chooses when a plugin runs.
// StartEager, the default, is the life described above. A StartLazy plugin
// with a valid cache entry is not started at all at the first scan (state
// [StateIdle]); one without is started once to learn its definitions and
// fill the cache. Every provider the manager publishes reaches its process
// through the plugin's gate (lazy.go): a request (CallTool, StartCall,
// ReadResource, GetPrompt, Complete, SubscribeResource) to an idle lazy
// plugin starts it and waits for it, at most StartTimeout+StopTimeout and
// not after its ctx ends; concurrent requests share one start. A failed
// start on demand fails the requests waiting and counts as a death
// (backoff, parking). After Options.IdleTimeout with no request in flight
// and no resource subscription held (SubscribeResource(…, true) without its
// false), the process is stopped as an unload would stop it, but its
// provider stays published: clients see no list change. A lazy plugin that
// dies while running follows the crash and backoff rules above; a request
// through the provider of a plugin that is no longer published (failed,
// parked, unloaded, restarting after a death) is refused at once.
//
// A changed file is handled as for an eager plugin; a lazy plugin that was
// idle is then published from the new file's cache entry, if it has one,
// or started to learn its definitions.
//
// Loads (a first load, or a load after the file changed while the plugin
// was down) run at most Options.LoadConcurrency at a time, so that a cold
// start of many plugins is neither paid one at a time nor all at once;
// restarts, reloads and starts on demand are not queued behind them.
//
// # Trust
//
// With Options.Trust (package trust's Checker), a plugin file runs only
// when the trust check allows it: in mode pinned, when its SHA-256 is the
// one approved for its name; in mode signed, when NAME.sig beside it is a
// valid signature by a trusted key. The file is checked right before each
// process start (a load, a reload, a restart, a lazy plugin woken) and
// before a lazy plugin is published from its cache entry. A file the
// check refuses is quarantined ([StateQuarantined], EventQuarantined):
// not started and not published (a running process of it is withdrawn
// and stopped: a replaced binary does not keep serving through the
// process of the binary it replaced), its status carrying the verdict
// (PluginStatus.Trust: mode, state, digest, reason). It is checked again
// when its file changes, when its NAME.sig changes, and when the trust
// files change (Trust.Watch): an approval starts it, a revocation stops
// and withdraws it, without a restart of the host.
//
// # Definitions pinned
//
// Before what a plugin lists is published (at a load, from the cache, and
// after each change it announces), it is compared with what was approved
// by package trust's rule (trust.Comparer; vet in pins.go acts on its
// rulings): the pins of the plugin's trust verdict
// (trust.Verdict.Definitions), or, when the approval pins none (mode
// signed, an approval of the digest alone), the first listing of that
// binary, kept in memory. In modes pinned and signed a definition whose
// pin differs is published in its approved form and its requests (a
// call, a read, a get) are refused with tool.ErrRefused naming how to
// approve it; one whose approval kept only the pin, and one never
// approved, are not published. Each is shown in PluginStatus.Held. In
// mode open (and without Options.Trust) a changed definition is published
// and logged at WARN with its word diff. Every change of state (held as
// pending or changed, served again, changed in mode open) is logged once
// published and reported to Options.OnDefinition. An approval of other
// definitions is followed like any trust change (Trust.Watch), without a
// restart; Manager.Definitions is what a plugin lists, for an approval to
// pin.
//
// # Definitions screened
//
// With Options.Hooks running at tool.OnDefinitions, each definition the
// pins serve is then asked of them (screening.go; a few at once, each
// question bounded by the hooks' timeouts) before the listing is
// published, its Item.Provider the plugin, so that a hook never judges
// its own plugin. A hook may pass it, rewrite it (served rewritten; a
// rewrite that names another definition holds it back), or hide it: it
// is then held back in state DefFlagged with the hook's refusal as
// Held.Reason, shown in PluginStatus.Held and reported to
// Options.OnDefinition, and its requests are refused with that reason.
// A hook that fails under on_error = "refuse" holds it back the same
// way. When a plugin serving a hook becomes ready (HookServers),
// every other plugin's listing is asked again, so that what was screened
// while the hook was starting is not left so; a definition it then
// passes is served again (DefCleared). With such hooks, no cache entry is
// published before its plugin's goroutine has screened it.
//
// What a plugin asks to be granted (PluginStatus.Requests) comes from its
// Describe (pluginproto.Plugin.Request) once it has run, and is kept in
// its cache entry; a quarantined binary shows it only when the cache
// holds an entry of that very binary (one that ran before, say in mode
// open), since the host never starts a quarantined binary to ask it. A
// declared server's comes from its declaration's requests member, always
// known. Options.Denied says what of it the plugin's sandbox policy does
// not grant (PluginStatus.Denied); it is logged at WARN once per
// supervisor and difference, and never granted.
//
// # A configuration reloaded
//
// The functions among the Options (Fingerprint, StartFor, StartTimeoutFor,
// ExposeFor, Denied, Launcher, Hooks, and a [Switchable] Trust) may answer
// otherwise while the manager runs: a host reloading its configuration
// makes them read the new one, then calls [Manager.Reconfigure], which
// restarts each plugin whose Fingerprint changed (as a changed file is
// reloaded: the new process published first, the old one's calls in
// flight finished) and leaves the others alone, and [Manager.Recheck],
// which checks every plugin's trust and shows its listing again (through
// the exposure lists, the hooks and [Manager.SetOverrides]' overrides).
// A new start mode or idle timeout applies at the plugin's next start.
//
// # Processes
//
// Every plugin process is started by one function, the manager's go-plugin
// RunnerFunc (runner.go), never by go-plugin's own Cmd runner. It gives the
// plugin /dev/null as stdin (the host's stdin carries the MCP client's
// JSON-RPC), the host's environment plus Options.Env, its own process group,
// and on Linux a parent-death signal (SIGKILL) so that it does not outlive
// the host. The plugin's output (its stdout after the go-plugin handshake
// line, its stderr, and what a Go plugin writes to os.Stdout and os.Stderr
// once it serves, which go-plugin carries over its stdio stream) is logged
// under a sub-logger named after the plugin, line by line: hclog JSON lines
// at their own level with their fields, other lines at INFO; lines are cut
// at 4 KiB and a flood is rate-limited (output.go). Options.Launcher is the
// seam where a sandbox turns the prepared command into the one actually
// started.
//
// When a plugin's main process exits, for whatever reason, the rest of its
// process group is killed with SIGKILL before the process is reaped. Unloading
// a plugin first lets calls in flight finish and asks it to shut down
// (go-plugin's graceful Kill), and kills its process group once
// Options.StopTimeout has passed. When Run returns, every plugin process has
// been reaped, go-plugin's socket directories are removed and the directory
// watcher is closed.
package manager
