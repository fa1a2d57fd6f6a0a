// Package toolsearch finds the tools that match a query among all the
// tools a host serves, so that a model can be shown a few definitions
// instead of hundreds: an in-memory lexical index of MCP tool definitions,
// grouped by the provider (a plugin, a device) that offers them.
//
//	x := toolsearch.New()
//	err := x.Set("yahoo-finance", toolsearch.Provider{
//		Title:       "Yahoo Finance",
//		Description: "Stock prices, company data and news.",
//	}, defs) // defs: the provider's MCP Tool objects, as JSON
//	hits := x.Search("stock price history", 5) // best first: Name, Provider, Score, Def
//	x.Set("yahoo-finance", info, newDefs)         // a reload replaces them
//	x.Remove("yahoo-finance")                     // an unload removes them
//
// An Index is safe for concurrent use and follows a live catalog: Set
// replaces one provider's tools and Remove drops them, and the next search
// sees the change. SearchVisible searches only the tools a caller may see.
//
// An index made by NewSemantic ranks by meaning as well, through an
// Embedder (host/embeddings: any OpenAI-compatible embeddings endpoint):
//
//	x := toolsearch.NewSemantic(toolsearch.Semantic{Embedder: client})
//	defer x.Close()
//	hits := x.SearchContext(ctx, "homestays in Paris", 5, nil) // finds airbnb_search

