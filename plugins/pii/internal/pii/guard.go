package pii

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nyaruka/phonenumbers"

	"github.com/plughost/plughost/pluginproto"
	"github.com/plughost/plughost/plugins/internal/jsonscan"
)

// Action is what the guard does with a result that holds personal data.
type Action string

// The actions.
const (
	Redact Action = "redact" // replace each piece by [redacted: KIND] (default)
	Refuse Action = "refuse" // refuse the result, naming the kinds and places
)

// Settings are the guard's settings; SettingsFromEnv reads them.
type Settings struct {
	Action Action
	// Kinds are the kinds looked for (default all).
	Kinds []Kind
	// Region reads national phone numbers (default "US"; "" finds only
	// international ones, written with +).
	Region string
	// MaxBytes bounds the result scanned; a larger one is an error,
	// which the hook's on_error settles (default 4 MiB).
	MaxBytes int
}

// The environment variables SettingsFromEnv reads.
const (
	EnvAction   = "PLUGHOST_PII_ACTION"
	EnvKinds    = "PLUGHOST_PII_KINDS"
	EnvRegion   = "PLUGHOST_PII_REGION"
	EnvMaxBytes = "PLUGHOST_PII_MAX_BYTES"
)

// Defaults.
const (
	DefaultRegion   = "US"
	DefaultMaxBytes = 4 << 20
)

// SettingsFromEnv reads the settings from getenv (os.Getenv); a bad value
// is an error naming the variable. PLUGHOST_PII_REGION set to "none"
// reads international numbers only.
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	s := Settings{Action: Redact, Kinds: Kinds, Region: DefaultRegion, MaxBytes: DefaultMaxBytes}
	switch a := Action(cmp.Or(getenv(EnvAction), string(Redact))); a {
	case Redact, Refuse:
		s.Action = a
	default:
		return s, fmt.Errorf("%s=%q: want %q or %q", EnvAction, a, Redact, Refuse)
	}
	if v := getenv(EnvKinds); v != "" {
		s.Kinds = nil
		for k := range strings.SplitSeq(v, ",") {
			k = strings.TrimSpace(k)
			if !slices.Contains(Kinds, Kind(k)) {
				return s, fmt.Errorf("%s: no kind %q (the kinds: %v)", EnvKinds, k, Kinds)
			}
			s.Kinds = append(s.Kinds, Kind(k))
		}
	}
	switch v := getenv(EnvRegion); {
	case v == "none":
		s.Region = ""
	case v != "":
		if !phonenumbers.GetSupportedRegions()[strings.ToUpper(v)] {
			return s, fmt.Errorf("%s=%q: not a region libphonenumber knows (ISO 3166 codes such as US, DE, FR; none for international numbers only)", EnvRegion, v)
		}
		s.Region = strings.ToUpper(v)
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

// Points are the hook points the guard serves: the results.
var Points = []pluginproto.HookPoint{pluginproto.AfterCall, pluginproto.AfterRead, pluginproto.AfterGet}

// Guard judges results.
type Guard struct {
	finder Finder
	set    Settings
}

// NewGuard returns a guard with the settings (zero fields at defaults:
// Redact, every kind, no region, 4 MiB).
func NewGuard(set Settings) *Guard {
	set.Action = cmp.Or(set.Action, Redact)
	set.MaxBytes = cmp.Or(set.MaxBytes, DefaultMaxBytes)
	if len(set.Kinds) == 0 {
		set.Kinds = Kinds
	}
	return &Guard{finder: Finder{Kinds: set.Kinds, Region: set.Region}, set: set}
}

// Hook is the guard as a pluginproto.HookFunc: after_call, after_read
// and after_get judge the result; every other point passes.
func (g *Guard) Hook(ctx context.Context, q *pluginproto.HookRequest) (pluginproto.HookAnswer, error) {
	if !slices.Contains(Points, q.Point) || len(q.Result) == 0 {
		return pluginproto.Pass(), nil
	}
	if len(q.Result) > g.set.MaxBytes {
		return pluginproto.HookAnswer{}, fmt.Errorf("the result is %d bytes, over %s (%d): not scanned", len(q.Result), EnvMaxBytes, g.set.MaxBytes)
	}
	var (
		found []string // "email at $.content[0].text"
		edits []jsonscan.Edit
	)
	err := jsonscan.Walk(q.Result, false, func(s *jsonscan.String) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.BinaryContent() {
			return nil
		}
		fs := g.finder.Find(s.Value)
		if len(fs) == 0 {
			return nil
		}
		path := s.Path()
		var b strings.Builder
		at := 0
		for _, f := range fs {
			found = append(found, string(f.Kind)+" at "+path)
			b.WriteString(s.Value[at:f.Start])
			b.WriteString("[redacted: " + string(f.Kind) + "]")
			at = f.End
		}
		b.WriteString(s.Value[at:])
		edits = append(edits, jsonscan.Edit{Start: s.Start, End: s.End, Value: b.String()})
		return nil
	})
	if err != nil {
		return pluginproto.HookAnswer{}, fmt.Errorf("scanning the result: %w", err)
	}
	if len(found) == 0 {
		return pluginproto.Pass(), nil
	}
	what := describe(found)
	if g.set.Action == Refuse {
		return pluginproto.Refuse("the result holds personal data: " + what), nil
	}
	return pluginproto.Rewrite(jsonscan.Apply(q.Result, edits), "redacted personal data: "+what), nil
}

func describe(found []string) string {
	if len(found) > 3 {
		return strings.Join(found[:3], ", ") + fmt.Sprintf(" and %d more", len(found)-3)
	}
	return strings.Join(found, ", ")
}
