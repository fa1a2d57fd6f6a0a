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
	ReasonReserved  = "names starting <provider>__ are that provider's"
	ReasonSanitized = "'.' is not allowed in exposed names"
	ReasonTooLong   = "name longer than 64 characters"
	ReasonCollision = "name collides with another exposed name"
)

// Assign gives every name in ns its exposed name, by the rules of the
// package documentation. prev is what the previous Assign of the same
// kind gave (nil at the first): a (Provider, Own) pair of ns that prev
// holds keeps its exposed name, so a name clients call reaches the same
// provider while that provider offers it. The newcomers' names are chosen
// around the kept ones: every exposed name is valid (ValidExposed) and
// unique, and the newcomers' depend only on the set of (Provider, Own)
// pairs of ns and on the kept names, never on the order of ns. ns must not
// hold the same pair twice, and is sorted by provider, then own name.
func Assign(ns []*Name, prev []*Name) {
	sort.Slice(ns, func(i, j int) bool {
		if ns[i].Provider != ns[j].Provider {
			return ns[i].Provider < ns[j].Provider
		}
		return ns[i].Own < ns[j].Own
	})
	type pair struct{ provider, own string }
	held := make(map[pair]*Name, len(prev))
	for _, p := range prev {
		if p.Exposed != "" {
			held[pair{p.Provider, p.Own}] = p
		}
	}

	// Kept names first: they are unique, as prev's were.
	count := make(map[string]int, len(ns))
	taken := map[string]bool{}
	var fresh []*Name
	for _, n := range ns {
		count[n.Own]++
		if h := held[pair{n.Provider, n.Own}]; h != nil {
			n.Exposed, n.Reason = h.Exposed, h.Reason
			taken[n.Exposed] = true
			continue
		}
		fresh = append(fresh, n)
	}

	// Step 1: clashes on the provider's own name, and names in another
	// provider's <provider>__ space.
	type cand struct {
		*Name
		name     string
		base     string // name before hashing
		prefixed bool
		altered  bool // step 2 changed it, or it is too long
		hashed   bool
	}
	cs := make([]*cand, len(fresh))
	for i, n := range fresh {
		n.Reason = ""
		c := &cand{Name: n, name: n.Own}
		switch {
		case count[n.Own] > 1:
			c.Reason = ReasonClash
		case Foreign(n.Provider, strings.ReplaceAll(n.Own, ".", "_")):
			c.Reason = ReasonReserved
		}
		if c.Reason != "" {
			c.name = n.Provider + "__" + n.Own
			c.prefixed = true
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

	// Step 3: too long, colliding with a kept name, or colliding
	// candidates.
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
		if taken[c.name] {
			c.Reason = ReasonCollision
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

	// Step 4: hashed names that still collide, with each other or a kept
	// name, get longer hashes.
	for round := 2; ; round++ {
		seen := make(map[string]int, len(cs)+len(taken))
		for name := range taken {
			seen[name]++
		}
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

// Foreign reports whether name, as a provider called provider offers it,
// lies in another provider's space: it starts with "<other>__", other a
// provider name (ValidProvider) that is not provider. Only provider p
// exposes names starting "p__", so that a name formed by a clash (or
// chosen by p) can never be taken by another provider, whether p is
// running yet or not. A foreign name is exposed under its own provider's
// prefix (ReasonReserved).
func Foreign(provider, name string) bool {
	if strings.HasPrefix(name, provider+"__") {
		return false
	}
	i := strings.Index(name, "__")
	return i > 0 && ValidProvider(name[:i])
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