// # What the search tool returns, and why
//
// The host's search tool answers with each hit's full definition (Hit.Def:
// name, title, description, inputSchema, annotations, as the provider wrote
// it, under the name clients call it by), best first, and with nothing of
// the score. A model that found a tool must be able to call it correctly
// at once: the input schema is what it needs for that, and a name and a
// summary alone would cost it a second round trip per tool. A few full
// definitions (5 are a few thousand characters) are still a small fraction
// of the whole list (527 tools of 70 servers are about 373,000).
//
// # How it ranks
//
// Each tool is a document of four fields: its name, its title, its
// description, and its parameters (the names, titles and descriptions of
// its inputSchema's properties, nested objects and arrays' items to depth
// 3). Text becomes terms this way:
//
//   - identifiers are split at '_', '-', '.' and case changes
//     ("get_current_time", "getCurrentTime": get, current, time); a word
//     with case changes is also kept whole ("arXiv": ar, xiv, arxiv);
//   - Lucene's English stop words (33 articles, conjunctions, prepositions)
//     and one-letter tokens are dropped: longer lists drop words that say
//     what a tool does or when ("all", "now", "before", "up");
//   - English words are stemmed with Snowball's English (Porter2) stemmer
//     (github.com/kljensen/snowball: MIT, no dependencies, checked against
//     Snowball's vocabulary): "files", "filing", "file" are one term;
//   - runs of Han, Hiragana and Katakana become overlapping character
//     pairs, the usual dictionary-free way to match CJK text (some
//     providers describe their tools in Chinese).
//
// A tool's score is BM25F (k1 1.2, b 0.75) over its fields, weighted name
// 3, title 3, description 1, parameters 0.5, plus its provider's score:
// BM25F over the providers' own documents (name, title, description), so a
// query that matches what a provider is about ("Korean stock market",
// "Word document") lifts all its tools, which then stand in the order of
// their own match. Equal scores are ordered by provider, then name. In
// plughost a provider is a plugin, its Title and Description what the
// plugin says of itself in Describe (pluginproto.About; a wrapped MCP
// server's serverInfo), carried by the catalog to the index.
//
// # Measured
//
// On ../shared/toolsearch (LiveMCPBench: 527 tools of 70 servers, 49
// development tasks; TestRanking prints the table), recall@1/5/10 |
// hit@1/5/10:
//
//	plain BM25 (the README's)   0.187 0.376 0.434 | 0.408 0.633 0.714
//	this package                0.185 0.393 0.442 | 0.388 0.633 0.673
//	  without identifier split  0.136 0.347 0.418 | 0.327 0.571 0.633
//	  without stop words        0.124 0.386 0.457 | 0.306 0.612 0.673
//	  without stemming          0.160 0.386 0.432 | 0.347 0.633 0.673
//	  without CJK bigrams       0.185 0.403 0.442 | 0.388 0.653 0.673
//	  without field weights     0.145 0.396 0.439 | 0.327 0.633 0.673
//	  without provider stage    0.155 0.344 0.391 | 0.327 0.592 0.653
//
// The provider stage and identifier splitting carry the gain at 5 (about
// 0.05 of recall@5 each); stop words, stemming and field weights help at
// 1 (0.02 to 0.06 of recall@1) and move one task or two at 5; CJK bigrams
// cost one task here (the queries are English; the bigrams are for
// Chinese queries, and lengthen Chinese descriptions). Against plain
// BM25 the ranking gains 0.017 of recall@5 and 0.008 of recall@10, and
// ties at hit@5 (0.633). One task is 0.02 of hit@5, so differences under
// about 0.04 are within noise. What no variant moves are the tasks that
// need tools their text never names (a task that says "save it to
// /root/x.md" needs write_file; "homestays" needs airbnb_search; some
// tools are described only in Chinese): no lexical ranking finds those,
// and none of the principled variants tried beat 0.42 of recall@5 (per
// field weights from 1 to 3, a provider share from 0.25 to 2, word pairs,
// pseudo-relevance feedback, a cap of tools per provider; splitting a task
// into its clauses and fusing their searches, 0.395 to 0.420; expanding
// each query word by its nearest GloVe word vectors found in the tools'
// texts, 0.383 to 0.403). Word vectors averaged over a text rank far
// worse than words (0.08): a sentence model is what moves these tasks.
//
// # Ranking by meaning
//
// With an Embedder (NewSemantic), each tool's text (its provider's title
// and the start of its description, its name split into words, its title
// and description, at most 1000 bytes) is embedded in the background, in
// batches, once per distinct text (a reload that changes nothing embeds
// nothing), and the query at search time. The 100 visible tools nearest
// the query by cosine and the 100 best lexical matches are fused by
// reciprocal rank, Σ w/(10 + rank), the words at weight 1 and the
// meaning at 0.5. Measured with a real model that runs here, Google's
// Universal Sentence Encoder lite (512 dimensions, served by
// conformance/embeddings.mjs; BenchmarkSemanticRanking):
//
//	by words (New)                0.185 0.393 0.442 | 0.388 0.633 0.673
//	by meaning alone (cosine)     0.111 0.304 0.386 | 0.204 0.510 0.633
//	fused (NewSemantic)           0.201 0.437 0.464 | 0.429 0.673 0.694
//
// The fusion's two numbers were chosen on these 49 tasks among k 5, 10,
// 30, 60 and weights 0.5, 1, 1.5 (k 10 and 30 at weight 0.5 tie at 0.437
// of recall@5; 60, the usual value, gives 0.418); a stronger model (the
// operator's choice) should gain more than this small one. A tool is
// found by its words as soon as it is Set and by its meaning once its
// vector arrives; when the endpoint fails, searches rank by words.
//
// The product serves the same: with the corpus laid out as 70 plugins,
// search_tools through MCP scores exactly these figures
// (cmd/plughost's TestToolSearchCorpus; make bench BENCH_FLAGS='-only
// toolsearch' prints them with the search's latency through MCP).
//
// Speed (BenchmarkSearch10k, BenchmarkSet1000; 10,013 tools of 1,330
// providers, 2 shared cores; medians of runs from 125 to 185 µs): a
// search of the top 10 takes about 0.15 ms at the median for the
// development tasks (20 to 60 words, p99 under 1.5 ms) and 20 to 30 µs
// for a short query; replacing a provider's 1,000 tools takes 38 to 42 ms,
// most of it reading and analyzing the definitions before the index is
// locked, so searches go on meanwhile.
//
// # Why not a search library
//
// bleve (github.com/blevesearch/bleve/v2), the well-kept Go search
// library, was measured beside this package on the same data with the
// same analysis, fields and boosts (blevecmp/, its own module so that
// plughost's never holds it). It ranks worse (recall@5 0.332, hit@5 0.531:
// it sums per-field BM25 scores with a coordination factor where this
// package saturates the weighted sum of frequencies once, BM25F), takes
// 14 ms at the median to search 10,013 tools where this package takes
// 0.14 ms, and brings 53 modules. This package needs no persistence, no
// query language and no segments, which is most of a search library.
package toolsearch
