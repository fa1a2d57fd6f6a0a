package trust

import "encoding/json"

// Comparing what a plugin lists with what was approved: each time the
// plugin lists its definitions (at its start, and after each change it
// announces), a Comparer rules on every one of them. See the package
// documentation, "Definitions".

// HoldsDefinitions reports whether in mode m a definition that differs
// from its approval is held back (pinned, signed) rather than served and
// told (open, and "": no trust check).
func (m Mode) HoldsDefinitions() bool {
	return m == ModePinned || m == ModeSigned
}

// DefStatus is how a listed definition compares with its approval.
type DefStatus string

// The statuses of a listed definition.
const (
	// DefAsApproved: its pin is the approved one.
	DefAsApproved DefStatus = "approved"
	// DefChanged: it is approved with another pin (or only as something
	// that could not be fingerprinted).
	DefChanged DefStatus = "changed"
	// DefNew: nothing is approved under its key.
	DefNew DefStatus = "new"
)

// Ruling is what becomes of one listed definition.
type Ruling struct {
	// Definition is the definition as listed, Pin its fingerprint (""
	// when it cannot be fingerprinted: no approval matches it then).
	Definition Definition
	Pin        string
	// Approved is what it was compared with: the approved Pinned of its
	// key; zero when DefNew.
	Approved Pinned
	Status   DefStatus
	// Held says that clients are not served the definition as listed:
	// a changed or new one, in a mode that holds definitions back.
	Held bool
	// Served is what clients are served: the listed JSON; for a held
	// changed definition the approved JSON (nil when only its pin was
	// approved); nil for a held new one. Nil means not served.
	Served json.RawMessage
}

// Comparer compares a plugin's listings with what was approved, one
// listing after another; keep one per plugin. The zero Comparer is
// ready. It is not safe for concurrent use.
type Comparer struct {
	// baseline is what listings are compared with when the approval
	// pins no definitions: the first listing of the binary of digest; in
	// mode open, the last listing.
	baseline map[string]Pinned
	digest   string
}

// Compare rules on each definition of listed, in its order, under v, the
// plugin's last verdict. Listed definitions are compared with those v
// approves (v.Definitions). When v pins none (mode open, mode signed
// without an approval, an approval that recorded only the digest), they
// are compared with a baseline: the first listing of the binary of
// v.Digest, so that a definition a running plugin adds or changes later is
// held back all the same; first reports that listed became that
// baseline. In mode open nothing is held, a change is only reported
// (DefChanged), and each listing is the baseline of the next.
func (c *Comparer) Compare(v Verdict, listed []Definition) (rulings []Ruling, first bool) {
	pins := pinAll(listed)
	approved := v.Definitions
	if approved == nil {
		if c.baseline == nil || c.digest != v.Digest {
			c.baseline, c.digest, first = pins, v.Digest, true
		}
		approved = c.baseline
	}
	holds := v.Mode.HoldsDefinitions()
	rulings = make([]Ruling, 0, len(listed))
	for _, d := range listed {
		p := pins[d.Key()].Pin
		a, ok := approved[d.Key()]
		r := Ruling{Definition: d, Pin: p, Approved: a, Status: DefAsApproved, Served: d.JSON}
		switch {
		case !ok:
			r.Status = DefNew
		case a.Pin != p:
			r.Status = DefChanged
		case a.Pin == "" && holds:
			// Neither could be fingerprinted: nothing vouches for it.
			r.Status = DefChanged
		}
		if holds && r.Status != DefAsApproved {
			r.Held, r.Served = true, nil
			if r.Status == DefChanged {
				r.Served = a.Definition
			}
		}
		rulings = append(rulings, r)
	}
	if !holds {
		c.baseline = pins // the next change is told against this one
	}
	return rulings, first
}

// pinAll fingerprints defs by key. A definition that cannot be
// fingerprinted (not a JSON object) gets an empty pin, which no approval
// matches; the catalog refuses it anyway.
func pinAll(defs []Definition) map[string]Pinned {
	out := make(map[string]Pinned, len(defs))
	for _, d := range defs {
		p, err := Pin(d)
		if err != nil {
			p = Pinned{Definition: d.JSON}
		}
		out[d.Key()] = p
	}
	return out
}
