package serve

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/console"
)

// The configuration in force as the console's page shows it: the flags
// (as serve was given them), the environment variables plughost reads,
// every attribute of the configuration file in force with its line, and
// the defaults of what neither set. A secret is never shown, only that it
// is set.

// Source names of Setting.Source.
const (
	sourceDefault = "default"
	sourceFlag    = "flag "
	sourceEnv     = "environment "
)

// Config is the configuration in force, setting by setting.
func (s *consoleSource) Config() []console.Setting {
	h := s.h
	r := &h.reloads
	r.mu.Lock()
	path, src, flags, cfg := r.check.Config, r.src, slices.Clone(r.flags), r.current
	r.mu.Unlock()
	out := flags
	dirSource := sourceDefault
	if slices.ContainsFunc(flags, func(st console.Setting) bool { return st.Name == "--plugins" }) {
		dirSource = sourceFlag + "--plugins"
	}
	out = append(out, console.Setting{Name: "plugin directory", Value: h.pluginDir, Source: dirSource})
	if path != "" {
		settings, err := config.Settings(src, path)
		if err != nil { // the file in force was read, so this is not expected: say so on the page
			out = append(out, console.Setting{Name: "configuration file", Value: "(cannot list its settings: " + err.Error() + ")", Source: path})
		}
		for _, st := range settings {
			out = append(out, console.Setting{Name: st.Name, Value: st.Value, Source: path + ":" + strconv.Itoa(st.Line)})
		}
	}
	if cfg != nil {
		out = append(out, defaultSettings(cfg)...)
	}
	return out
}

// defaultSettings are the settings that decide the most and that the
// file left to their defaults: the trust mode and file, the limits.
func defaultSettings(cfg *config.Config) []console.Setting {
	var out []console.Setting
	add := func(name, value string) {
		out = append(out, console.Setting{Name: name, Value: value, Source: sourceDefault})
	}
	if cfg.Trust.Mode == "" {
		add("trust.mode", `"open"`)
	}
	if cfg.Trust.File == "" {
		if tf, err := TrustFile(cfg); err == nil {
			add("trust.file", strconv.Quote(tf))
		}
	}
	if cfg.Audit == nil {
		add("audit", "off")
	}
	return out
}

// flagSettings are the flags serve was started with (those that differ
// from their zero value) and the environment variables plughost reads
// that were set; getenv reads the environment as it was at start,
// before the secrets left it.
func flagSettings(o *Options, getenv func(string) string) []console.Setting {
	var out []console.Setting
	flag := func(name, value string) {
		if value != "" {
			out = append(out, console.Setting{Name: "--" + name, Value: value, Source: sourceFlag + "--" + name})
		}
	}
	path, from := config.Locate(o.Config, getenv)
	switch from {
	case config.FromFlag:
		flag("config", path)
	case config.FromEnv:
		out = append(out, console.Setting{Name: "configuration file", Value: path, Source: sourceEnv + config.EnvConfig})
	case config.FromDefault:
		out = append(out, console.Setting{Name: "configuration file", Value: path, Source: sourceDefault})
	}
	flag("plugins", o.Plugins)
	flag("workspace", o.Workspace)
	flag("log-level", o.LogLevel)
	if o.ToolSearch {
		flag("tool-search", "true")
	}
	if t := o.TLS; t != nil {
		flag("tls-cert", t.Cert)
		flag("tls-key", t.Key)
	}
	if ob := o.Observe; ob != nil {
		flag("metrics-listen", ob.MetricsListen)
		flag("audit-log", ob.AuditLog)
		if ob.AuditArgs {
			flag("audit-arguments", "true")
		}
	}
	if d := o.Devices; d != nil {
		flag("device-listen", d.Listen)
		flag("device-tokens", d.TokensFile)
	}
	for _, name := range slices.Sorted(maps.Keys(o.Allow)) {
		flag("allow", name+"="+o.Allow[name])
	}
	for _, v := range []struct {
		name   string
		secret bool
	}{{"PLUGHOST_TOKEN", true}, {"PLUGHOST_STATE_KEY", true}, {"PLUGHOST_STATE_KEY_FILE", false},
		{"PLUGHOST_REDIS_PASSWORD", true}, {"PLUGHOST_REDIS_PASSWORD_FILE", false}, {"PLUGHOST_LANE", false}} {
		value := getenv(v.name)
		if value == "" {
			continue
		}
		if v.secret {
			value = "(set)"
		}
		out = append(out, console.Setting{Name: "$" + v.name, Value: value, Source: sourceEnv + v.name})
	}
	return out
}

// httpSettings are serve --http's flags: its address, the token (only
// that it is set, and whence), the origins allowed and the limits.
func httpSettings(f *HTTPOptions, getenv func(string) string) []console.Setting {
	out := []console.Setting{{Name: "--http", Value: f.Addr, Source: sourceFlag + "--http"}}
	if f.Token != "" {
		src := sourceFlag + "--token"
		if getenv("PLUGHOST_TOKEN") == f.Token {
			src = sourceEnv + "PLUGHOST_TOKEN"
		}
		out = append(out, console.Setting{Name: "token", Value: "(set)", Source: src})
	}
	for _, o := range f.Origins {
		out = append(out, console.Setting{Name: "--allowed-origin", Value: o, Source: sourceFlag + "--allowed-origin"})
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"session-idle", f.Idle}, {"body-timeout", f.BodyWait}, {"shutdown-grace", f.Shutdown}, {"drain-delay", f.Drain}} {
		if d.v != 0 {
			out = append(out, console.Setting{Name: "--" + d.name, Value: d.v.String(), Source: sourceFlag + "--" + d.name})
		}
	}
	if f.Rate != 0 {
		out = append(out, console.Setting{Name: "--rate-limit", Value: strconv.FormatFloat(f.Rate, 'g', -1, 64), Source: sourceFlag + "--rate-limit"})
	}
	if f.MaxBody != 0 {
		out = append(out, console.Setting{Name: "--max-body", Value: fmt.Sprint(f.MaxBody), Source: sourceFlag + "--max-body"})
	}
	return out
}

// noteHTTP adds serve --http's flags to the settings the console shows.
func (r *reloadState) noteHTTP(f *HTTPOptions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	getenv := r.check.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	r.flags = append(r.flags, httpSettings(f, getenv)...)
}
