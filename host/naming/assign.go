package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
)

// Name is one name a provider offers, and the name clients are shown: the
// input and output of Assign.
type Name struct {
	// Provider is the provider's name, valid (ValidProvider).
	Provider string
	// Own is the provider's name for the tool or prompt, valid (CheckName).
	Own string
	// Exposed is set by Assign: the unique name clients see.
	Exposed string
	// Reason is set by Assign when Exposed != Own: why (one of the
	// Reason… constants).
	Reason string
}

// Reasons a name is not exposed as the provider's own.
const (
	ReasonClash     = "name clash between providers"
	ReasonSanitized = "'.' is not allowed in exposed names"
	ReasonTooLong   = "name longer than 64 characters"
	ReasonCollision = "name collides with another exposed name"
)

// Assign gives every name in ns its exposed name, by the rules of the
// package documentation: every exposed name is valid (ValidExposed) and
// unique, and each depends only on the set of (Provider, Own) pairs, never
// on their order. ns must not hold the same pair twice, and is sorted by
// provider, then own name.
func Assign(ns []*Name) {
	sort.Slice(ns, func(i, j int) bool {
		if ns[i].Provider != ns[j].Provider {
			return ns[i].Provider < ns[j].Provider
		}
		return ns[i].Own < ns[j].Own
	})

	// Step 1: clashes on the provider's own name.
	count := make(map[string]int, len(ns))
	for _, n := range ns {
		count[n.Own]++
	}
	type cand struct {
		*Name
		name     string
		base     string // name before hashing
		prefixed bool
		altered  bool // step 2 changed it, or it is too long
		hashed   bool
	}
	cs := make([]*cand, len(ns))
	for i, n := range ns {
		n.Reason = ""
		c := &cand{Name: n, name: n.Own}
		if count[n.Own] > 1 {
			c.name = n.Provider + "__" + n.Own
			c.prefixed = true
			c.Reason = ReasonClash
		}
		// Step 2.
		if s := strings.ReplaceAll(c.name, ".", "_"); s != c.name {
			c.name = s
			c.altered = true
			if c.Reason == "" {
				c.Reason = ReasonSanitized
			}
		}
		if len(c.name) > MaxExposed {
			c.altered = true
			c.Reason = ReasonTooLong
		}
		cs[i] = c
	}

	// Step 3: too long, or colliding candidates.
	groups := make(map[string][]*cand, len(cs))
	for _, c := range cs {
		if len(c.name) <= MaxExposed {
			groups[c.name] = append(groups[c.name], c)
		}
	}
	for _, c := range cs {
		c.base = c.name
		if len(c.name) > MaxExposed {
			c.name = hashedName(c.base, c.Provider, c.Own, hashLen)
			c.hashed = true
			continue
		}
		g := groups[c.name]
		if len(g) == 1 {
			continue
		}
		if c.altered || c.prefixed && countOf(g, func(o *cand) bool { return !o.altered && !o.prefixed }) > 0 ||
			countOf(g, func(o *cand) bool { return !o.altered && o.prefixed == c.prefixed }) > 1 {
			c.Reason = ReasonCollision
			c.hashed = true
		}
	}
	for _, c := range cs {
		if c.hashed && len(c.name) <= MaxExposed {
			c.name = hashedName(c.base, c.Provider, c.Own, hashLen)
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
				c.name = hashedName(c.base, c.Provider, c.Own+"\x00"+strconv.Itoa(round), hashLen*2)
			}
		}
		if !dup {
			break
		}
	}
	for _, c := range cs {
		c.Exposed = c.name
		if c.Exposed == c.Own {
			c.Reason = ""
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
// and own name fit in 64 characters, and appends them.
func hashedName(name, provider, own string, n int) string {
	sum := sha256.Sum256([]byte(provider + "\x00" + own))
	suffix := "_" + hex.EncodeToString(sum[:])[:n]
	if keep := MaxExposed - len(suffix); len(name) > keep {
		name = name[:keep]
	}
	return name + suffix
}
