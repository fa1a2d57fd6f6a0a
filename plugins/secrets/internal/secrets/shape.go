package secrets

import (
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/plughost/plughost/plugins/internal/prefilter"
)

// Go's regular expressions run in linear time but slowly on rules of the
// shape gitleaks generates for "NAME = VALUE" credentials, e.g.
// generic-api-key: (?i)[\w.-]{0,50}?(?:access|auth|…|token)(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|>|:|…|,)…
// (about 200 µs per KB of text once one of its keywords, "key", "api",
// "access" or "token", occurs). A gate makes such a rule run only where
// it can match: its regular expression requires one of its keywords,
// then, within a bounded distance, one of a few bytes (the assignment
// operators). The gate is derived from the rule's parsed expression,
// never written by hand, and only when that derivation proves it: a rule
// without one always runs once a keyword occurs, as in gitleaks.

// gate is a necessary condition for a rule's match, read off its
// expression: after a keyword occurrence come at most suffix more runes
// (the rest of the expression's word holding the keyword), then runes
// that the steps (bounded repeats of character classes) accept, then a
// byte of next.
type gate struct {
	suffix map[string]int // per keyword: the most runes of its word after it
	steps  []step
	next   [256]bool
}

// step is one repeat of a character class (ranges as in syntax.Regexp.Rune,
// already case-folded by the parser) between min and max times (max < 0:
// unbounded).
type step struct {
	ranges   []rune
	min, max int
}

// maxGateRunes bounds a gate's walk from one keyword: past it the gate
// opens (lets the rule run), staying a necessary condition.
const maxGateRunes = 512

// deriveGate returns the rule's gate, or nil when none is proven.
func deriveGate(expr string, keywords []string) *gate {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op != syntax.OpConcat {
		return nil
	}
	subs := re.Sub
	for k, sub := range subs {
		set, ok := prefilter.Literals(sub, true)
		if !ok || !allContainKeyword(set, keywords) {
			continue
		}
		g := &gate{suffix: suffixes(set, keywords)}
		for _, s := range subs[k+1:] {
			if first, ok := firstBytes(s); ok {
				for _, b := range first {
					g.next[b] = true
				}
				return g
			}
			st, ok := classRepeat(s)
			if !ok {
				return nil
			}
			g.steps = append(g.steps, st)
		}
		return nil
	}
	return nil
}

// classRepeat reads a node that repeats one character class.
func classRepeat(re *syntax.Regexp) (step, bool) {
	var st step
	switch re.Op {
	case syntax.OpRepeat:
		st.min, st.max = re.Min, re.Max
	case syntax.OpStar:
		st.min, st.max = 0, -1
	case syntax.OpPlus:
		st.min, st.max = 1, -1
	case syntax.OpQuest:
		st.min, st.max = 0, 1
	default:
		return st, false
	}
	sub := re.Sub[0]
	for sub.Op == syntax.OpCapture {
		sub = sub.Sub[0]
	}
	if sub.Op != syntax.OpCharClass {
		return st, false
	}
	st.ranges = sub.Rune
	return st, true
}

func (st step) accepts(r rune) bool {
	for i := 0; i+1 < len(st.ranges); i += 2 {
		if st.ranges[i] <= r && r <= st.ranges[i+1] {
			return true
		}
	}
	return false
}

// hit is one keyword occurrence: its end (exclusive) and the keyword.
type hit struct {
	end     int
	keyword string
}

// open reports whether the gate lets the rule run on text, given its
// keywords' occurrences.
func (g *gate) open(text string, hits []hit) bool {
	for _, h := range hits {
		if suffix, ok := g.suffix[h.keyword]; ok && g.openAt(text, h.end, suffix) {
			return true
		}
	}
	return false
}

// state is where a walk is: phase -1 the keyword's word, else a step;
// count the runes taken in it.
type state struct{ phase, count int }

func (g *gate) openAt(text string, e, suffix int) bool {
	var bufA, bufB [16]state
	cur, next := append(bufA[:0], state{-1, 0}), bufB[:0]
	for i, n := e, 0; ; n++ {
		// close over leaving a phase
		for j := 0; j < len(cur); j++ {
			s := cur[j]
			if s.phase == len(g.steps) {
				continue
			}
			if s.phase < 0 || s.count >= g.steps[s.phase].min {
				cur = addState(cur, state{s.phase + 1, 0})
			}
		}
		if i >= len(text) {
			return false
		}
		for _, s := range cur {
			if s.phase == len(g.steps) && g.next[text[i]] {
				return true
			}
		}
		if n == maxGateRunes {
			return true
		}
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		next = next[:0]
		for _, s := range cur {
			switch {
			case s.phase < 0:
				if s.count < suffix {
					next = addState(next, state{-1, s.count + 1})
				}
			case s.phase < len(g.steps):
				st := &g.steps[s.phase]
				if (st.max < 0 || s.count < st.max) && st.accepts(r) {
					next = addState(next, state{s.phase, s.count + 1})
				}
			}
		}
		if len(next) == 0 {
			return false
		}
		cur, next = next, cur
		i += size
	}
}

func addState(set []state, s state) []state {
	for _, x := range set {
		if x == s {
			return set
		}
	}
	return append(set, s)
}

// suffixes are, for each keyword found in the words of set, the most
// runes that follow it in one of them; a keyword in none has no entry
// (its occurrences cannot be the ones a match holds).
func suffixes(set, keywords []string) map[string]int {
	out := map[string]int{}
	for _, k := range keywords {
		k = strings.ToLower(k)
		for _, w := range set {
			for i := 0; ; {
				j := strings.Index(w[i:], k)
				if j < 0 {
					break
				}
				after := utf8.RuneCountInString(w[i+j+len(k):])
				if n, ok := out[k]; !ok || after > n {
					out[k] = after
				}
				i += j + 1
			}
		}
	}
	return out
}

func allContainKeyword(set, keywords []string) bool {
	for _, s := range set {
		found := false
		for _, k := range keywords {
			if strings.Contains(s, strings.ToLower(k)) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return len(set) > 0
}

// firstBytes are the bytes every match of re starts with, when they are
// a few ASCII bytes (and re never matches the empty string).
func firstBytes(re *syntax.Regexp) ([]byte, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		r := re.Rune[0]
		if r >= utf8.RuneSelf {
			return nil, false
		}
		if re.Flags&syntax.FoldCase != 0 && unicode.IsLetter(r) {
			return nil, false // folds to runes beyond ASCII (k to K, the Kelvin sign)
		}
		return []byte{byte(r)}, true
	case syntax.OpCharClass:
		var out []byte
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i+1] >= utf8.RuneSelf || re.Rune[i+1]-re.Rune[i] > 16 {
				return nil, false
			}
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				out = append(out, byte(r))
			}
		}
		return out, len(out) > 0 && len(out) <= 16
	case syntax.OpCapture, syntax.OpPlus:
		return firstBytes(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min < 1 {
			return nil, false
		}
		return firstBytes(re.Sub[0])
	case syntax.OpConcat:
		return firstBytes(re.Sub[0])
	case syntax.OpAlternate:
		var out []byte
		for _, s := range re.Sub {
			b, ok := firstBytes(s)
			if !ok {
				return nil, false
			}
			out = append(out, b...)
		}
		return out, true
	}
	return nil, false
}
