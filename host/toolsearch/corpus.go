package toolsearch

import (
	"encoding/json"
	"math"
)

// corpus is an inverted index of documents with fields: for each term,
// the documents that hold it and how often in each field. Documents live
// in slots; a removed document's slot is reused by a later one.
type corpus struct {
	docs   []doc
	free   []int32        // free slots
	live   int            // documents in use
	sumLen [nFields]int64 // exact, so that churn leaves no rounding behind
	post   map[string][]posting

	weights [nFields]float64
	b       float64
	// norm[slot][f] is weights[f] / (1 - b + b·len/avglen) for the
	// document's field f: what one occurrence of a term in that field
	// counts in BM25F. Recomputed after each update (it depends on the
	// average lengths), so that a search multiplies instead of divides.
	norm [][nFields]float64
}

type doc struct {
	live     bool
	name     string
	provider string
	provSlot int32 // the provider's slot in Index.provs (tools only)
	def      json.RawMessage
	len      [nFields]int32
	terms    []string // distinct terms, to find the postings on removal
	key      textKey  // its embedded text (semantic ranking only)
}

// posting is one document holding a term: its slot and the term's
// frequency in each field.
type posting struct {
	doc int32
	tf  [nFields]uint16
}

// analyzed is one document's terms, ready to be added to a corpus.
type analyzed struct {
	name  string
	def   json.RawMessage
	len   [nFields]int32
	terms []string          // distinct
	tf    [][nFields]uint16 // for each of terms
}

// analyze reads the texts of each field of one document.
func analyze(a analyzer, name string, def json.RawMessage, fields *[nFields][]string) analyzed {
	d := analyzed{name: name, def: def}
	at := make(map[string]int)
	var buf []string
	for f := range nFields {
		for _, text := range fields[f] {
			buf = a.terms(buf[:0], text)
			d.len[f] += int32(len(buf))
			for _, t := range buf {
				i, ok := at[t]
				if !ok {
					i = len(d.terms)
					at[t] = i
					d.terms = append(d.terms, t)
					d.tf = append(d.tf, [nFields]uint16{})
				}
				if d.tf[i][f] < math.MaxUint16 {
					d.tf[i][f]++
				}
			}
		}
	}
	return d
}

func newCorpus(weights [nFields]float64, b float64) corpus {
	return corpus{post: make(map[string][]posting), weights: weights, b: b}
}

// add adds a document and returns its slot.
func (c *corpus) add(d analyzed, provider string, provSlot int32) int32 {
	var slot int32
	if n := len(c.free); n > 0 {
		slot = c.free[n-1]
		c.free = c.free[:n-1]
	} else {
		slot = int32(len(c.docs))
		c.docs = append(c.docs, doc{})
		c.norm = append(c.norm, [nFields]float64{})
	}
	c.docs[slot] = doc{live: true, name: d.name, provider: provider, provSlot: provSlot, def: d.def, len: d.len, terms: d.terms}
	for i, t := range d.terms {
		c.post[t] = append(c.post[t], posting{doc: slot, tf: d.tf[i]})
	}
	for f := range nFields {
		c.sumLen[f] += int64(d.len[f])
	}
	c.live++
	return slot
}

// remove removes the documents in slots. Each posting list that holds one
// of them is rewritten once, whatever the number of them it holds.
func (c *corpus) remove(slots []int32) {
	gone := make([]bool, len(c.docs))
	terms := make(map[string]bool)
	for _, s := range slots {
		gone[s] = true
		for _, t := range c.docs[s].terms {
			terms[t] = true
		}
	}
	for t := range terms {
		ps := c.post[t]
		kept := ps[:0]
		for _, p := range ps {
			if !gone[p.doc] {
				kept = append(kept, p)
			}
		}
		if len(kept) == 0 {
			delete(c.post, t)
		} else {
			c.post[t] = kept
		}
	}
	for _, s := range slots {
		for f := range nFields {
			c.sumLen[f] -= int64(c.docs[s].len[f])
		}
		c.docs[s] = doc{}
		c.norm[s] = [nFields]float64{}
		c.free = append(c.free, s)
		c.live--
	}
}

// renorm recomputes norm for the current average field lengths.
func (c *corpus) renorm() {
	var avg [nFields]float64
	for f := range nFields {
		if c.live > 0 {
			avg[f] = float64(c.sumLen[f]) / float64(c.live)
		}
	}
	for s := range c.docs {
		if !c.docs[s].live {
			continue
		}
		for f := range nFields {
			l := 1.0
			if avg[f] > 0 {
				l = 1 - c.b + c.b*float64(c.docs[s].len[f])/avg[f]
			}
			c.norm[s][f] = c.weights[f] / l
		}
	}
}
