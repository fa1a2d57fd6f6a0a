// Package manager runs the plugins of a directory and publishes their tools.
//
// An operator drops executables into a directory; the manager launches each
// one as a hashicorp/go-plugin gRPC plugin speaking the pluginproto contract,
// asks it for its tools and publishes it as a [tool.Provider] into whatever
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
//	<-m.Ready()   // optional: the plugins found at start have loaded or failed
//	for _, s := range m.Status() {
//		fmt.Println(s.Name, s.State, s.Tools, s.LastError)
//	}
//
// # Which files are plugins
//
// Every regular file (or symlink to one) in Dir with an execute bit set is a
// plugin. Dotfiles, directories, files without an execute bit (logged at
// debug level) and editor leftovers (names ending in "~", ".swp", ".swx",
// ".tmp", ".bak", emacs "#name#", vim's "4913") are ignored.
//
// A plugin's provider name is its file name with its last extension removed
// (echo.exe → echo, my.tool.sh → my.tool → my_tool) and every byte outside
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
// plugin's contract version must be the one its handshake named), call
// ListTools, publish the provider with Publisher.Set, and open WatchTools so
// that a plugin announcing a new tool list is listed and published again. A
// plugin that fails any step is logged with the reason (and the tail of its
// stderr), is reported as [StateFailed], and is retried only when its file
// changes; the other plugins are unaffected.
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
// A plugin whose process dies is removed from the publisher at once; calls in
// flight fail with an error naming the exit ("plugin echo exited: exit
// status 3"). It is restarted after an exponential backoff (BackoffInitial,
// doubling per crash within CrashWindow, at most BackoffMax) and published
// again. A plugin that dies CrashLimit times within CrashWindow is parked
// ([StateParked]) until its file changes.
//
// # Processes
//
// Every plugin process is started by one function, the manager's go-plugin
// RunnerFunc (runner.go), never by go-plugin's own Cmd runner. It gives the
// plugin /dev/null as stdin (the host's stdin carries the MCP client's
// JSON-RPC), the host's environment plus Options.Env, its own process group,
// and on Linux a parent-death signal (SIGKILL) so that it does not outlive
// the host. The plugin's stderr is forwarded to the logger under a sub-logger
// named after the plugin; hclog JSON lines are parsed into leveled entries the
// way go-plugin does. Options.Launcher is the seam where a sandbox turns the
// prepared command into the one actually started.
//
// When a plugin's main process exits, for whatever reason, the rest of its
// process group is killed with SIGKILL before the process is reaped. Unloading
// a plugin first lets calls in flight finish and asks it to shut down
// (go-plugin's graceful Kill), and kills its process group once
// Options.StopTimeout has passed. When Run returns, every plugin process has
// been reaped, go-plugin's socket directories are removed and the directory
// watcher is closed.
package manager
