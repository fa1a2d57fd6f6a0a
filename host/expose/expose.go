// Package expose decides which of a plugin's tools, prompts and resources
// reach clients: the allow and deny lists an operator writes per plugin,
//
//	plugins {
//	  plugin "github" {
//	    tools {
//	      allow = ["search_*", "get_*"]
//	      deny  = ["get_secret"]
//	    }
//	    prompts   { deny = ["*"] }
//	    resources { allow = ["repo://docs/*"] }
//	  }
//	}
//
// so that the model sees only what it should. A name (a resource's URI, a
// template's URI template) is exposed when the allow list is empty or one
// of its patterns matches, and none of the deny list's does. Patterns
// match the whole name: "*" stands for any run of characters, "/"
// included, "?" for one; nothing else is special. Names are the plugin's
// own, before the host prefixes them with the plugin's name.
//
// An item that is not exposed is neither listed nor callable: the host
// never publishes it, so a call of it is an unknown tool (-32602), a read
// of it an unknown resource.
package expose

import (
	"fmt"
	"regexp"
	"strings"
)

// Rules are one plugin's lists. The zero value exposes everything.
type Rules struct {
	Tools, Prompts, Resources List
}

// Empty reports whether r exposes everything.
func (r *Rules) Empty() bool {
	return r == nil || r.Tools.empty() && r.Prompts.empty() && r.Resources.empty()
}

// List is the allow and deny patterns of one kind of item.
type List struct {
	allow, deny []*regexp.Regexp
	// Allow and Deny are the patterns as written.
	Allow, Deny []string
}

// Compile returns the list of allow and deny patterns; an empty pattern
// is an error.
func Compile(allow, deny []string) (List, error) {
	l := List{Allow: allow, Deny: deny}
	var err error
	if l.allow, err = compile(allow); err != nil {
		return List{}, err
	}
	if l.deny, err = compile(deny); err != nil {
		return List{}, err
	}
	return l, nil
}

func compile(patterns []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(patterns))
	for _, p := range patterns {
		if p == "" {
			return nil, fmt.Errorf("a pattern is empty (use \"*\" for every name)")
		}
		var b strings.Builder
		b.WriteString(`^(?s:`)
		for _, r := range p {
			switch r {
			case '*':
				b.WriteString(`.*`)
			case '?':
				b.WriteString(`.`)
			default:
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
		}
		b.WriteString(`)$`)
		out = append(out, regexp.MustCompile(b.String())) // only quoted text, .* and .
	}
	return out, nil
}

func (l *List) empty() bool { return len(l.allow) == 0 && len(l.deny) == 0 }

// Allows reports whether name is exposed.
func (l *List) Allows(name string) bool {
	if len(l.allow) > 0 && !matchesAny(l.allow, name) {
		return false
	}
	return !matchesAny(l.deny, name)
}

func matchesAny(res []*regexp.Regexp, name string) bool {
	for _, re := range res {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}
