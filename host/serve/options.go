package serve

import "time"

// Options are what the command line gives the host: plain values, parsed
// by cmd/plughost's flags (the configuration file is Config's).
type Options struct {
	// Plugins is the plugin directory (--plugins; "" for the default,
	// created if missing); Workspace the files plugin's (--workspace).
	Plugins   string
	Workspace string
	// LogLevel is trace, debug, info, warn or error (--log-level).
	LogLevel string
	// Config is --config: the HCL configuration file ("" for
	// $PLUGHOST_CONFIG, else the default one when it exists).
	Config string
	// Version is plughost's, as the MCP server, the plugins and the
	// catalog cache's fingerprint are told.
	Version string
	// Devices is serve's device bridge; nil elsewhere.
	Devices *DeviceOptions
	// ToolSearch is serve's --tool-search: tool search mode even without
	// a search block in the configuration.
	ToolSearch bool
	// Serving is set by serve: the plugins block's start modes and the
	// catalog cache apply. The commands that load and exit (plugins,
	// call) start every plugin eagerly and use no cache.
	Serving bool
	// Observe are serve's metrics and audit settings; nil elsewhere.
	// HTTP is set by serve --http, whose listener serves /metrics.
	Observe *ObserveOptions
	HTTP    bool
	// TLS are serve's --tls-cert and --tls-key; nil elsewhere.
	TLS *TLSOptions
	// ConsoleListen is --console-listen: a loopback address the console
	// (host/console) is served on alone, beside stdio or instead of
	// --http's /console; "" for none.
	ConsoleListen string
	// Allow maps a provider name to the digest it may run with in this
	// host whatever its trust mode: plughost upgrade lists what a new
	// version offers before it is approved (Upgrade).
	Allow map[string]string
}

// DeviceOptions configure the device bridge (--device-listen and the
// flags beside it).
type DeviceOptions struct {
	Listen      string
	TokensFile  string
	CallTimeout time.Duration
	IdleTimeout time.Duration
	// AuthTimeout, FrameTimeout, MaxWaiting and MaxWaitingPerAddress are
	// device.Options' (zero for their defaults): what a connection that
	// has not authenticated may hold, and how long a frame may take.
	AuthTimeout          time.Duration
	FrameTimeout         time.Duration
	MaxWaiting           int
	MaxWaitingPerAddress int
}

// ObserveOptions are what operators watch: metrics on a listener of their
// own (MetricsListen; beyond loopback only with MetricsPublic), and the
// audit log (AuditLog, with each call's arguments when AuditArgs). With
// serve --http, metrics are also at /metrics on the HTTP listener, behind
// its token.
type ObserveOptions struct {
	MetricsListen string
	MetricsPublic bool
	AuditLog      string
	AuditArgs     bool
}

// TLSOptions are --tls-cert and --tls-key: with them every listener of
// serve speaks TLS with that pair (--http HTTPS, with its /sse and
// /metrics; --device-listen TLS; --metrics-listen HTTPS), reloaded when
// the files change (package tlsreload). The configuration file has no
// listener block yet, so they are flags only.
type TLSOptions struct {
	Cert, Key string
}

// HTTPOptions are serve --http's: they fill a streamable.Options.
type HTTPOptions struct {
	Addr     string
	Token    string // "" for $PLUGHOST_TOKEN
	Origins  []string
	Idle     time.Duration
	Rate     float64
	MaxBody  int64
	BodyWait time.Duration // --body-timeout
	Shutdown time.Duration
	Drain    time.Duration
}
