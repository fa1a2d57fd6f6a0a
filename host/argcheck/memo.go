package argcheck

import (
	"crypto/sha256"
	"sync"
)

// Compiling a schema is the dearest step of publishing a tool: the
// library validates the schema against its draft's meta-schema and builds
// the compiled form, 70 µs for a one-property object schema and 0.5 ms for
// a ten-property one (measured on a loaded two-core machine). A warm start
// of 100 plugins publishes 1,000 tools at once, and issue 11 measured
// 55 ms of its 109 ms in these compilations. Many tools share a schema
// (every tool of a plugin taking {"text": string}, the empty object of a
// tool without arguments), so Compile keeps what it made of each schema
// text it has seen, by the SHA-256 of the bytes: a schema text seen before
// costs a digest (under a microsecond) and is refused or accepted exactly
// as the first time, with the same error.
//
// Why not a cheaper check at publish and the compilation at the first
// call: what the library refuses when compiling (its meta-schema,
// references to other documents, regular expressions that do not parse,
// $ref pointers that lead nowhere) has no cheaper test than the
// compilation itself; validating against the meta-schema alone was
// measured at 67 µs against 69 µs for the whole compilation of the same
// small schema. A refused tool must be refused before any client lists
// it, so the check cannot wait for a call.

// The memory's bounds: at most maxMemo schemas of at most maxMemoBytes
// of text in all, none longer than maxMemoSchema (a longer one is
// compiled each time: rare, and its compiled form is large). Past a
// bound the memory is dropped whole and filled again: a host serving
// more distinct schemas than this compiles each as it did before the
// memory existed.
const (
	maxMemo       = 4096
	maxMemoBytes  = 8 << 20
	maxMemoSchema = 64 << 10
)

// memo maps a schema's digest to what Compile made of it. Its entries are
// immutable: a *Schema is safe for concurrent use, and the error is the
// same value for every caller.
var memo struct {
	sync.Mutex
	m     map[[sha256.Size]byte]compiled
	bytes int // the text of the schemas in m
}

// compiled is one remembered outcome of Compile.
type compiled struct {
	s   *Schema
	err error
}

// remembered returns what Compile made of raw before, if it did.
func remembered(key [sha256.Size]byte) (compiled, bool) {
	memo.Lock()
	defer memo.Unlock()
	c, ok := memo.m[key]
	return c, ok
}

// remember stores what Compile made of a schema. Two callers compiling
// the same new schema at once both compile it, and the second result
// replaces the first: they are equal.
func remember(key [sha256.Size]byte, size int, c compiled) {
	if size > maxMemoSchema {
		return
	}
	memo.Lock()
	defer memo.Unlock()
	if memo.m == nil || len(memo.m) >= maxMemo || memo.bytes+size > maxMemoBytes {
		memo.m, memo.bytes = make(map[[sha256.Size]byte]compiled), 0
	}
	if _, ok := memo.m[key]; !ok {
		memo.bytes += size
	}
	memo.m[key] = c
}
