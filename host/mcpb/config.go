package mcpb

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Values are the user_config values given for a bundle, by key: one
// string each, several for a "multiple" one. Numbers and booleans are
// their text ("42", "true"), as mcpb substitutes them.
type Values map[string][]string

// Value converts a JSON value (as a declaration's user_config member
// holds it: string, number, boolean or list of strings) to the strings of
// the key of m's user_config, checked against its type, min, max and
// multiple. The key must be one the manifest declares.
func (m *Manifest) Value(key string, v any) ([]string, error) {
	c, ok := m.UserConfig[key]
	if !ok {
		return nil, fmt.Errorf("user_config: %q is not a value the bundle asks for (it asks for: %s)", key, strings.Join(slices.Sorted(maps.Keys(m.UserConfig)), ", "))
	}
	out, err := c.values(key, v)
	if err != nil {
		return nil, fmt.Errorf("user_config.%s: %w", key, err)
	}
	return out, nil
}

// values checks v against c and returns its strings.
func (c *UserConfig) values(key string, v any) ([]string, error) {
	var items []any
	switch v := v.(type) {
	case []any:
		items = v
	case []string:
		for _, s := range v {
			items = append(items, s)
		}
	default:
		items = []any{v}
	}
	if len(items) != 1 && !c.Multiple {
		return nil, fmt.Errorf("%d values given, and it takes one (it is not \"multiple\")", len(items))
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		s, err := c.value(it)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// value checks one item against c's type and returns its text.
func (c *UserConfig) value(v any) (string, error) {
	switch c.Type {
	case ConfigNumber:
		var f float64
		switch v := v.(type) {
		case float64:
			f = v
		case string:
			var err error
			if f, err = strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
				return "", fmt.Errorf("%q is not a number", v)
			}
		default:
			return "", fmt.Errorf("%v is not a number", v)
		}
		if c.Min != nil && f < *c.Min {
			return "", fmt.Errorf("%v is below its min %v", f, *c.Min)
		}
		if c.Max != nil && f > *c.Max {
			return "", fmt.Errorf("%v is above its max %v", f, *c.Max)
		}
		return strconv.FormatFloat(f, 'f', -1, 64), nil
	case ConfigBoolean:
		switch v := v.(type) {
		case bool:
			return strconv.FormatBool(v), nil
		case string:
			if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
				return strconv.FormatBool(b), nil
			}
		}
		return "", fmt.Errorf("%v is not true or false", v)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%v is not a string", v)
	}
	return s, nil
}

// Paths returns the directories and the files among vals, each cleaned:
// what the server must be granted (directories read and write, files
// read). A relative one is an error: a grant is an absolute path.
func (m *Manifest) Paths(vals Values) (dirs, files []string, err error) {
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		c := m.UserConfig[k]
		if c == nil || (c.Type != ConfigDirectory && c.Type != ConfigFile) {
			continue
		}
		for _, p := range vals[k] {
			if !filepath.IsAbs(p) {
				return nil, nil, fmt.Errorf("user_config.%s: %q is not an absolute path", k, p)
			}
			if c.Type == ConfigDirectory {
				dirs = append(dirs, filepath.Clean(p))
			} else {
				files = append(files, filepath.Clean(p))
			}
		}
	}
	return dirs, files, nil
}

// MissingError is Launch's error when a required value was given by
// nobody and has no default.
type MissingError struct{ Keys []string }

func (e *MissingError) Error() string {
	return fmt.Sprintf("the bundle needs user_config %s, which has no default: give it with `plughost install BUNDLE.mcpb` "+
		"(it asks, or --set KEY=VALUE, --secret-file KEY=FILE for a sensitive one) or in a declaration's \"user_config\" member",
		strings.Join(e.Keys, ", "))
}

