// Package poison is the judging logic of the bundled definitions plugin:
// an offline scanner for poisoned MCP definitions. A tool, prompt,
// resource or template definition is poisoned when text in it speaks to
// the model rather than describing the item: hidden instructions
// (<IMPORTANT> blocks, "ignore previous instructions"), demands to read
// credential or configuration files and pass them on, instructions to
// keep something from the user, instructions about other tools
// (shadowing), and text a person reviewing the definition would not see
// (invisible Unicode, ANSI escapes, encoded payloads). Every string of
// the definition is scanned, member names included: the description, the
// title, and in the input and output schemas every property name,
// description, title, enum value, default and example, at any depth.
//
// The checks are regular expressions and character tests written for
// this package from the published attacks (see testdata/README.md); they
// are meant to catch those attacks and their near variants with few
// false positives on ordinary tools, not to prove a definition safe.
package poison

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/plughost/plughost/plugins/internal/prefilter"
)

// A Check is one kind of poisoning the scanner looks for.
type Check string

// The checks, in the order Scan applies them.
const (
	Invisible        Check = "invisible-characters"   // Unicode tag block, zero-width characters, bidi controls
	ANSIEscape       Check = "ansi-escape"            // ESC or CSI: terminal codes that hide or rewrite text
	HiddenTag        Check = "hidden-instruction-tag" // <IMPORTANT>, <SYSTEM>, [INST] … addressed to the model
	ModelInstruction Check = "instruction-to-model"   // "ignore previous instructions", "before using this tool, read …"
	ConcealFromUser  Check = "conceal-from-user"      // "do not tell the user", "without informing the user"
	SensitiveFile    Check = "credential-file-demand" // read ~/.ssh/id_rsa, .env, mcp.json … and pass it on
	Shadowing        Check = "other-tool-instruction" // instructions about other tools or where their data goes
	EncodedPayload   Check = "encoded-payload"        // long base64 or hex that decodes to text
)

// Checks are every check.
var Checks = []Check{Invisible, ANSIEscape, HiddenTag, ModelInstruction, ConcealFromUser, SensitiveFile, Shadowing, EncodedPayload}

// patterns are the checks made with regular expressions; each matches
// text already folded by fold (lowercase, runs of spaces, underscores
// and hyphens as one space). They run through a prefilter.Set, which
// runs each only on strings holding the words it needs.
var patterns = []struct {
	check Check
	re    *regexp.Regexp
}{
	{HiddenTag, regexp.MustCompile(`<\s*/?\s*(important|system|system prompt|instructions?|hidden|secret|admin|critical|assistant|sys|ai instructions?|model instructions?|note to (the )?(ai|assistant|model|llm))\s*>` +
		`|\[/?inst\]|<\|im start\|>|<\|system\|>|<<sys>>`)},
	{ModelInstruction, regexp.MustCompile(`\b(ignore|disregard|forget|override)( all| any)?( the| your)? (previous|prior|above|earlier|preceding|original|system) (instructions?|prompts?|rules|directions|guidelines)` +
		`|\bbefore (using|calling|invoking|running|executing) (this|the|any) (tool|function)[^.!?]{0,40}\b(read|open|cat|fetch|load|send|include|pass|upload|provide|attach|paste)\b` +
		`|\b(otherwise|or else) (the|this) (tool|function|application|app|system) (will|would|may) (not work|fail|crash|break)` +
		`|\b(the )?(application|app|system|server) will crash\b|\ball data will be lost\b` +
		`|\b(very ){2,}important\b` +
		`|\byou (must|should|need to|have to) (always |first )*(read|send|forward|exfiltrate|upload|leak|include the (contents?|text) of)\b` +
		`|\b(act|behave|respond) as (if you (are|were) )?(the |an? )?(system|administrator|admin|developer|root)\b` +
		`|\bnew (system )?instructions?:|\byour (real|true|actual|new) (task|instructions?|goal) (is|are)\b` +
		`|\b(send|pass|include|provide|put|copy|attach|forward)[^.!?]{0,30}\b(entire|full|whole|complete) (list of (the )?(last |previous |recent )?)?(conversation|chat|messages?)( history| log| transcript)?\b`)},
	{ConcealFromUser, regexp.MustCompile(`\b(do not|don't|dont|never|must not|should not) (tell|inform|mention|reveal|notify|show|alert|disclose|say)( (this|that|it|anything))?( to)?( the)? users?\b` +
		`|\bwithout (telling|informing|notifying|alerting|asking|showing|letting) (the )?users?\b` +
		`|\b(the )?users? (must|should|does|do|need|needs) ?(not|n't) (know|see|notice|be told|be informed|be aware|find out)\b` +
		`|\b(hide|conceal|keep) (this|it|that|these|them)?( secret| hidden)? from (the )?users?\b` +
		`|\bdo not mention (that|this|it)\b|\b(mere|just an?) implementation detail\b|\b(could|may|might|would) (even )?upset the user\b`)},
	{SensitiveFile, regexp.MustCompile(`(~/|\$home/|/home/[^/ ]+/|/root/|\b)(\.ssh\b|id (rsa|dsa|ecdsa|ed25519)\b|\.aws/credentials|\.aws\b|\.netrc|\.npmrc|\.pypirc|\.git credentials|\.kube/config|\.docker/config\.json|\.gnupg|\.bash history|\.zsh history|wallet\.dat)` +
		`|(^|[\s'"\x60(/~])\.env\b|\bmcp\.json\b|\bclaude desktop config(\.json)?\b|/etc/(passwd|shadow|sudoers)\b|\bcredentials\.json\b|\bprivate (ssh )?keys?\b`)},
	{Shadowing, regexp.MustCompile(`\b(when|whenever|if|after|before) (you |the (assistant|model|agent|ai) )?(use|using|call|calling|invoke|invoking|run|running)s? (the|any|another|other|an?other) ([\w.:/]+ )?[\w.:/]+ (tool|function)\b` +
		`|\bwhen [^.!?]{0,40}\b(is|are|gets?) (invoked|called|used|run),? (make sure|ensure|always|you must|you should|first|change|set|replace|send|add|include|redirect)\b` +
		`|\ball (commands|requests|calls|queries|messages) must (include|start with|begin with|be prefixed|contain)\b` +
		`|\b(always|must|should)( also)? b?cc [\w.+-]+@` +
		`|\b(side effect|takes? precedence|has priority|overrides?|replaces?|supersedes?) (on |over |of |for )?(the |all |any )?(other |also present |existing )?[\w.:/ ]{0,40}\b(tools?|functions?)\b` +
		`|\b(all|every|any) (other )?(e ?mails?|messages?|requests?|calls?|transactions?|payments?|transfers?) (must|should|shall|will) (always )?(be )?(sent|forwarded|redirected|copied|cc'?d|bcc'?d|routed|go) to\b` +
		`|\b(must|should|always) (also )?(send|forward|redirect|cc|bcc|copy|route) [^.!?]{0,40}\bto [\w.+-]+@[\w-]+\.[\w.]+` +
		`|\binstead of (using|calling) (the )?[\w.:/]+ (tool|function)\b`)},
}

