package device

import (
	"bufio"
	"crypto/subtle"
	"fmt"
	"io"
	"path"
	"strings"
)

// A Token is a secret a device sends in AUTH, and the voice ids a device
// holding it may register: a token given to the kitchen box cannot be
// used to appear as the hall's (the voice id names the device's provider,
// "device-<voiceid>", which access rules and clients go by).
type Token struct {
	// Secret is what the device sends before the first "##" of AUTH.
	Secret string
	// IDs are the voice ids the token may register, each exact
	// ("kitchen") or a path.Match pattern ("hall-*"). A device holding a
	// token with IDs must name one of them in AUTH. Empty: any voice id,
	// or none (the token of every device, as before tokens named ids).
	IDs []string
}

// Allows reports whether a device holding t may register voice id voice.
func (t *Token) Allows(voice string) bool {
	if len(t.IDs) == 0 {
		return true
	}
	for _, p := range t.IDs {
		if ok, _ := path.Match(p, voice); ok && voice != "" {
			return true
		}
	}
	return false
}

// ParseTokens reads a device token file: one token a line, blank lines and
// lines starting with # skipped. A token may be followed by the voice ids
// it may register, as ids= and a comma-separated list:
//
//	kd83-secret-for-the-kitchen  ids=kitchen
//	hall-boxes-secret            ids=hall-*,porch
//	shared-secret                # any voice id (warned about at start)
//
// A token cannot contain spaces: a line with anything but ids=… after the
// token is an error (so that a token written with a space is refused, not
// silently shortened to its first word), and so is a token given twice.
// Errors name the line.
func ParseTokens(r io.Reader) ([]Token, error) {
	var tokens []Token
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		tok := Token{Secret: fields[0]}
		if strings.Contains(tok.Secret, "##") {
			return nil, fmt.Errorf("line %d: a token cannot contain \"##\" (AUTH ends the token there)", n)
		}
		if first, dup := seen[tok.Secret]; dup {
			return nil, fmt.Errorf("line %d: the same token as line %d", n, first)
		}
		seen[tok.Secret] = n
		for _, f := range fields[1:] {
			if strings.HasPrefix(f, "#") {
				break
			}
			list, ok := strings.CutPrefix(f, "ids=")
			if !ok {
				return nil, fmt.Errorf("line %d: after the token only ids=ID,… may follow, found %q (a token cannot contain spaces)", n, f)
			}
			for id := range strings.SplitSeq(list, ",") {
				if err := checkIDPattern(id); err != nil {
					return nil, fmt.Errorf("line %d: ids: %w", n, err)
				}
				tok.IDs = append(tok.IDs, id)
			}
		}
		tokens = append(tokens, tok)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return tokens, nil
}

// checkIDPattern refuses a voice id or pattern no AUTH could match.
func checkIDPattern(id string) error {
	if id == "" {
		return fmt.Errorf("an empty id (a stray comma?)")
	}
	if strings.Contains(id, "##") {
		return fmt.Errorf("%q: an id cannot contain \"##\"", id)
	}
	if _, err := path.Match(id, ""); err != nil {
		return fmt.Errorf("%q: %w", id, err)
	}
	return nil
}

// matchToken returns the configured token whose secret is secret, or nil,
// in time that does not depend on which one matched or where they differ.
func matchToken(tokens []Token, secret string) *Token {
	found := -1
	for i := range tokens {
		eq := subtle.ConstantTimeCompare([]byte(tokens[i].Secret), []byte(secret))
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return nil
	}
	return &tokens[found]
}
