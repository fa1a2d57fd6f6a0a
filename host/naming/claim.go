package naming

import "sort"

// A URI is one resource URI a provider offers: the input and output of
// Claim.
type URI struct {
	// Provider is the provider's name, valid (ValidProvider).
	Provider string
	// URI is the resource's URI, as the provider wrote it.
	URI string
	// Owner is set by Claim: the provider whose resource clients are
	// served under URI. It is Provider itself unless another provider
	// offers the same URI and its name sorts first.
	Owner string
}

// Claim gives every URI in us its owner, by the rule of the package
// documentation: of the providers offering one URI, the one whose name
// sorts first (byte-wise) owns it. The result depends only on the set of
// (Provider, URI) pairs, never on their order. us must not hold the same
// pair twice, and is sorted by URI, then provider.
func Claim(us []*URI) {
	sort.Slice(us, func(i, j int) bool {
		if us[i].URI != us[j].URI {
			return us[i].URI < us[j].URI
		}
		return us[i].Provider < us[j].Provider
	})
	for i, u := range us {
		if i > 0 && us[i-1].URI == u.URI {
			u.Owner = us[i-1].Owner
			continue
		}
		u.Owner = u.Provider
	}
}
