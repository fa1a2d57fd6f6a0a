// Package secrets is the judging logic of the bundled secrets plugin: it
// finds credentials in a call's arguments and in a tool's, resource's or
// prompt's result with gitleaks' rule set (package gitleaks, embedded at a
// pinned release) and refuses the request or redacts what it found.
//
// The rules are gitleaks' own, read from its TOML and applied the way
// gitleaks applies them to a file's text: a rule runs only on text that
// holds one of its keywords (an Aho-Corasick pass over the lowercased
// text, the prefilter gitleaks uses, with the same library), its regular
// expression finds the match, the secret is the match's first non-empty
// group (or secretGroup), a rule's entropy threshold drops low-entropy
// secrets, and gitleaks' global and per-rule allowlists (regexes on the
// secret, the match or the line; stopwords) drop known non-secrets.
// Path-only rules (a file name such as *.p12) and rules bound to a file
// path (e.g. *.tf, *.php) never apply: a call has no file name.
package secrets

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
	"github.com/BurntSushi/toml"

	"github.com/plughost/plughost/plugins/secrets/internal/gitleaks"
)

// ruleFile is the part of gitleaks' configuration format this package
// reads; Load refuses a file with keys beyond it.
type ruleFile struct {
	Title      string
	MinVersion string `toml:"minVersion"`
	Allowlist  *allowlistFile
	Rules      []struct {
		ID          string
		Description string
		Regex       string
		Path        string
		SecretGroup int `toml:"secretGroup"`
		Entropy     float64
		Keywords    []string
		Tags        []string
		Allowlists  []allowlistFile
	}
}

type allowlistFile struct {
	Description string
	Condition   string
	Paths       []string
	Regexes     []string
	RegexTarget string `toml:"regexTarget"`
	StopWords   []string
}

// A rule is one gitleaks rule, compiled.
type rule struct {
	id, description string
	re              *regexp.Regexp
	secretGroup     int
	entropy         float64
	allowlists      []allowlist
	gate            *gate // nil: runs whenever a keyword occurs
}

// An allowlist drops findings that are known not to be secrets.
type allowlist struct {
	and       bool   // condition AND: every check must hold (a paths check never does here)
	hasPaths  bool   // the allowlist has paths, which a call never matches
	target    string // what regexes see: "secret" (default), "match" or "line"
	regexes   []*regexp.Regexp
	stopWords []string // lowercased
}

// Rules is a compiled rule set. It is safe for concurrent use.
type Rules struct {
	rules    []rule
	global   allowlist
	keywords *ahocorasick.Trie
	// byKeyword[i] are the rules whose keywords include the trie's
	// pattern i.
	byKeyword   [][]int
	keywordText []string // the trie's patterns
	skipped     []string // path-bound rules, never applied
	noGates     bool     // run every rule whose keyword occurs (tests compare)
}

// Default is gitleaks' default rule set (gitleaks.Version) less the rules
// named in disabled.
func Default(disabled ...string) (*Rules, error) {
	return Parse(gitleaks.Rules, disabled...)
}

