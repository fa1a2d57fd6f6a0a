package toolsearch

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// analyzer turns text into the terms the index stores and a query looks
// up. The same analyzer reads documents and queries, so a word in both
// becomes the same term.
//
// Its switches exist for the ablation in eval_test.go; the index uses
// defaultAnalyzer.
type analyzer struct {
	// split breaks identifiers at case changes and at '_', '-', '.':
	// "get_current_time" and "getCurrentTime" are get, current, time.
	// Off, an identifier is one term ("get_current_time").
	split bool
	// stop drops English stop words (stopWords) and one-letter tokens,
	// which carry no meaning in a query ("I'm" leaves "m").
	stop bool
	// stem reduces English words to their Snowball (Porter2) stem:
	// "files", "filing" and "file" are one term.
	stem bool
	// bigrams indexes runs of Han, Hiragana and Katakana, written without
	// spaces, as overlapping character pairs ("必应搜索" is 必应, 应搜,
	// 搜索), the usual way to search CJK text without a dictionary. Off,
	// a run is one term, which only an identical run matches.
	bigrams bool

	// stems, when not nil, remembers the stem of each word: the tools of
	// one provider repeat most of their words, and stemming is the
	// larger part of indexing them. Set gives each update its own.
	stems map[string]string
}

var defaultAnalyzer = analyzer{split: true, stop: true, stem: true, bigrams: true}

// terms appends the terms of text to dst, in order, repeats kept.
func (a analyzer) terms(dst []string, text string) []string {
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		switch {
		case cjk(r):
			j := i + n
			for j < len(text) {
				r, m := utf8.DecodeRuneInString(text[j:])
				if !cjk(r) {
					break
				}
				j += m
			}
			dst = a.cjkRun(dst, text[i:j])
			i = j
		case a.wordRune(r):
			j := i + n
			for j < len(text) {
				r, m := utf8.DecodeRuneInString(text[j:])
				if !a.wordRune(r) || cjk(r) {
					break
				}
				j += m
			}
			dst = a.word(dst, text[i:j])
			i = j
		default:
			i += n
		}
	}
	return dst
}

// cjk reports whether r belongs to a script written without spaces
// between words.
func cjk(r rune) bool {
	return r >= '\u2e80' && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)
}

// wordRune reports whether r is part of a word. Without splitting, the
// identifier punctuation '_', '-' and '.' is too, so that an identifier
// stays whole (a sentence's final '.' is trimmed in word).
func (a analyzer) wordRune(r rune) bool {
	if unicode.IsLetter(r) || unicode.IsDigit(r) {
		return true
	}
	return !a.split && (r == '_' || r == '-' || r == '.')
}

func (a analyzer) cjkRun(dst []string, run string) []string {
	if !a.bigrams || utf8.RuneCountInString(run) == 1 {
		return append(dst, run)
	}
	for i := 0; i < len(run); {
		_, n := utf8.DecodeRuneInString(run[i:])
		if i+n >= len(run) {
			break
		}
		_, m := utf8.DecodeRuneInString(run[i+n:])
		dst = append(dst, run[i:i+n+m])
		i += n
	}
	return dst
}

// word appends the terms of one run of letters and digits. A run with
// case changes is both an identifier and, often, a brand ("arXiv",
// "LeetCode", "YouTube"): its parts are terms, and so is the whole run, as
// Lucene's word delimiter filter does with preserveOriginal.
func (a analyzer) word(dst []string, w string) []string {
	if !a.split {
		w = strings.Trim(w, "_-.")
		if w == "" {
			return dst
		}
		return a.normal(dst, w)
	}
	start := 0
	prev := rune(-1)
	for i, r := range w {
		if prev >= 0 && camelBoundary(prev, r, w[i+utf8.RuneLen(r):]) {
			dst = a.normal(dst, w[start:i])
			start = i
		}
		prev = r
	}
	if start > 0 {
		dst = a.normal(dst, w)
	}
	return a.normal(dst, w[start:])
}

// camelBoundary reports whether a new part of an identifier starts at r,
// after prev and before rest: "getTime" (lower or digit, then upper) and
// "HTMLParser" (upper, then upper followed by lower) split; digits stay
// with their letters ("base64", "mp3", "36kr").
func camelBoundary(prev, r rune, rest string) bool {
	if !unicode.IsUpper(r) {
		return false
	}
	if unicode.IsLower(prev) || unicode.IsDigit(prev) {
		return true
	}
	if unicode.IsUpper(prev) {
		next, _ := utf8.DecodeRuneInString(rest)
		return unicode.IsLower(next)
	}
	return false
}

// normal lowercases a token, drops it if it is a stop word and stems it.
func (a analyzer) normal(dst []string, tok string) []string {
	tok = strings.ToLower(tok)
	if a.stop && (stopWords[tok] || len(tok) == 1) {
		return dst
	}
	if a.stem && isASCIILetters(tok) {
		if st, ok := a.stems[tok]; ok {
			tok = st
		} else {
			st = english.Stem(tok, true)
			if a.stems != nil {
				a.stems[tok] = st
			}
			tok = st
		}
	}
	return append(dst, tok)
}

func isASCIILetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// stopWords is Lucene's English stop set (EnglishAnalyzer's default): the
// articles, conjunctions, prepositions and forms of "be" that no query
// means anything by. Longer lists (Snowball's, NLTK's) also drop words
// that name what a tool does or when: "all", "now", "before", "after",
// "up", "off", "over", "what" ("whatToEat").
var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "but": true,
	"by": true, "for": true, "if": true, "in": true, "into": true, "is": true, "it": true, "no": true,
	"not": true, "of": true, "on": true, "or": true, "such": true, "that": true, "the": true,
	"their": true, "then": true, "there": true, "these": true, "they": true, "this": true, "to": true,
	"was": true, "will": true, "with": true,
}
