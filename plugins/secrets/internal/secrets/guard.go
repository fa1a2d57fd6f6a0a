package secrets

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/plughost/plughost/pluginproto"
	"github.com/plughost/plughost/plugins/internal/jsonscan"
)

// Action is what the guard does with a request that holds a credential.
type Action string

// The actions.
const (
	Refuse Action = "refuse" // refuse the call, read or get, naming the rules and where
	Redact Action = "redact" // replace each secret by [redacted: RULE] and go on
)

// Settings are the guard's settings; SettingsFromEnv reads them.
type Settings struct {
	// Arguments is the action on a credential in a call's or prompt
	// get's arguments, or in a read's URI (default Refuse: a redacted
	// argument makes a call that does something else than was asked).
	Arguments Action
	// Results is the action on a credential in a result (default Redact).
	Results Action
	// MaxBytes bounds the arguments or result scanned; a larger one is
	// an error, which the hook's on_error settles (default 4 MiB).
	MaxBytes int
	// Disabled are gitleaks rule ids left out (e.g. generic-api-key).
	Disabled []string
}

// The environment variables SettingsFromEnv reads (the operator passes
// them with the plugin's sandbox policy: env = ["PLUGHOST_SECRETS_…"]).
const (
	EnvArguments = "PLUGHOST_SECRETS_ARGUMENTS"
	EnvResults   = "PLUGHOST_SECRETS_RESULTS"
	EnvMaxBytes  = "PLUGHOST_SECRETS_MAX_BYTES"
	EnvDisable   = "PLUGHOST_SECRETS_DISABLE"
)

// DefaultMaxBytes is MaxBytes' default.
const DefaultMaxBytes = 4 << 20

// SettingsFromEnv reads the settings from getenv (os.Getenv), each unset
// one at its default; a bad value is an error naming the variable.
func SettingsFromEnv(getenv func(string) string) (Settings, error) {
	s := Settings{MaxBytes: DefaultMaxBytes}
	var err error
	if s.Arguments, err = action(EnvArguments, getenv(EnvArguments), Refuse); err != nil {
		return s, err
	}
	if s.Results, err = action(EnvResults, getenv(EnvResults), Redact); err != nil {
		return s, err
	}
	if v := getenv(EnvMaxBytes); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return s, fmt.Errorf("%s=%q: want a positive number of bytes", EnvMaxBytes, v)
		}
		s.MaxBytes = n
	}
	for id := range strings.SplitSeq(getenv(EnvDisable), ",") {
		if id = strings.TrimSpace(id); id != "" {
			s.Disabled = append(s.Disabled, id)
		}
	}
	return s, nil
}

func action(name, v string, def Action) (Action, error) {
	switch a := Action(cmp.Or(v, string(def))); a {
	case Refuse, Redact:
		return a, nil
	default:
		return "", fmt.Errorf("%s=%q: want %q or %q", name, v, Refuse, Redact)
	}
}

// Points are the hook points the guard serves.
var Points = []pluginproto.HookPoint{
	pluginproto.BeforeCall, pluginproto.AfterCall,
	pluginproto.BeforeGet, pluginproto.AfterGet,
	pluginproto.BeforeRead, pluginproto.AfterRead,
}

// Guard judges requests with a rule set and settings.
type Guard struct {
	rules *Rules
	set   Settings
}

// NewGuard returns a guard over rules (built with set.Disabled left out).
func NewGuard(rules *Rules, set Settings) *Guard {
	set.MaxBytes = cmp.Or(set.MaxBytes, DefaultMaxBytes)
	set.Arguments = cmp.Or(set.Arguments, Refuse)
	set.Results = cmp.Or(set.Results, Redact)
	return &Guard{rules: rules, set: set}
}