// Parse compiles a rule set in gitleaks' TOML format, leaving out the
// rules whose ids are in disabled. It refuses keys it does not know, a
// rule without keywords (it would run on every text), a regular
// expression Go cannot compile, and an unknown disabled id.
func Parse(text []byte, disabled ...string) (*Rules, error) {
	var f ruleFile
	md, err := toml.NewDecoder(bytes.NewReader(text)).Decode(&f)
	if err != nil {
		return nil, fmt.Errorf("secrets: rule set: %w", err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, fmt.Errorf("secrets: rule set: keys this scanner does not know (a newer gitleaks format?): %v", und)
	}
	rs := &Rules{}
	if f.Allowlist != nil {
		if rs.global, err = compileAllowlist(*f.Allowlist); err != nil {
			return nil, fmt.Errorf("secrets: rule set: global allowlist: %w", err)
		}
	}
	known := map[string]bool{}
	var keywords []string
	kwIndex := map[string]int{}
	for _, fr := range f.Rules {
		known[fr.ID] = true
		if slices.Contains(disabled, fr.ID) {
			continue
		}
		if fr.Path != "" || fr.Regex == "" {
			rs.skipped = append(rs.skipped, fr.ID)
			continue
		}
		if len(fr.Keywords) == 0 {
			return nil, fmt.Errorf("secrets: rule set: rule %q has no keywords", fr.ID)
		}
		re, err := regexp.Compile(fr.Regex)
		if err != nil {
			return nil, fmt.Errorf("secrets: rule set: rule %q: %w", fr.ID, err)
		}
		r := rule{id: fr.ID, description: fr.Description, re: re, secretGroup: fr.SecretGroup, entropy: fr.Entropy,
			gate: deriveGate(fr.Regex, fr.Keywords)}
		for i, a := range fr.Allowlists {
			al, err := compileAllowlist(a)
			if err != nil {
				return nil, fmt.Errorf("secrets: rule set: rule %q: allowlist %d: %w", fr.ID, i+1, err)
			}
			r.allowlists = append(r.allowlists, al)
		}
		ri := len(rs.rules)
		rs.rules = append(rs.rules, r)
		for _, k := range fr.Keywords {
			k = strings.ToLower(k)
			ki, ok := kwIndex[k]
			if !ok {
				ki = len(keywords)
				kwIndex[k] = ki
				keywords = append(keywords, k)
				rs.byKeyword = append(rs.byKeyword, nil)
			}
			if !slices.Contains(rs.byKeyword[ki], ri) {
				rs.byKeyword[ki] = append(rs.byKeyword[ki], ri)
			}
		}
	}
	for _, id := range disabled {
		if !known[id] {
			return nil, fmt.Errorf("secrets: no rule %q to disable in the rule set", id)
		}
	}
	rs.keywords = ahocorasick.NewTrieBuilder().AddStrings(keywords).Build()
	rs.keywordText = keywords
	return rs, nil
}

func compileAllowlist(a allowlistFile) (allowlist, error) {
	al := allowlist{hasPaths: len(a.Paths) > 0, target: cmp.Or(a.RegexTarget, "secret")}
	switch strings.ToUpper(a.Condition) {
	case "", "OR", "||":
	case "AND", "&&":
		al.and = true
	default:
		return al, fmt.Errorf("condition %q (want AND or OR)", a.Condition)
	}
	switch al.target {
	case "secret", "match", "line":
	default:
		return al, fmt.Errorf("regexTarget %q (want secret, match or line)", a.RegexTarget)
	}
	for _, expr := range a.Regexes {
		re, err := regexp.Compile(expr)
		if err != nil {
			return al, err
		}
		al.regexes = append(al.regexes, re)
	}
	for _, w := range a.StopWords {
		al.stopWords = append(al.stopWords, strings.ToLower(w))
	}
	return al, nil
}

// Len is how many rules apply; Skipped the ids of those left out because
// they are bound to a file path; Gated the ids of those with a gate.
func (rs *Rules) Len() int          { return len(rs.rules) }
func (rs *Rules) Skipped() []string { return rs.skipped }
func (rs *Rules) Gated() []string {
	var out []string
	for _, r := range rs.rules {
		if r.gate != nil {
			out = append(out, r.id)
		}
	}
	return out
}

// allows reports whether the allowlist drops a finding.
func (a *allowlist) allows(secret, match, line string) bool {
	target := secret
	switch a.target {
	case "match":
		target = match
	case "line":
		target = line
	}
	regexHit := false
	for _, re := range a.regexes {
		if re.MatchString(target) {
			regexHit = true
			break
		}
	}
	stopHit := false
	if len(a.stopWords) > 0 {
		lower := strings.ToLower(secret)
		for _, w := range a.stopWords {
			if strings.Contains(lower, w) {
				stopHit = true
				break
			}
		}
	}
	if !a.and {
		return regexHit || stopHit
	}
	if a.hasPaths { // a call has no path: an AND with paths never holds
		return false
	}
	return (len(a.regexes) == 0 || regexHit) && (len(a.stopWords) == 0 || stopHit) &&
		(len(a.regexes) > 0 || len(a.stopWords) > 0)
}

// shannonEntropy is gitleaks' entropy of a secret: bits per character
// over its characters' frequencies (divided by its length in bytes, as
// gitleaks does).
func shannonEntropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	var other map[rune]int
	for _, r := range s {
		if r < 256 {
			counts[r]++
			continue
		}
		if other == nil {
			other = map[rune]int{}
		}
		other[r]++
	}
	inv := 1.0 / float64(len(s))
	e := 0.0
	add := func(n int) {
		if n > 0 {
			f := float64(n) * inv
			e -= f * math.Log2(f)
		}
	}
	for _, n := range counts {
		add(n)
	}
	for _, n := range other {
		add(n)
	}
	return e
}
