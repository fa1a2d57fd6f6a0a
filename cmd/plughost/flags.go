package main

import (
	"flag"
	"os"
	"strings"
	"time"

	"github.com/plughost/plughost/host/device"
	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/mcp/streamable"
	"github.com/plughost/plughost/host/serve"
)

// The flags of the commands that start a host: each fills a field of
// serve.Options (or serve.HTTPOptions), which assembles it.

// registerHost registers the flags every command that loads plugins
// shares.
func registerHost(fs *flag.FlagSet, h *serve.Options) {
	h.Version = version
	fs.StringVar(&h.Plugins, "plugins", "", "plugin directory (default $XDG_DATA_HOME/plughost/plugins, created if missing)")
	fs.StringVar(&h.Workspace, "workspace", "", "directory the files plugin writes into (default $XDG_DATA_HOME/plughost/workspace)")
	fs.StringVar(&h.Config, "config", "", "HCL configuration file: sandbox policies, plugin start modes and the catalog cache (see docs/reference.md \"Configuration blocks\"); "+
		"default $PLUGHOST_CONFIG, else ~/.config/plughost/plughost.hcl when it exists")
	fs.StringVar(&h.LogLevel, "log-level", envOr("PLUGHOST_LOG_LEVEL", "info"), "log level: trace, debug, info, warn, error (logs go to stderr)")
}

func registerDevices(fs *flag.FlagSet, f *serve.DeviceOptions) {
	fs.StringVar(&f.Listen, "device-listen", "", "accept devices (the framed ##START protocol) on this TCP address, e.g. 127.0.0.1:9000 (off unless given)")
	fs.StringVar(&f.TokensFile, "device-tokens", "", "file of device tokens, one per line (# comments); devices must then AUTH with one. Required for a non-loopback --device-listen")
	fs.DurationVar(&f.CallTimeout, "device-call-timeout", device.DefaultCallTimeout, "how long a tool call waits for a device's result")
	fs.DurationVar(&f.IdleTimeout, "device-idle-timeout", device.DefaultIdleTimeout, "close a device connection after this long without a frame from it")
	fs.DurationVar(&f.AuthTimeout, "device-auth-timeout", device.DefaultAuthTimeout, "close a device connection not admitted this long after it opened (with tokens: no AUTH accepted; without: no AUTH, register or TEXT)")
	fs.DurationVar(&f.FrameTimeout, "device-frame-timeout", device.DefaultFrameTimeout, "close a device connection whose frame has not fully arrived this long after it began")
	fs.IntVar(&f.MaxWaiting, "device-max-waiting", device.DefaultMaxWaiting, "device connections waiting to authenticate at once; one more evicts the oldest")
	fs.IntVar(&f.MaxWaitingPerAddress, "device-max-waiting-per-address", device.DefaultMaxWaitingPerAddress, "device connections waiting to authenticate from one address (IPv6: one /64); one more evicts that address's oldest")
}

func registerHTTP(fs *flag.FlagSet, f *serve.HTTPOptions) {
	fs.StringVar(&f.Addr, "http", "", "serve Streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8080; https:// with --tls-cert)")
	// The default is read from the environment by serve.HTTP, never
	// shown as the flag's default: -h would print the secret.
	fs.StringVar(&f.Token, "token", "",
		"bearer token HTTP clients must send (default $PLUGHOST_TOKEN); required to listen beyond loopback")
	fs.Var((*listFlag)(&f.Origins), "allowed-origin", "an Origin browsers may send besides the server's own, e.g. http://localhost:6274 (repeatable; * allows any)")
	fs.DurationVar(&f.Idle, "session-idle", 30*time.Minute, "end HTTP sessions idle for this long")
	fs.Float64Var(&f.Rate, "rate-limit", 100, "requests per second one HTTP session may send (negative: no limit)")
	fs.Int64Var(&f.MaxBody, "max-body", mcp.DefaultMaxMessageSize, "largest HTTP request body, in bytes")
	fs.DurationVar(&f.BodyWait, "body-timeout", streamable.DefaultBodyTimeout, "how long an HTTP request body may take to arrive; then 408 and the connection closed")
	fs.DurationVar(&f.Shutdown, "shutdown-grace", 10*time.Second, "on SIGINT/SIGTERM, after --drain-delay, how long calls in flight and the tasks this replica runs may finish")
	fs.DurationVar(&f.Drain, "drain-delay", 0, "on SIGINT/SIGTERM, how long to go on serving while /readyz answers 503, "+
		"so that load balancers stop sending requests first (e.g. 5s behind Kubernetes); --shutdown-grace follows")
}

func registerObserve(fs *flag.FlagSet, f *serve.ObserveOptions) {
	fs.StringVar(&f.MetricsListen, "metrics-listen", "", "serve Prometheus metrics at http://ADDR/metrics (https:// with --tls-cert), without a token "+
		"(e.g. 127.0.0.1:9464; beyond loopback only with --metrics-public); with --http they are also at /metrics behind --token")
	fs.BoolVar(&f.MetricsPublic, "metrics-public", false, "let --metrics-listen listen beyond loopback (metrics name tools, plugins and figures; no secrets)")
	fs.StringVar(&f.AuditLog, "audit-log", "", "append one JSON line per tool call to FILE (created 0600; - for stderr; "+
		"wins over an audit block in --config); see docs/operators.md \"Audit log\"")
	fs.BoolVar(&f.AuditArgs, "audit-arguments", false, "include each call's arguments in the audit log (cut beyond 4 KiB)")
}

func registerTLS(fs *flag.FlagSet, f *serve.TLSOptions) {
	fs.StringVar(&f.Cert, "tls-cert", "", "PEM certificate (chain) FILE: --http, --device-listen and --metrics-listen speak TLS "+
		"(reloaded when the file changes); needs --tls-key")
	fs.StringVar(&f.Key, "tls-key", "", "PEM private key FILE of --tls-cert")
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