// Dirs are where a bundle's system directory variables point in the
// sandbox. plughost gives a server no user directory but those granted:
// ${HOME} is the server's own data directory (declared's ${HOME}), and
// ${DESKTOP}, ${DOCUMENTS} and ${DOWNLOADS} are directories inside it.
var Dirs = map[string]string{
	"HOME":      "${HOME}",
	"DESKTOP":   "${HOME}/Desktop",
	"DOCUMENTS": "${HOME}/Documents",
	"DOWNLOADS": "${HOME}/Downloads",
}

// Launch is a bundle's server ready to start.
type Launch struct {
	Command string
	Args    []string
	Env     map[string]string
}

// variable is one ${...} reference.
var variable = regexp.MustCompile(`\$\{([^}]+)\}`)

// Launch returns how to start the bundle unpacked in dir with vals (the
// values given; defaults fill the rest), as Claude Desktop does: the
// platform's override of mcp_config (platform is Node's name: linux,
// darwin), then ${__dirname} (dir), ${user_config.KEY}, ${HOME},
// ${DESKTOP}, ${DOCUMENTS}, ${DOWNLOADS} (see Dirs), ${pathSeparator}
// and ${/} replaced in command, args and env. An argument that is
// exactly ${user_config.KEY} of a "multiple" value becomes one argument
// per value; elsewhere a multiple value is an error. Unknown variables
// are left as they are, as mcpb leaves them.
func (m *Manifest) Launch(dir, platform string, vals Values) (*Launch, error) {
	merged := Values{}
	var missing []string
	for _, k := range slices.Sorted(maps.Keys(m.UserConfig)) {
		c := m.UserConfig[k]
		if v, ok := vals[k]; ok && !(len(v) == 0 || len(v) == 1 && v[0] == "") {
			merged[k] = v
			continue
		}
		if c.Default != nil {
			d, err := c.values(k, c.Default)
			if err != nil {
				return nil, err
			}
			for i := range d {
				d[i] = expandDirs(d[i])
			}
			merged[k] = d
			continue
		}
		if c.Required {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, &MissingError{Keys: missing}
	}
	cfg := m.Server.MCPConfig
	if o, ok := cfg.PlatformOverrides[platform]; ok {
		cfg.Command = cmp.Or(o.Command, cfg.Command)
		if o.Args != nil {
			cfg.Args = o.Args
		}
		if o.Env != nil {
			cfg.Env = o.Env
		}
	}
	vars := map[string]string{"__dirname": dir, "pathSeparator": "/", "/": "/"}
	maps.Copy(vars, Dirs)
	one := func(s string) (string, error) {
		var err error
		out := variable.ReplaceAllStringFunc(s, func(ref string) string {
			name := ref[2 : len(ref)-1]
			if v, ok := vars[name]; ok {
				return v
			}
			if k, ok := strings.CutPrefix(name, "user_config."); ok {
				if v, ok := merged[k]; ok {
					if len(v) != 1 {
						err = errors.Join(err, fmt.Errorf("%s: user_config.%s has %d values: a multiple value must be an argument of its own", s, k, len(v)))
						return ref
					}
					return v[0]
				}
			}
			return ref
		})
		return out, err
	}
	l := &Launch{Env: map[string]string{}}
	var err error
	if l.Command, err = one(cfg.Command); err != nil {
		return nil, err
	}
	for _, a := range cfg.Args {
		if m := variable.FindStringSubmatch(a); m != nil && m[0] == a {
			if k, ok := strings.CutPrefix(m[1], "user_config."); ok {
				if v, ok := merged[k]; ok {
					l.Args = append(l.Args, v...)
					continue
				}
			}
		}
		s, err := one(a)
		if err != nil {
			return nil, err
		}
		l.Args = append(l.Args, s)
	}
	for k, v := range cfg.Env {
		if l.Env[k], err = one(v); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// expandDirs replaces the system directory variables of a default value
// (mcpb's defaults say "${HOME}/Documents").
func expandDirs(s string) string {
	return variable.ReplaceAllStringFunc(s, func(ref string) string {
		if v, ok := Dirs[ref[2:len(ref)-1]]; ok {
			return v
		}
		return ref
	})
}
