package manager

import (
	"strings"

	"github.com/hashicorp/go-hclog"
)

// pluginLogger is the logger handed to go-plugin, which logs each plugin's
// stderr under pluginLogger.Named(<provider name>). go-plugin re-logs an
// hclog JSON line of the plugin with the line's extra fields as arguments,
// among them the plugin's own "@module"; in JSON output that key would
// replace the sub-logger's name, so every argument key starting with "@" is
// renamed "plugin_..." ("@module" → "plugin_module").
type pluginLogger struct{ hclog.Logger }

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
func (l pluginLogger) Info(msg string, args ...any)  { l.Logger.Info(msg, renameArgs(args)...) }
func (l pluginLogger) Warn(msg string, args ...any)  { l.Logger.Warn(msg, renameArgs(args)...) }
func (l pluginLogger) Error(msg string, args ...any) { l.Logger.Error(msg, renameArgs(args)...) }

func (l pluginLogger) With(args ...any) hclog.Logger {
	return pluginLogger{l.Logger.With(renameArgs(args)...)}
}
func (l pluginLogger) Named(name string) hclog.Logger { return pluginLogger{l.Logger.Named(name)} }
func (l pluginLogger) ResetNamed(name string) hclog.Logger {
	return pluginLogger{l.Logger.ResetNamed(name)}
}
