// Package pii is the judging logic of the bundled pii plugin: it finds
// personal data in results (e-mail addresses, phone numbers, payment card
// numbers, IBANs) and redacts it, or refuses the result, as its settings
// say. Every kind is found by a scanner that proposes candidates and a
// check that confirms them, so that an order number or a hash is not
// taken for personal data:
//
//   - e-mail addresses: a local part, @, and a domain of at least two
//     labels whose last is alphabetic (2 to 63 letters);
//   - card numbers: 13 to 19 digits, optionally grouped by single spaces
//     or hyphens, that pass the Luhn check and start with an issuer
//     prefix of a card network (Visa, Mastercard, American Express,
//     Discover, JCB, Diners Club, UnionPay, Maestro);
//   - IBANs: a country code, two check digits and the country's length
//     (the SWIFT IBAN registry's), optionally grouped by fours, that
//     pass the ISO 7064 mod-97 check;
//   - phone numbers: a + and 8 to 15 digits, or a grouped national
//     number ((415) 555-2671, 030 1234567 …), that libphonenumber (the
//     Go port github.com/nyaruka/phonenumbers) parses as valid for the
//     configured region. A bare run of digits is never a phone number.
package pii

import (
	"slices"
	"strings"
)

// Kind is a kind of personal data.
type Kind string

// The kinds.
const (
	Email Kind = "email"
	Phone Kind = "phone"
	Card  Kind = "card"
	IBAN  Kind = "iban"
)

// Kinds are every kind.
var Kinds = []Kind{Email, Phone, Card, IBAN}

// A Finding is one piece of personal data: its kind and byte span.
type Finding struct {
	Kind       Kind
	Start, End int
}

// Finder finds personal data of some kinds.
type Finder struct {
	Kinds []Kind
	// Region is the ISO 3166 region national phone numbers are read in
	// (e.g. "US", "DE"); international ones (+…) are found whatever it is.
	Region string
}

// Find returns the personal data in text, in order, not overlapping
// (card numbers and IBANs win over phone numbers in the same digits).
func (f Finder) Find(text string) []Finding {
	var out []Finding
	on := func(k Kind) bool { return slices.Contains(f.Kinds, k) }
	if on(Email) && strings.IndexByte(text, '@') >= 0 {
		out = append(out, emails(text)...)
	}
	if !hasDigit(text) {
		return out
	}
	if on(Card) {
		out = appendFree(out, cards(text))
	}
	if on(IBAN) {
		out = appendFree(out, ibans(text))
	}
	if on(Phone) {
		out = appendFree(out, phones(text, f.Region))
	}
	slices.SortFunc(out, func(a, b Finding) int { return a.Start - b.Start })
	return out
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if '0' <= s[i] && s[i] <= '9' {
			return true
		}
	}
	return false
}

// appendFree appends the findings of add that overlap none of out.
func appendFree(out, add []Finding) []Finding {
	for _, a := range add {
		if !slices.ContainsFunc(out, func(o Finding) bool { return a.Start < o.End && o.Start < a.End }) {
			out = append(out, a)
		}
	}
	return out
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isAlnum(c byte) bool { return isDigit(c) || isAlpha(c) }

// emails finds addresses around each @.
func emails(text string) []Finding {
	var out []Finding
	localChar := func(c byte) bool { return isAlnum(c) || strings.IndexByte(".!#$%&'*+/=?^_`{|}~-", c) >= 0 }
	for at := strings.IndexByte(text, '@'); at >= 0; {
		start := at
		for start > 0 && localChar(text[start-1]) {
			start--
		}
		for start < at && text[start] == '.' {
			start++
		}
		end := at + 1
		for end < len(text) && (isAlnum(text[end]) || text[end] == '-' || text[end] == '.') {
			end++
		}
		for end > at+1 && (text[end-1] == '.' || text[end-1] == '-') {
			end--
		}
		if start < at && validDomain(text[at+1:end]) {
			out = append(out, Finding{Email, start, end})
		}
		next := strings.IndexByte(text[at+1:], '@')
		if next < 0 {
			break
		}
		at += 1 + next
	}
	return out
}

func validDomain(d string) bool {
	labels := strings.Split(d, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
	}
	tld := labels[len(labels)-1]
	if len(tld) < 2 {
		return false
	}
	for i := 0; i < len(tld); i++ {
		if !isAlpha(tld[i]) {
			return false
		}
	}
	return true
}

// digitRuns finds runs of digits joined by single separators from seps,
// not touching letters or digits on either side; each run's span and
// its digits.
func digitRuns(text, seps string, minDigits, maxDigits int) (spans [][2]int, digits []string) {
	for i := 0; i < len(text); {
		if !isDigit(text[i]) || i > 0 && (isAlnum(text[i-1])) {
			i++
			continue
		}
		var b []byte
		j := i
		end := i
		for j < len(text) {
			if isDigit(text[j]) {
				b = append(b, text[j])
				j++
				end = j
				continue
			}
			if strings.IndexByte(seps, text[j]) >= 0 && j+1 < len(text) && isDigit(text[j+1]) {
				j++
				continue
			}
			break
		}
		if (end >= len(text) || !isAlnum(text[end])) && len(b) >= minDigits && len(b) <= maxDigits {
			spans = append(spans, [2]int{i, end})
			digits = append(digits, string(b))
		}
		i = max(end, i+1)
	}
	return spans, digits
}

// cards finds Luhn-valid card numbers with an issuer prefix.
func cards(text string) []Finding {
	var out []Finding
	spans, digits := digitRuns(text, " -", 13, 19)
	for i, d := range digits {
		if luhn(d) && issuer(d) {
			out = append(out, Finding{Card, spans[i][0], spans[i][1]})
		}
	}
	return out
}

// luhn reports whether digits pass the Luhn check.
func luhn(digits string) bool {
	sum := 0
	double := false
	for i := len(digits) - 1; i >= 0; i-- {
		d := int(digits[i] - '0')
		if double {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

// issuer reports whether a card number starts with a card network's
// issuer prefix (and has one of its lengths).
func issuer(d string) bool {
	prefix := func(n int) int {
		v := 0
		for i := 0; i < n && i < len(d); i++ {
			v = v*10 + int(d[i]-'0')
		}
		return v
	}
	n := len(d)
	switch {
	case d[0] == '4': // Visa
		return n == 13 || n == 16 || n == 19
	case prefix(2) >= 51 && prefix(2) <= 55, prefix(4) >= 2221 && prefix(4) <= 2720: // Mastercard
		return n == 16
	case prefix(2) == 34 || prefix(2) == 37: // American Express
		return n == 15
	case prefix(4) == 6011 || prefix(2) == 65 || prefix(3) >= 644 && prefix(3) <= 649: // Discover
		return n >= 16
	case prefix(4) >= 3528 && prefix(4) <= 3589: // JCB
		return n >= 16
	case prefix(2) == 36 || prefix(2) == 38 || prefix(3) >= 300 && prefix(3) <= 305: // Diners Club
		return n >= 14
	case prefix(2) == 62: // UnionPay
		return n >= 16
	case prefix(2) == 50 || prefix(2) >= 56 && prefix(2) <= 69: // Maestro
		return n >= 12
	}
	return false
}
