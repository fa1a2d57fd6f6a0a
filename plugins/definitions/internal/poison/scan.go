package poison

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/plughost/plughost/plugins/internal/jsonscan"
)

// A Finding is one sign of poisoning.
type Finding struct {
	Check Check
	// Where is the string's JSON path in the definition (e.g.
	// $.inputSchema.properties.sidenote.description); What the text that
	// matched, quoted and cut short, or what was found (an invisible
	// character's name).
	Where, What string
}

func (f Finding) String() string { return fmt.Sprintf("%s at %s: %s", f.Check, f.Where, f.What) }

// Scanner scans definitions; its zero value runs every check.
type Scanner struct {
	// Skip are checks not run.
	Skip []Check
}

// Scan returns the signs of poisoning in def, a JSON definition: at most
// one finding per check and string, in document order.
func (sc Scanner) Scan(def []byte) ([]Finding, error) {
	var out []Finding
	err := jsonscan.Walk(def, true, func(s *jsonscan.String) error {
		found := sc.scanText(s.Value)
		for _, f := range found {
			f.Where = s.Path()
			if s.IsKey {
				f.Where += " (a member name)"
			}
			out = append(out, f)
		}
		return nil
	})
	return out, err
}

func (sc Scanner) on(c Check) bool { return !slices.Contains(sc.Skip, c) }

// scanText runs the checks on one string.
func (sc Scanner) scanText(s string) []Finding {
	var out []Finding
	if sc.on(Invisible) {
		if what, ok := invisible(s); ok {
			out = append(out, Finding{Check: Invisible, What: what})
		}
	}
	if sc.on(ANSIEscape) && ansi(s) {
		out = append(out, Finding{Check: ANSIEscape, What: "an escape character (ESC or CSI): terminal codes"})
	}
	if len(s) < 4 {
		return out
	}
	folded := fold(s)
	for _, h := range patternSet.Match(folded) {
		c := patterns[h.Expr].check
		if !sc.on(c) {
			continue
		}
		if c == SensitiveFile && !sensitiveVerb.MatchString(sentence(folded, h.Start, h.End)) {
			continue
		}
		out = append(out, Finding{Check: c, What: excerpt(folded[h.Start:h.End])})
	}
	if sc.on(EncodedPayload) {
		if what, ok := encodedText(s); ok {
			out = append(out, Finding{Check: EncodedPayload, What: what})
		}
	}
	return out
}

// sentence is the sentence of s holding [start, end).
func sentence(s string, start, end int) string {
	from := strings.LastIndexAny(s[:start], ".!?\n") + 1
	to := strings.IndexAny(s[end:], "!?\n")
	if dot := strings.Index(s[end:], ". "); dot >= 0 && (to < 0 || dot < to) {
		to = dot
	}
	if to < 0 {
		return s[from:]
	}
	return s[from : end+to]
}

func excerpt(s string) string {
	const most = 60
	if len(s) > most {
		cut := most
		for cut > 0 && !utf8RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return fmt.Sprintf("%q", s)
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// minEncoded is the shortest run of base64 or hex characters checked.
const minEncoded = 40

// encodedText finds a long base64 or hex run that decodes to readable
// text: a message hidden from the reader, not a hash, key or image.
func encodedText(s string) (string, bool) {
	for i := 0; i < len(s); {
		if !base64Char(s[i]) {
			i++
			continue
		}
		j := i
		hexOnly := true
		for j < len(s) && base64Char(s[j]) {
			hexOnly = hexOnly && isHex(s[j])
			j++
		}
		run := s[i:j]
		for j < len(s) && s[j] == '=' {
			j++
		}
		i = j
		if len(run) < minEncoded {
			continue
		}
		if hexOnly {
			if b, err := hex.DecodeString(run[:len(run)&^1]); err == nil && readable(b) {
				return fmt.Sprintf("%d hex digits that decode to text %s", len(run), excerpt(string(b))), true
			}
			continue
		}
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(run[:len(run)/4*4]); err == nil && readable(b) {
				return fmt.Sprintf("%d base64 characters that decode to text %s", len(run), excerpt(string(b))), true
			}
		}
	}
	return "", false
}

func base64Char(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '_' || c == '-'
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// readable reports text: printable ASCII (and whitespace) throughout,
// with words.
func readable(b []byte) bool {
	if len(b) < 24 {
		return false
	}
	spaces := 0
	for _, c := range b {
		switch {
		case c == ' ':
			spaces++
		case c == '\n' || c == '\t' || c == '\r':
		case c < 0x20 || c > 0x7E:
			return false
		}
	}
	return spaces >= 3
}
