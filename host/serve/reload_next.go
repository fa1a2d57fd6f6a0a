package serve

import (
	"reflect"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
)

// The settings a reload cannot apply while serving: each is read once, by
// something the host opened at start and that work in flight holds (the
// listener's session table and replay buffers, the task store and its
// redis connection, the sealer's key, the search index, the OAuth
// verifier). The audit log's own (on or off) is reloadAudit's to say. A reload that changes one applies everything else
// and names these in one WARN line: they take effect at the next start.
// The flags (--http's address, --tls-cert and --tls-key, --audit-log...)
// are not the file's: a reload never reads them.

// nextStart is one such setting: its key as the file writes it, and
// whether two configurations differ in it.
type nextStart struct {
	key    string
	differ func(old, next *config.Config) bool
}

// differ compares the part of two configurations that of picks.
func differ[T any](of func(*config.Config) T) func(old, next *config.Config) bool {
	return func(old, next *config.Config) bool { return !reflect.DeepEqual(of(old), of(next)) }
}

var nextStartSettings = []nextStart{
	{"limits.sessions", differ(func(c *config.Config) int { return c.Limits.Sessions })},
	{"limits.replay_bytes", differ(func(c *config.Config) int64 { return c.Limits.ReplayBytes })},
	{"limits.replay_budget", differ(func(c *config.Config) int64 { return c.Limits.ReplayBudget })},
	{"limits.items", differ(func(c *config.Config) int { return c.Limits.Items })},
	{"limits.result_size", differ(func(c *config.Config) int64 { return c.Limits.ResultSize })},
	{"limits.definition_size", differ(func(c *config.Config) int64 { return c.Limits.DefinitionSize })},
	{"limits.list_size", differ(func(c *config.Config) int64 { return c.Limits.ListSize })},
	{"limits.plugin_in_flight", differ(func(c *config.Config) int { return c.Limits.PluginInFlight })},
	{"stateless.state_key_file", differ(func(c *config.Config) string { return c.Stateless.KeyFile })},
	{"tasks.ttl", differ(func(c *config.Config) time.Duration { return c.Tasks.TTL })},
	{"tasks.poll_interval", differ(func(c *config.Config) time.Duration { return c.Tasks.PollInterval })},
	{"tasks.max_running", differ(func(c *config.Config) int { return c.Tasks.MaxRunning })},
	{"tasks.max_result_size", differ(func(c *config.Config) int64 { return c.Tasks.MaxResultSize })},
	{"tasks.redis", differ(func(c *config.Config) *config.Redis { return c.Tasks.Redis })},
	{"search", differ(func(c *config.Config) *config.Search { return c.Search })},
	{"auth", differ(func(c *config.Config) *config.Auth { return c.Auth })},
	{"plugins.cache", differ(func(c *config.Config) [2]any { return [2]any{c.Plugins.CacheOff, c.Plugins.CacheDir} })},
	// The held definitions' files (plughost plugins --diff reads them)
	// stay where the start put them, or absent when it started in mode
	// open; the checks and the quarantine apply at once (reloadPlugins).
	{"trust.file (the held definitions' files)", func(old, next *config.Config) bool {
		holds := func(t config.Trust) bool { return t.Uses(config.TrustPinned) || t.Uses(config.TrustSigned) }
		return holds(next.Trust) && (!holds(old.Trust) || old.Trust.File != next.Trust.File)
	}},
	{"observability", differ(func(c *config.Config) *config.Observability { return c.Observability })},
}

// nextStartKeys are the keys of nextStartSettings whose values differ.
func nextStartKeys(old, next *config.Config) []string {
	var keys []string
	for _, s := range nextStartSettings {
		if s.differ(old, next) {
			keys = append(keys, s.key)
		}
	}
	return keys
}

// warnNextStart names, in one WARN line, the changed settings that wait
// for the next start.
func warnNextStart(old, next *config.Config, log hclog.Logger) {
	if keys := nextStartKeys(old, next); keys != nil {
		log.Warn("these settings changed but cannot change while serving: applied at the next start",
			"settings", strings.Join(keys, ", "))
	}
}
