// Package prefilter runs a set of regular expressions over many texts,
// each expression only on texts that hold one of the literal words every
// match of it must contain. Go's regular expressions run in linear time
// but slowly on long alternations with word boundaries and counted
// repeats (a few hundred ns per byte); an Aho-Corasick pass finds the
// words of all of them at once (a few ns per byte), so a text that holds
// none of an expression's words costs that expression nothing.
//
// The words are read off each expression's syntax, never listed by hand:
// an expression that is an alternation is split into its branches, and
// each concatenated part of a branch that can only match one of a few
// literal strings (e.g. (ignore|disregard) or " will crash") is a set of
// words one of which must occur; a branch runs only on a text holding a
// word of each of its sets. A branch with no such part always runs.
package prefilter

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
)

// Set is a compiled set of expressions; safe for concurrent use.
type Set struct {
	branches []branch
	wordless []branch // the branches that need no word
	trie     *ahocorasick.Trie
	nwords   int
}

type branch struct {
	expr int // the index of the expression it is a branch of
	re   *regexp.Regexp
	// needs are sets of word indexes: the branch can match only a text
	// holding a word of each set.
	needs [][]int
}

// maxWords is the most literal strings a part may stand for; minWord the
// shortest a word may be (shorter ones would not filter).
const (
	maxWords = 64
	minWord  = 2
)

// maxSetWords bounds a set a branch needs beside its best one: every word
// enlarges the Aho-Corasick automaton, which every text walks.
const maxSetWords = 12

// Compile compiles exprs (Go syntax, matched against text as is: fold
// case beforehand when the words should match any case).
func Compile(exprs []string) (*Set, error) {
	s := &Set{}
	var words []string
	index := map[string]int{}
	for i, expr := range exprs {
		re, err := syntax.Parse(expr, syntax.Perl)
		if err != nil {
			return nil, fmt.Errorf("prefilter: expression %d: %w", i, err)
		}
		alts := []*syntax.Regexp{re}
		if re.Op == syntax.OpAlternate {
			alts = re.Sub
		}
		for _, alt := range alts {
			compiled, err := regexp.Compile(alt.String())
			if err != nil {
				return nil, fmt.Errorf("prefilter: expression %d: %w", i, err)
			}
			b := branch{expr: i, re: compiled}
			for _, set := range requiredSets(alt) {
				var ids []int
				for _, w := range set {
					wi, ok := index[w]
					if !ok {
						wi = len(words)
						index[w] = wi
						words = append(words, w)
					}
					ids = append(ids, wi)
				}
				b.needs = append(b.needs, ids)
			}
			s.branches = append(s.branches, b)
			if len(b.needs) == 0 {
				s.wordless = append(s.wordless, b)
			}
		}
	}
	s.trie = ahocorasick.NewTrieBuilder().AddStrings(words).Build()
	s.nwords = len(words)
	return s, nil
}

// Match reports, for each expression that matches text, its index and
// the first match's span (of the first branch, in branch order, that
// matches); in expression order.
func (s *Set) Match(text string) []Hit {
	var small [512]bool
	present := small[:0]
	if s.nwords <= len(small) {
		present = small[:s.nwords]
	} else {
		present = make([]bool, s.nwords)
	}
	found := false
	s.trie.Walk([]byte(text), func(_, _, pattern int64) bool {
		present[pattern], found = true, true
		return true
	})
	branches := s.branches
	if !found {
		branches = s.wordless // no word: only the branches that need none can match
	}
	var out []Hit
	for i := range branches {
		b := &branches[i]
		if n := len(out); n > 0 && out[n-1].Expr == b.expr {
			continue // the expression already matched
		}
		if !b.possible(present) {
			continue
		}
		if loc := b.re.FindStringIndex(text); loc != nil {
			out = append(out, Hit{Expr: b.expr, Start: loc[0], End: loc[1]})
		}
	}
	return out
}

// possible reports whether the text holds a word of each set the branch
// needs.
func (b *branch) possible(present []bool) bool {
	for _, set := range b.needs {
		if !slices.ContainsFunc(set, func(w int) bool { return present[w] }) {
			return false
		}
	}
	return true
}

// Hit is one expression's match.
type Hit struct{ Expr, Start, End int }

// requiredSets are the sets of words a match of re must hold one of each:
// one per concatenated part that has words, or one for re itself.
func requiredSets(re *syntax.Regexp) [][]string {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op != syntax.OpConcat {
		if set := requiredWords(re); set != nil {
			return [][]string{set}
		}
		return nil
	}
	var out [][]string
	for _, sub := range re.Sub {
		if set := requiredWords(sub); set != nil && len(set) <= maxSetWords {
			out = append(out, set)
		}
	}
	if len(out) == 0 { // only large sets: the best one
		if set := requiredWords(re); set != nil {
			out = append(out, set)
		}
	}
	return out
}

// requiredWords are literal strings one of which every match of re
// contains, or nil when none is found.
func requiredWords(re *syntax.Regexp) []string {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if set, ok := Literals(re, false); ok && usable(set) {
		return set
	}
	switch re.Op {
	case syntax.OpConcat:
		var best []string
		for _, sub := range re.Sub {
			set := requiredWords(sub)
			if set != nil && (best == nil || shortest(set) > shortest(best)) {
				best = set
			}
		}
		return best
	case syntax.OpPlus:
		return requiredWords(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredWords(re.Sub[0])
		}
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			set := requiredWords(sub)
			if set == nil {
				return nil
			}
			all = append(all, set...)
		}
		return all
	}
	return nil
}

func usable(set []string) bool { return len(set) > 0 && shortest(set) >= minWord }

func shortest(set []string) int {
	n := -1
	for _, s := range set {
		if n < 0 || len(s) < n {
			n = len(s)
		}
	}
	return n
}

// Literals is the finite set of strings re matches, when it is small (at
// most 64 strings, a character class at most 4 runes): re's own strings,
// case-sensitive (a case-folded literal has no small set), or, with
// fold, lowercased, for matching that ignores case (the secrets plugin's
// keywords). False when the set is larger, or infinite.
func Literals(re *syntax.Regexp, fold bool) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		switch {
		case fold:
			return []string{strings.ToLower(string(re.Rune))}, true
		case re.Flags&syntax.FoldCase != 0:
			return nil, false
		}
		return []string{string(re.Rune)}, true
	case syntax.OpEmptyMatch:
		return []string{""}, true
	case syntax.OpCapture:
		return Literals(re.Sub[0], fold)
	case syntax.OpQuest:
		set, ok := Literals(re.Sub[0], fold)
		return append(set, ""), ok
	case syntax.OpCharClass:
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i+1]-re.Rune[i] > 4 {
				return nil, false
			}
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				s := string(r)
				if fold {
					s = strings.ToLower(s)
				}
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
		}
		return out, len(out) <= 4
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			set, ok := Literals(sub, fold)
			if !ok || len(out)+len(set) > maxWords {
				return nil, false
			}
			out = append(out, set...)
		}
		return out, true
	case syntax.OpConcat:
		out := []string{""}
		for _, sub := range re.Sub {
			set, ok := Literals(sub, fold)
			if !ok || len(out)*len(set) > maxWords {
				return nil, false
			}
			var next []string
			for _, a := range out {
				for _, b := range set {
					next = append(next, a+b)
				}
			}
			out = next
		}
		return out, true
	}
	return nil, false
}
