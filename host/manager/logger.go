package manager

import (
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// pluginLogger is the logger handed to go-plugin, which logs each plugin's
// stderr under pluginLogger.Named(<provider name>). go-plugin re-logs an
// hclog JSON line of the plugin with the line's extra fields as arguments,
// among them the plugin's own "@module"; in JSON output that key would
// replace the sub-logger's name, so every argument key starting with "@" is
// renamed "plugin_..." ("@module" → "plugin_module").
//
// quiet, when not nil, is an instance's: true while the host kills a
// plugin that never completed its handshake (a start that failed or was
// cancelled). go-plugin then has no graceful path to try and warns "plugin
// failed to exit gracefully" on every such kill; that warning is logged at
// DEBUG instead, the failure being logged on its own.
type pluginLogger struct {
	hclog.Logger
	quiet *atomic.Bool
}

// processExited is what go-plugin (v1.8.0) logs when a plugin's process
// ends: at ERROR with its exit status, or at INFO. The manager says it
// better, once: a death as "plugin exited" with the stderr, a failed
// start as the load's failure, and an unload is what was asked for. So
// it is logged at DEBUG.
const processExited = "plugin process exited"

// notGraceful is what go-plugin (v1.8.0, Client.Kill) warns when it kills
// a plugin that did not exit after being asked to, or could not be asked.
const notGraceful = "plugin failed to exit gracefully"

func renameArgs(args []any) []any {
	var out []any
	for i := 0; i+1 < len(args); i += 2 {
		k, ok := args[i].(string)
		if !ok || !strings.HasPrefix(k, "@") {
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = "plugin_" + k[1:]
	}
	if out == nil {
		return args
	}
	return out
}

func (l pluginLogger) Log(level hclog.Level, msg string, args ...any) {
	l.Logger.Log(level, msg, renameArgs(args)...)
}
func (l pluginLogger) Trace(msg string, args ...any) { l.Logger.Trace(msg, renameArgs(args)...) }
func (l pluginLogger) Debug(msg string, args ...any) { l.Logger.Debug(msg, renameArgs(args)...) }
func (l pluginLogger) Info(msg string, args ...any) {
	if msg == processExited {
		l.Logger.Debug(msg, renameArgs(args)...)
		return
	}
	l.Logger.Info(msg, renameArgs(args)...)
}
func (l pluginLogger) Warn(msg string, args ...any) {
	if msg == notGraceful && l.quiet != nil && l.quiet.Load() {
		l.Logger.Debug(msg+" (it never completed its handshake: nothing to shut down gracefully)", renameArgs(args)...)
		return
	}
	l.Logger.Warn(msg, renameArgs(args)...)
}
func (l pluginLogger) Error(msg string, args ...any) {
	if msg == processExited {
		l.Logger.Debug(msg, renameArgs(args)...)
		return
	}
	l.Logger.Error(msg, renameArgs(args)...)
}

func (l pluginLogger) With(args ...any) hclog.Logger {
	return pluginLogger{l.Logger.With(renameArgs(args)...), l.quiet}
}
func (l pluginLogger) Named(name string) hclog.Logger {
	return pluginLogger{l.Logger.Named(name), l.quiet}
}
func (l pluginLogger) ResetNamed(name string) hclog.Logger {
	return pluginLogger{l.Logger.ResetNamed(name), l.quiet}
}
