package pii

import (
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// phones finds phone numbers: "+" and digits, or digits grouped by
// spaces, hyphens, dots or a parenthesised area code, that libphonenumber
// parses as a valid number (national ones read in region).
func phones(text, region string) []Finding {
	var out []Finding
	for i := 0; i < len(text); i++ {
		c := text[i]
		if !(c == '+' || c == '(' || isDigit(c)) || i > 0 && (isAlnum(text[i-1]) || strings.IndexByte("+./-_:", text[i-1]) >= 0) {
			// inside a larger token: a DOI (10.1101/2024.01.20.23288905), a path, a version
			continue
		}
		end, digits, groups := phoneRun(text, i)
		if digits < 7 || digits > 15 {
			continue
		}
		international := c == '+'
		if !international && groups < 2 {
			continue // a bare run of digits: an id, an amount, a timestamp
		}
		if !international && (region == "" || looksLikeDate(text[i:end]) || end+1 < len(text) && text[end] == ':' && isDigit(text[end+1])) {
			continue // national numbers need a region; a date or a time is no phone number
		}
		num, err := phonenumbers.Parse(text[i:end], region)
		if err != nil || !phonenumbers.IsValidNumber(num) {
			continue
		}
		out = append(out, Finding{Phone, i, end})
		i = end - 1
	}
	return out
}

// phoneRun reads a phone-like run from text[i]: digits, single
// separators (space, hyphen, dot) and one parenthesised group; it
// returns its end, its digits and its groups of digits.
func phoneRun(text string, i int) (end, digits, groups int) {
	j := i
	if text[j] == '+' {
		j++
	}
	inGroup, paren := false, false
	end = j
	for j < len(text) {
		c := text[j]
		switch {
		case isDigit(c):
			if !inGroup {
				groups++
				inGroup = true
			}
			digits++
			j++
			end = j
			continue
		case c == '(' && !paren && !inGroup:
			paren = true
		case c == ')' && paren && inGroup:
		case strings.IndexByte(" -.", c) >= 0 && (inGroup || text[j-1] == ')') && j+1 < len(text) && (isDigit(text[j+1]) || text[j+1] == '('):
		default:
			return end, digits, groups
		}
		inGroup = false
		j++
	}
	return end, digits, groups
}

// looksLikeDate reports a run that starts as an ISO date (2026-11-28).
func looksLikeDate(s string) bool {
	return len(s) >= 10 && isDigit(s[0]) && isDigit(s[1]) && isDigit(s[2]) && isDigit(s[3]) && s[4] == '-' &&
		isDigit(s[5]) && isDigit(s[6]) && s[7] == '-' && isDigit(s[8]) && isDigit(s[9])
}
