package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
)

// maxExposedLen is the longest name exposed to clients (Claude Desktop's
// ^[a-zA-Z0-9_-]{1,64}$).
const maxExposedLen = 64

// maxProviderLen is the longest provider name the catalog accepts.
const maxProviderLen = 32

// hashLen is the number of hex digits of the stable hash suffix that
// shortens or disambiguates a name; a second round uses twice as many.
const hashLen = 8

// validProviderName reports whether s can name a provider: 1 to 32 of
// [a-zA-Z0-9_-].
func validProviderName(s string) bool {
	return len(s) >= 1 && len(s) <= maxProviderLen && allBytes(s, isExposedByte)
}

// validToolName reports whether a provider's tool name is usable: at least
// one of [A-Za-z0-9_.-], the MCP alphabet. Length is not limited here:
// a long name is shortened, not refused.
func validToolName(s string) bool {
	return s != "" && allBytes(s, func(b byte) bool { return isExposedByte(b) || b == '.' })
}

// validExposedName reports whether s matches ^[a-zA-Z0-9_-]{1,64}$.
func validExposedName(s string) bool {
	return len(s) >= 1 && len(s) <= maxExposedLen && allBytes(s, isExposedByte)
}

func isExposedByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-'
}

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

// naming is one tool to be named: the input and output of assignNames.
type naming struct {
	provider string // provider name, already valid
	tool     string // provider's tool name, already valid
	exposed  string // set by assignNames
	reason   string // set by assignNames when exposed != tool: why
}

// Reasons a tool is not exposed under its own name.
const (
	reasonClash     = "name clash between providers"
	reasonSanitized = "'.' is not allowed in exposed names"
	reasonTooLong   = "name longer than 64 characters"
	reasonCollision = "name collides with another exposed name"
)

// assignNames gives every tool in ns its exposed name. The result depends
// only on the set of (provider, tool) pairs, never on their order, and every
// exposed name is valid and unique.
//
// The rules, in order:
//  1. A tool keeps its own name unless another provider offers the same
//     name; then every one of them becomes <provider>__<tool>.
//  2. '.' becomes '_' (the only MCP character clients may refuse).
//  3. A name that is longer than 64 characters, or that now collides with
//     another candidate, is cut and given a stable hash suffix of its
//     provider and tool: <prefix>_<8 hex>. In a collision, a candidate
//     that needed no change in step 2 keeps the name when it is the only
//     one of its kind (bare names beat prefixed ones); the rest are hashed.
//  4. Should a hashed name still collide (astronomically unlikely), it gets
//     a longer hash until it is unique.
//
// ns must not hold the same (provider, tool) pair twice.
func assignNames(ns []*naming) {
	sort.Slice(ns, func(i, j int) bool {
		if ns[i].provider != ns[j].provider {
			return ns[i].provider < ns[j].provider
		}
		return ns[i].tool < ns[j].tool
	})

	// Step 1: clashes on the provider's own name.
	count := make(map[string]int, len(ns))
	for _, n := range ns {
		count[n.tool]++
	}
	type cand struct {
		*naming
		name     string
		base     string // name before hashing
		prefixed bool
		altered  bool // step 2 changed it, or it is too long
		hashed   bool
	}
	cs := make([]*cand, len(ns))
	for i, n := range ns {
		c := &cand{naming: n, name: n.tool}
		if count[n.tool] > 1 {
			c.name = n.provider + "__" + n.tool
			c.prefixed = true
			c.reason = reasonClash
		}
		// Step 2.
		if s := strings.ReplaceAll(c.name, ".", "_"); s != c.name {
			c.name = s
			c.altered = true
			if c.reason == "" {
				c.reason = reasonSanitized
			}
		}
		if len(c.name) > maxExposedLen {
			c.altered = true
			c.reason = reasonTooLong
		}
		cs[i] = c
	}

	// Step 3: too long, or colliding candidates.
	groups := make(map[string][]*cand, len(cs))
	for _, c := range cs {
		if len(c.name) <= maxExposedLen {
			groups[c.name] = append(groups[c.name], c)
		}
	}
	for _, c := range cs {
		c.base = c.name
		if len(c.name) > maxExposedLen {
			c.name = hashedName(c.base, c.provider, c.tool, hashLen)
			c.hashed = true
			continue
		}
		g := groups[c.name]
		if len(g) == 1 {
			continue
		}
		if c.altered || c.prefixed && countOf(g, func(o *cand) bool { return !o.altered && !o.prefixed }) > 0 ||
			countOf(g, func(o *cand) bool { return !o.altered && o.prefixed == c.prefixed }) > 1 {
			c.reason = reasonCollision
			c.hashed = true
		}
	}
	for _, c := range cs {
		if c.hashed && len(c.name) <= maxExposedLen {
			c.name = hashedName(c.base, c.provider, c.tool, hashLen)
		}
	}

	// Step 4: hashed names that still collide get longer hashes.
	for round := 2; ; round++ {
		seen := make(map[string]int, len(cs))
		for _, c := range cs {
			seen[c.name]++
		}
		dup := false
		for _, c := range cs {
			if seen[c.name] > 1 && c.hashed {
				dup = true
				c.name = hashedName(c.base, c.provider, c.tool+"\x00"+strconv.Itoa(round), hashLen*2)
			}
		}
		if !dup {
			break
		}
	}
	for _, c := range cs {
		c.exposed = c.name
		if c.exposed == c.tool {
			c.reason = ""
		}
	}
}

func countOf[T any](g []T, f func(T) bool) int {
	n := 0
	for _, x := range g {
		if f(x) {
			n++
		}
	}
	return n
}

// hashedName cuts name so that "_" and n hex digits of a hash of provider
// and tool fit in 64 characters, and appends them.
func hashedName(name, provider, tool string, n int) string {
	sum := sha256.Sum256([]byte(provider + "\x00" + tool))
	suffix := "_" + hex.EncodeToString(sum[:])[:n]
	if keep := maxExposedLen - len(suffix); len(name) > keep {
		name = name[:keep]
	}
	return name + suffix
}
