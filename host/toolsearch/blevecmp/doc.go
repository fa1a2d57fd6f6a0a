// Package blevecmp measures bleve (github.com/blevesearch/bleve/v2, the
// well-kept Go search library) beside host/toolsearch, on the same data,
// in the same run. It is its own module so that bleve never enters
// plughost's; nothing else imports it. Run it from this directory:
//
//	go test -run '^$' -bench . -benchtime 300x
//
// bleve is given toolsearch's analysis in its own parts ('_', '-', '.' to
// spaces, Unicode words, camelCase split, lower case, the same stop words,
// Snowball's English stemmer, CJK bigrams), BM25 scoring, and one match
// query per field with toolsearch's weights as boosts (name 3, title 3,
// description 1, parameters 0.5), in two forms: the provider's name, title
// and description as a field of each tool (boost 1), or in an index of
// their own whose score is added to their tools' (toolsearch's provider
// stage, fused here).
//
// Measured (2026-11-23, 2 shared cores), recall@1/5/10 | hit@1/5/10 on
// the 49 development tasks, and the time of one search of the top 10 of
// 10,013 tools (19 copies of the corpus) for those tasks:
//
//	                          R@1   R@5   R@10  | H@1   H@5   H@10    p50      p99
//	toolsearch                0.185 0.393 0.442 | 0.388 0.633 0.673   0.14 ms  1.4 ms
//	bleve, provider a field   0.134 0.332 0.404 | 0.286 0.531 0.653   14.3 ms  78 ms
//	bleve, provider stage     0.131 0.330 0.428 | 0.265 0.571 0.735   (not timed: it fetches every hit to fuse)
//
// bleve v2.6.3 brings 53 modules (211 edges in `go mod graph`; 72 packages
// linked into this test) where toolsearch needs one: the Snowball stemmer,
// which has no dependencies.
//
// The decision: toolsearch keeps its own index. bleve ranks worse here
// (it scores each field with BM25 and sums the boosted fields, with a
// coordination factor, where toolsearch sums weighted frequencies before
// saturating them once, BM25F), is a hundred times slower per search and
// misses the 1 ms target tenfold, and weighs 53 modules. toolsearch's own
// code is small (an inverted index of four fields and a provider stage,
// about 830 lines with their comments) because it needs no persistence, no query language
// and no segments.
package blevecmp