// patternSet runs patterns (its expression i is patterns[i]).
var patternSet = func() *prefilter.Set {
	exprs := make([]string, len(patterns))
	for i, p := range patterns {
		exprs[i] = p.re.String()
	}
	set, err := prefilter.Compile(exprs)
	if err != nil {
		panic(err) // the patterns compiled above
	}
	return set
}()

// sensitiveVerb must also occur, in the same sentence, for a
// SensitiveFile match to count: the check is about demands to read a
// file and pass it on, not about a file tool that mentions .env.
var sensitiveVerb = regexp.MustCompile(`\b(read|reading|cat|open|load|fetch|send|sent|pass|passing|include|including|provide|attach|upload|copy|paste|contents?|exfiltrate|extract)\b`)

// fold lowercases s and turns runs of spaces, underscores and hyphens
// (as in parameter names: content_from_reading_ssh_id_rsa) into one
// space, so that one pattern covers prose and identifiers. Text beyond
// ASCII is first brought to Unicode's compatibility form (NFKC), so that
// fullwidth and other compatibility letters (＜ＩＭＰＯＲＴＡＮＴ＞) read as
// the ASCII ones they stand for.
func fold(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			s = norm.NFKC.String(s)
			break
		}
	}
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range strings.ToLower(s) {
		if r == ' ' || r == '_' || r == '-' || r == '\t' || r == '\n' || r == '\r' {
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// invisible reports the first invisible or direction-changing character
// of s, by name.
func invisible(s string) (string, bool) {
	for i, r := range s {
		switch {
		case r >= 0xE0000 && r <= 0xE007F:
			return "Unicode tag characters (U+E0000–U+E007F)", true
		case r == 0x200B || r == 0x200C || r == 0x2060 || r == 0x2061 || r == 0x2062 || r == 0x2063 || r == 0x2064 || r == 0x180E:
			return "a zero-width character (" + uplus(r) + ")", true
		case r == 0xFEFF && i > 0:
			return "a zero-width no-break space (U+FEFF)", true
		case r == 0x200D && !emojiJoin(s, i):
			return "a zero-width joiner (U+200D) outside an emoji", true
		case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C:
			return "a bidirectional control (" + uplus(r) + ")", true
		}
	}
	return "", false
}

// emojiJoin reports whether the joiner at s[i] joins two pictographs (as
// in 👩‍💻), its one ordinary use.
func emojiJoin(s string, i int) bool {
	before, _ := utf8.DecodeLastRuneInString(strings.TrimRight(s[:i], "\uFE0F"))
	after, _ := utf8.DecodeRuneInString(s[i+len("\u200D"):])
	pictograph := func(r rune) bool { return r >= 0x1F000 || r >= 0x2600 && r <= 0x27BF }
	return pictograph(before) && pictograph(after)
}

func uplus(r rune) string {
	const hex = "0123456789ABCDEF"
	b := []byte("U+")
	digits := []byte{}
	for v := r; v > 0 || len(digits) < 4; v >>= 4 {
		digits = append([]byte{hex[v&0xF]}, digits...)
	}
	return string(append(b, digits...))
}

// ansi reports an escape character (ESC, or the one-byte CSI U+009B).
func ansi(s string) bool {
	return strings.ContainsRune(s, 0x1B) || strings.ContainsRune(s, 0x9B)
}
