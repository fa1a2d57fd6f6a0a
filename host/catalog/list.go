package catalog

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/plughost/plughost/host/naming"
	"github.com/plughost/plughost/host/tool"
)

// list is one exposed list (tools, resources, templates or prompts) as its
// pages serve it: items sorted by a unique key, pre-encoded.
type list struct {
	keys  []string          // sorted, unique
	items []json.RawMessage // items[i] is the JSON of keys[i]; never nil
	about []*tool.Item      // about[i] is items[i] as a tool.Guard sees it
}

// listKind is what one list's cursors look like.
type listKind struct {
	method string                // for messages: "tools/list"
	prefix string                // marks this list's cursors
	valid  func(key string) bool // could this list have issued a cursor for key?
}

// The lists. Each has its own cursor prefix, so that a cursor of one list
// is refused by another.
var (
	toolsList     = listKind{"tools/list", "after:", naming.ValidExposed}
	promptsList   = listKind{"prompts/list", "prompts after:", naming.ValidExposed}
	resourcesList = listKind{"resources/list", "resources after:", validURIKey}
	templatesList = listKind{"resources/templates/list", "templates after:", validTemplateKey}
)

func newList(n int) list {
	return list{keys: make([]string, 0, n), items: make([]json.RawMessage, 0, n), about: make([]*tool.Item, 0, n)}
}

func (l *list) add(key string, item json.RawMessage, about *tool.Item) {
	l.keys = append(l.keys, key)
	l.items = append(l.items, item)
	l.about = append(l.about, about)
}

// page returns up to size items after the key cursor names ("" for the
// first page), and the cursor of the next page ("" on the last). The slice
// is shared and must not be modified.
func (l *list) page(k listKind, cursor string, size int) ([]json.RawMessage, string, error) {
	start, err := l.after(k, cursor)
	if err != nil {
		return nil, "", err
	}
	end := min(start+size, len(l.keys))
	next := ""
	if end < len(l.keys) {
		next = k.encode(l.keys[end-1])
	}
	return l.items[start:end:end], next, nil
}

// after returns the index of the first item after the key cursor names (0
// for ""), or an error wrapping tool.ErrInvalidCursor for a cursor k did
// not issue.
func (l *list) after(k listKind, cursor string) (int, error) {
	if cursor == "" {
		return 0, nil
	}
	last, ok := k.decode(cursor)
	if !ok {
		return 0, fmt.Errorf("%w: %s cursor %q was not issued by this server", tool.ErrInvalidCursor, k.method, truncate(cursor, 80))
	}
	i := sort.SearchStrings(l.keys, last)
	if i < len(l.keys) && l.keys[i] == last {
		i++
	}
	return i, nil
}

// same reports whether two lists serve the same items.
func (l *list) same(o *list) bool {
	if len(l.items) != len(o.items) {
		return false
	}
	for i := range l.items {
		if !bytes.Equal(l.items[i], o.items[i]) {
			return false
		}
	}
	return true
}

func (k listKind) encode(last string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(k.prefix + last))
}

func (k listKind) decode(cursor string) (last string, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "", false
	}
	last, ok = strings.CutPrefix(string(b), k.prefix)
	return last, ok && k.valid(last)
}

// validURIKey reports whether s could be a listed URI: not empty, UTF-8,
// no control characters (net/url refuses them).
func validURIKey(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return false
		}
	}
	return true
}

// templateKey is the sort key of a listed template: its URI template, then
// its provider. A NUL sorts before any byte of either, so the keys sort as
// the pairs do.
func templateKey(uriTemplate, provider string) string { return uriTemplate + "\x00" + provider }

func validTemplateKey(s string) bool {
	t, p, ok := strings.Cut(s, "\x00")
	return ok && validURIKey(t) && naming.ValidProvider(p)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
