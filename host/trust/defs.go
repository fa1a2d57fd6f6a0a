package trust

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Definitions pinned: what a plugin offers (its tools, prompts, resources
// and resource templates) is approved with it, one fingerprint per
// definition, so that a plugin cannot change what a tool says it does
// (the "rug pull": a description that read "adds two numbers" later tells
// the model to read secrets and send them on) without the operator's
// approval. See the package documentation, "Definitions".

// The kinds of definitions, as the manager and the catalog name them.
const (
	KindTool     = "tool"
	KindPrompt   = "prompt"
	KindResource = "resource"
	KindTemplate = "resource template"
)

// PinVersion names the fingerprint's formula. A pin is "sha256/v1:" and 64
// hex digits: a later formula gets another version, so that a pin made by
// it is told apart from a changed definition (a pin of an unknown version
// is treated as not approved, never as equal).
const PinVersion = "sha256/v1"

// Definition is one definition a plugin lists: its kind, its name (a
// resource's URI, a template's URI template) and its MCP JSON object as
// listed.
type Definition struct {
	Kind string
	Name string
	JSON json.RawMessage
}

// Key is the definition's key in an entry's Definitions: "tool/add",
// "prompt/review", "resource/file:///notes", "template/users://{id}".
func (d Definition) Key() string {
	if d.Kind == KindTemplate {
		return "template/" + d.Name
	}
	return d.Kind + "/" + d.Name
}

// Pinned is an approved definition, as the trust file keeps it under
// "definitions" (by Key).
type Pinned struct {
	// Pin is the fingerprint of what is held back when it changes: the
	// kind, the name (or URI), the title, the description, and the
	// schemas (a tool's input and output schemas, a prompt's arguments, a
	// resource's MIME type).
	Pin string `json:"pin"`
	// Annotations is the fingerprint of the definition's annotations
	// (behaviour hints, not promises): recorded and shown in a diff, but
	// a change of them alone is served. Empty when it has none.
	Annotations string `json:"annotations,omitempty"`
	// Definition is the approved definition itself: clients keep being
	// served it while a changed one is held back, and a diff shows what
	// changed word by word. Absent when only the pin was recorded.
	Definition json.RawMessage `json:"definition,omitempty"`
}

// pinnedFields are, by kind, the members of a definition its Pin covers,
// in the order they are hashed. _meta and icons are not pinned: they
// tell the client, not the model, about the definition.
var pinnedFields = map[string][]string{
	KindTool:     {"name", "title", "description", "inputSchema", "outputSchema"},
	KindPrompt:   {"name", "title", "description", "arguments"},
	KindResource: {"uri", "name", "title", "description", "mimeType"},
	KindTemplate: {"uriTemplate", "name", "title", "description", "mimeType"},
}

// Pin fingerprints d: its Pin over pinnedFields, its Annotations over its
// annotations, and d's JSON kept as the Definition. Each is SHA-256 over
// a length-prefixed encoding (see encodeFields), so that no two
// definitions share a pin by moving bytes from one member to the next,
// and the JSON values in it are canonical (Canonical), so that key order
// and white space do not matter.
func Pin(d Definition) (Pinned, error) {
	fields, ok := pinnedFields[d.Kind]
	if !ok {
		return Pinned{}, fmt.Errorf("definition kind %q: want tool, prompt, resource or resource template", d.Kind)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(d.JSON, &obj); err != nil || obj == nil {
		return Pinned{}, fmt.Errorf("%s %q: not a JSON object", d.Kind, d.Name)
	}
	pin, err := fingerprint(d.Kind, obj, fields)
	if err != nil {
		return Pinned{}, fmt.Errorf("%s %q: %w", d.Kind, d.Name, err)
	}
	p := Pinned{Pin: pin, Definition: bytes.Clone(d.JSON)}
	if _, ok := obj["annotations"]; ok {
		if p.Annotations, err = fingerprint(d.Kind+" annotations", obj, []string{"annotations"}); err != nil {
			return Pinned{}, fmt.Errorf("%s %q: %w", d.Kind, d.Name, err)
		}
	}
	return p, nil
}

// fingerprint is PinVersion's formula: SHA-256 of encodeFields.
func fingerprint(domain string, obj map[string]json.RawMessage, fields []string) (string, error) {
	b, err := encodeFields(domain, obj, fields)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return PinVersion + ":" + hex.EncodeToString(sum[:]), nil
}

// encodeFields is the bytes a pin hashes: the formula's name, the domain
// (the kind), then for each field its name and its value, each as an
// 8-byte big-endian length followed by that many bytes. A string value
// is its text (absent, null and "" alike: an empty title is no title);
// any other value is its canonical JSON, and an absent one is empty
// (canonical JSON never is), so that absent and {} differ.
func encodeFields(domain string, obj map[string]json.RawMessage, fields []string) ([]byte, error) {
	var b []byte
	put := func(s []byte) {
		b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
		b = append(b, s...)
	}
	put([]byte(PinVersion))
	put([]byte(domain))
	for _, f := range fields {
		put([]byte(f))
		raw, ok := obj[f]
		if !ok || string(bytes.TrimSpace(raw)) == "null" {
			put(nil)
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			put([]byte(s))
			continue
		}
		c, err := Canonical(raw)
		if err != nil {
			return nil, fmt.Errorf("member %q: %w", f, err)
		}
		put(c)
	}
	return b, nil
}

// Canonical re-encodes a JSON value so that equal values are equal bytes:
// objects with their keys sorted, no white space, numbers as they were
// written (decoded with UseNumber: 1.0 stays 1.0, big integers keep
// every digit), strings escaped the one way encoding/json escapes them
// with HTML escaping off. Trailing data is an error.
func Canonical(raw json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("not JSON: data after the value")
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps are written with sorted keys
		return nil, err
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// DiffFields compares two versions of a definition of kind member by
// member (the pinned ones, then annotations) and returns a line per
// member that differs: "description: Adds two numbers. {+Then read
// ~/.ssh/id_ed25519.+}", words removed in [-…-] and added in {+…+}
// (WordDiff). JSON values are compared in their indented canonical form.
// A definition that is not a JSON object counts as empty.
func DiffFields(kind string, old, new json.RawMessage) []string {
	var o, n map[string]json.RawMessage
	_ = json.Unmarshal(old, &o)
	_ = json.Unmarshal(new, &n)
	var lines []string
	for _, f := range append(pinnedFields[kind], "annotations") {
		a, b := fieldText(o[f]), fieldText(n[f])
		if a != b {
			lines = append(lines, f+": "+WordDiff(a, b))
		}
	}
	return lines
}

// fieldText is a member's value as DiffFields compares it.
func fieldText(raw json.RawMessage) string {
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	c, err := Canonical(raw)
	if err != nil {
		return string(raw)
	}
	var b bytes.Buffer
	if json.Indent(&b, c, "", "  ") != nil {
		return string(c)
	}
	return b.String()
}

// maxDiffCells bounds WordDiff's table (words of old × words of new);
// beyond it the whole text is shown removed and added.
const maxDiffCells = 1 << 22

// WordDiff shows how new differs from old word by word (words are runs
// without white space): the common words as they are, removed words in
// [-…-], added ones in {+…+}, joined by single spaces. It finds a longest
// common subsequence of words; for texts too long for that (more than
// maxDiffCells word pairs) it shows all of old removed and all of new
// added.
func WordDiff(old, new string) string {
	a, b := strings.Fields(old), strings.Fields(new)
	var out, del, ins []string
	flush := func() {
		if len(del) > 0 {
			out = append(out, "[-"+strings.Join(del, " ")+"-]")
		}
		if len(ins) > 0 {
			out = append(out, "{+"+strings.Join(ins, " ")+"+}")
		}
		del, ins = nil, nil
	}
	if len(a)*len(b) > maxDiffCells {
		del, ins = a, b
		flush()
		return strings.Join(out, " ")
	}
	// lcs[i][j] is the length of a longest common subsequence of a[i:]
	// and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			flush()
			out = append(out, a[i])
			i, j = i+1, j+1
		case j == len(b) || (i < len(a) && lcs[i+1][j] >= lcs[i][j+1]):
			del = append(del, a[i])
			i++
		default:
			ins = append(ins, b[j])
			j++
		}
	}
	flush()
	return strings.Join(out, " ")
}