// Hook is the guard as a pluginproto.HookFunc: before_call and before_get
// judge the arguments, before_read the URI, after_* the result; every
// other point passes.
func (g *Guard) Hook(ctx context.Context, q *pluginproto.HookRequest) (pluginproto.HookAnswer, error) {
	switch q.Point {
	case pluginproto.BeforeCall, pluginproto.BeforeGet:
		return g.judge(ctx, "arguments", q.Arguments, g.set.Arguments)
	case pluginproto.AfterCall, pluginproto.AfterGet, pluginproto.AfterRead:
		return g.judge(ctx, "result", q.Result, g.set.Results)
	case pluginproto.BeforeRead:
		if fs := g.rules.Scan(q.URI, 0); len(fs) > 0 {
			// a URI cannot be redacted and still name what was asked for
			return pluginproto.Refuse("the URI holds a credential (gitleaks rule " + fs[0].Rule + ")"), nil
		}
	}
	return pluginproto.Pass(), nil
}

// where is one finding's place, for reasons.
type where struct{ rule, path string }

func (g *Guard) judge(ctx context.Context, what string, doc []byte, act Action) (pluginproto.HookAnswer, error) {
	if len(doc) == 0 {
		return pluginproto.Pass(), nil
	}
	if len(doc) > g.set.MaxBytes {
		return pluginproto.HookAnswer{}, fmt.Errorf("the %s are %d bytes, over %s (%d): not scanned", what, len(doc), EnvMaxBytes, g.set.MaxBytes)
	}
	var (
		found []where
		edits []jsonscan.Edit
		frag  strings.Builder
	)
	err := jsonscan.Walk(doc, false, func(s *jsonscan.String) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.BinaryContent() {
			return nil
		}
		text, from := s.Value, 0
		if s.Key != "" { // "KEY": "VALUE", as gitleaks sees a JSON member in a file
			frag.Reset()
			frag.WriteString(`"`)
			frag.WriteString(s.Key)
			frag.WriteString(`": "`)
			from = frag.Len()
			frag.WriteString(s.Value)
			frag.WriteString(`"`)
			text = frag.String()
		}
		fs := g.rules.Scan(text, from)
		if len(fs) == 0 {
			return nil
		}
		path := s.Path()
		for _, f := range fs {
			found = append(found, where{f.Rule, path})
		}
		if act == Redact {
			for i := range fs { // spans within the value
				fs[i].Start -= from
				fs[i].End = min(fs[i].End-from, len(s.Value))
			}
			edits = append(edits, jsonscan.Edit{Start: s.Start, End: s.End, Value: redact(s.Value, fs)})
		}
		return nil
	})
	if err != nil {
		return pluginproto.HookAnswer{}, fmt.Errorf("scanning the %s: %w", what, err)
	}
	if len(found) == 0 {
		return pluginproto.Pass(), nil
	}
	if act == Refuse {
		return pluginproto.Refuse(fmt.Sprintf("the %s hold %s", what, describe(found))), nil
	}
	return pluginproto.Rewrite(jsonscan.Apply(doc, edits), "redacted "+describe(found)), nil
}

// redact replaces every finding's span of text (spans may overlap) with
// [redacted: RULE].
func redact(text string, fs []Finding) string {
	slices.SortFunc(fs, func(a, b Finding) int { return cmp.Or(a.Start-b.Start, b.End-a.End) })
	var b strings.Builder
	at := 0
	for _, f := range fs {
		if f.End <= at {
			continue // inside a span already redacted
		}
		b.WriteString(text[at:max(at, f.Start)])
		b.WriteString("[redacted: " + f.Rule + "]")
		at = f.End
	}
	b.WriteString(text[at:])
	return b.String()
}

// describe names what was found and where, never the secret itself:
// "a credential (gitleaks rule github-pat at $.token)", up to three.
func describe(found []where) string {
	var parts []string
	for i, w := range found {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(found)-3))
			break
		}
		parts = append(parts, w.rule+" at "+w.path)
	}
	noun := "a credential"
	if len(found) > 1 {
		noun = strconv.Itoa(len(found)) + " credentials"
	}
	return noun + " (gitleaks rules: " + strings.Join(parts, ", ") + ")"
}
