package poison

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/plughost/plughost/pluginproto"
)

// Settings are the definitions guard's settings; SettingsFromEnv reads
// them.
type Settings struct {
	// Skip are checks not run (e.g. encoded-payload for servers whose
	// descriptions carry base64 examples).
	Skip []Check
	// MaxBytes bounds a definition scanned; a larger one is an error,
	// which the hook's on_error settles (default 1 MiB).
	MaxBytes int
}

// The environment variables SettingsFromEnv reads.
const (
	EnvSkip     = "PLUGHOST_DEFINITIONS_SKIP"
	EnvMaxBytes = "PLUGHOST_DEFINITIONS_MAX_BYTES"
)

// DefaultMaxBytes is MaxBytes' default.
const DefaultMaxBytes = 1 << 20

// SettingsFromEnv reads the settings from getenv (os.Getenv); a bad value
// is an error naming the variable.
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	s := Settings{MaxBytes: DefaultMaxBytes}
	for name := range strings.SplitSeq(getenv(EnvSkip), ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if !slices.Contains(Checks, Check(name)) {
			return s, fmt.Errorf("%s: no check %q (the checks: %v)", EnvSkip, name, Checks)
		}
		s.Skip = append(s.Skip, Check(name))
	}
	if v := getenv(EnvMaxBytes); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return s, fmt.Errorf("%s=%q: want a positive number of bytes", EnvMaxBytes, v)
		}
		s.MaxBytes = n
	}
	return s, nil
}

// Guard answers on_definitions questions.
type Guard struct {
	scanner Scanner
	max     int
}

// NewGuard returns a guard with the settings.
func NewGuard(set Settings) *Guard {
	return &Guard{scanner: Scanner{Skip: set.Skip}, max: cmp.Or(set.MaxBytes, DefaultMaxBytes)}
}

// Hook is the guard as a pluginproto.HookFunc: at on_definitions it
// hides a definition with signs of poisoning, naming each check and
// where it found it (the operator reads this in plughost plugins); every
// other point passes.
func (g *Guard) Hook(_ context.Context, q *pluginproto.HookRequest) (pluginproto.HookAnswer, error) {
	if q.Point != pluginproto.OnDefinitions || len(q.Definition) == 0 {
		return pluginproto.Pass(), nil
	}
	if len(q.Definition) > g.max {
		return pluginproto.HookAnswer{}, fmt.Errorf("the definition is %d bytes, over %s (%d): not scanned", len(q.Definition), EnvMaxBytes, g.max)
	}
	found, err := g.scanner.Scan(q.Definition)
	if err != nil {
		return pluginproto.HookAnswer{}, fmt.Errorf("scanning the definition: %w", err)
	}
	if len(found) == 0 {
		return pluginproto.Pass(), nil
	}
	return pluginproto.Hide(Reason(found)), nil
}

// Reason is the hide reason for findings: the checks and places, the
// first three in full.
func Reason(found []Finding) string {
	var parts []string
	for i, f := range found {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(found)-3))
			break
		}
		parts = append(parts, f.String())
	}
	return "possibly poisoned: " + strings.Join(parts, "; ")
}
