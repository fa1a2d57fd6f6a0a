package trust

import (
	"encoding/json"
	"strings"
)

// DiffLines is a held definition's difference from its approval as a
// page shows it, one line per line of text: "- " before what was
// approved, "+ " before what is listed now, "  " before what both hold
// or what only explains. A member's value is its text (indented JSON for
// an object), each of its lines prefixed, after "member: " on its first.
// Members are in the order Diff compares them. A pending definition
// (never approved) is all "+ " lines; a flagged one its members as
// listed ("  "), each value quoted as Diff shows it, since what a hook
// found may hide in characters that do not print.
func (h HeldDefinition) DiffLines() []string {
	if h.State == HeldFlagged {
		lines := flaggedLines(h.Kind, h.Listed)
		for i, l := range lines {
			lines[i] = "  " + l
		}
		return lines
	}
	if h.Approved == nil && h.State != HeldPending {
		return []string{"  (only its pin was approved: the approved text is not known)"}
	}
	var o, n map[string]json.RawMessage
	_ = json.Unmarshal(h.Approved, &o)
	_ = json.Unmarshal(h.Listed, &n)
	var lines []string
	for _, f := range append(pinnedFields[h.Kind], "annotations") {
		a, b := fieldText(o[f]), fieldText(n[f])
		if a == b {
			continue
		}
		lines = appendMember(lines, "- ", f, a)
		lines = appendMember(lines, "+ ", f, b)
	}
	return lines
}

// appendMember appends member's value text, each line after prefix;
// nothing when the value is empty (absent).
func appendMember(lines []string, prefix, member, text string) []string {
	if text == "" {
		return lines
	}
	for i, l := range strings.Split(text, "\n") {
		if i == 0 {
			l = member + ": " + l
		}
		lines = append(lines, prefix+l)
	}
	return lines
}
