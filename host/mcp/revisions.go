package mcp

import "slices"

// The protocol revisions: which the method table knows, which a session
// speaks, and the sets of them an entry of the table exists in. Every
// layer of the package asks these (the table, the handlers, the
// session's lifecycle), so they sit below all of them.

// revisions are the protocol revisions the table knows, newest first. A
// session speaks those in versions.
var revisions = [...]string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// versions are the protocol versions a session speaks, latest first: the
// revisions that have initialize.
var versions = [...]string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

const (
	vLatest      = 0
	vElicitation = 1 // 2025-06-18: the first version with elicitation/create
	vBatch       = 2 // 2025-03-26: the only version with JSON-RPC batches
	vOriginal    = 3 // 2024-11-05: progress notifications have no message
)

// revSet is a set of revisions: bit i stands for revisions[i].
type revSet uint8

// revBit returns the set holding only the named revision.
func revBit(rev string) revSet {
	for i, r := range revisions {
		if r == rev {
			return 1 << i
		}
	}
	panic("mcp: unknown revision " + rev)
}

// since returns the set of rev and every later revision of the 2025 era
// (the sessionful one, which 2026-07-28 replaced).
func since(rev string) revSet {
	var s revSet
	for _, v := range versions {
		s |= revBit(v)
		if v == rev {
			return s
		}
	}
	panic("mcp: unknown version " + rev)
}

var (
	sessionEra   = since("2024-11-05") // every version a session speaks
	statelessEra = revBit("2026-07-28")
)

// versionBits[v] is the set holding only versions[v].
var versionBits = func() (b [len(versions)]revSet) {
	for i, v := range versions {
		b[i] = revBit(v)
	}
	return b
}()

// has reports whether the set holds versions[v].
func (s revSet) has(v int) bool { return s&versionBits[v] != 0 }

// Versions returns the protocol versions a session speaks, latest first.
func Versions() []string { return slices.Clone(versions[:]) }

// SpeaksVersion reports whether a session speaks protocol version v.
func SpeaksVersion(v string) bool { return slices.Contains(versions[:], v) }
