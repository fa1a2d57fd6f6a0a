package secrets

import (
	"slices"
	"strings"
)

// A Finding is one credential found in a text.
type Finding struct {
	// Rule is the gitleaks rule's id (e.g. "aws-access-token"),
	// Description its text.
	Rule, Description string
	// Start and End are the secret's byte span in the text scanned.
	Start, End int
}

// Scan returns the credentials in text, in the order of the rules and
// then of their place in the text. from is where the secret part of text
// starts: findings whose secret ends before it are dropped, and a secret
// that starts before it is cut to start there (Guard scans "KEY": "VALUE"
// with from at VALUE, so a rule that needs the member's name sees it).
func (rs *Rules) Scan(text string, from int) []Finding {
	if text == "" {
		return nil
	}
	lower := asciiLower(text) // gitleaks' keywords are ASCII; offsets stay those of text
	gates := !rs.noGates
	type pending struct {
		rule int
		hits []hit // the rule's keyword occurrences (gated rules)
	}
	var todo []pending
	rs.keywords.Walk(lower, func(end, _, pattern int64) bool {
		for _, ri := range rs.byKeyword[pattern] {
			i := slices.IndexFunc(todo, func(p pending) bool { return p.rule == ri })
			if i < 0 {
				i = len(todo)
				todo = append(todo, pending{rule: ri})
			}
			if gates && rs.rules[ri].gate != nil {
				todo[i].hits = append(todo[i].hits, hit{int(end) + 1, rs.keywordText[pattern]})
			}
		}
		return true
	})
	if len(todo) == 0 {
		return nil
	}
	slices.SortFunc(todo, func(a, b pending) int { return a.rule - b.rule })
	var out []Finding
	for _, p := range todo {
		r := &rs.rules[p.rule]
		if gates && r.gate != nil && !r.gate.open(text, p.hits) {
			continue
		}
		for _, m := range r.re.FindAllStringSubmatchIndex(text, -1) {
			start, end := m[0], m[1]
			match := text[start:end]
			// the secret: secretGroup, else the first non-empty group, else the match
			if g := r.secretGroup; g > 0 && 2*g+1 < len(m) && m[2*g] >= 0 {
				start, end = m[2*g], m[2*g+1]
			} else if g == 0 {
				for i := 2; i+1 < len(m); i += 2 {
					if m[i] >= 0 && m[i+1] > m[i] {
						start, end = m[i], m[i+1]
						break
					}
				}
			}
			secret := strings.Trim(text[start:end], "\n")
			if end <= from || secret == "" {
				continue
			}
			if r.entropy != 0 && shannonEntropy(secret) <= r.entropy {
				continue
			}
			line := lineAround(text, m[0], m[1])
			if rs.global.allows(secret, match, line) || anyAllows(r.allowlists, secret, match, line) {
				continue
			}
			out = append(out, Finding{Rule: r.id, Description: r.description, Start: max(start, from), End: end})
		}
	}
	return dropCoveredGeneric(out)
}

// dropCoveredGeneric drops a generic rule's finding whose secret lies
// within a specific rule's, as gitleaks' own filter does: the specific
// rule names the credential better.
func dropCoveredGeneric(fs []Finding) []Finding {
	if len(fs) < 2 {
		return fs
	}
	var specific []Finding
	for _, f := range fs {
		if !strings.Contains(f.Rule, "generic") {
			specific = append(specific, f)
		}
	}
	return slices.DeleteFunc(fs, func(f Finding) bool {
		return strings.Contains(f.Rule, "generic") && slices.ContainsFunc(specific, func(o Finding) bool {
			return o.Start <= f.Start && f.End <= o.End
		})
	})
}

func anyAllows(as []allowlist, secret, match, line string) bool {
	for i := range as {
		if as[i].allows(secret, match, line) {
			return true
		}
	}
	return false
}

// lineAround is the line(s) of text holding [start, end).
func lineAround(text string, start, end int) string {
	from := strings.LastIndexByte(text[:start], '\n') + 1
	to := strings.IndexByte(text[end:], '\n')
	if to < 0 {
		return text[from:]
	}
	return text[from : end+to]
}

// asciiLower is text with its ASCII letters lowercased.
func asciiLower(text string) []byte {
	b := []byte(text)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return b
}
