package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
)

// Files is a registry of server.json documents on disk, for a host
// without the network: a file holding one document or a JSON array of
// them (the shape of the official registry's data/seed.json), or a
// directory of such *.json files (not descended into). Every document
// is validated against the official schema when it is read; one that
// fails is an error naming its file, whatever server was asked for.
type Files struct {
	Path string
}

// NewFiles returns the source of the documents at path.
func NewFiles(path string) *Files { return &Files{Path: path} }

func (f *Files) String() string { return f.Path }

// Get returns the server name at version; for "" or "latest", its
// highest version (semantic versions compared as such, another version
// after them in file order).
func (f *Files) Get(_ context.Context, name, version string) (*Entry, error) {
	all, err := f.load()
	if err != nil {
		return nil, err
	}
	var found []Entry
	for _, e := range all {
		if e.Server.Name == name {
			found = append(found, e)
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%s: %w in %s", name, ErrNotFound, f.Path)
	}
	if version == "" || version == "latest" {
		e := latest(found)
		return &e, nil
	}
	for _, e := range found {
		if e.Server.Version == version {
			return &e, nil
		}
	}
	return nil, fmt.Errorf("%s@%s: %w in %s (it has %s)", name, version, ErrNotFound, f.Path, strings.Join(versions(found), ", "))
}

// Search returns the highest version of every server whose name holds
// query, by name.
func (f *Files) Search(_ context.Context, query string, limit int) ([]Entry, error) {
	all, err := f.load()
	if err != nil {
		return nil, err
	}
	byName := map[string][]Entry{}
	for _, e := range all {
		if strings.Contains(strings.ToLower(e.Server.Name), strings.ToLower(query)) {
			byName[e.Server.Name] = append(byName[e.Server.Name], e)
		}
	}
	var out []Entry
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, latest(byName[name]))
	}
	if limit <= 0 || limit > MaxSearchResults {
		limit = MaxSearchResults
	}
	return out[:min(len(out), limit)], nil
}

// latest is the entry of the highest version.
func latest(es []Entry) Entry {
	best := es[0]
	for _, e := range es[1:] {
		a, b := "v"+best.Server.Version, "v"+e.Server.Version
		if !semver.IsValid(a) || !semver.IsValid(b) || semver.Compare(b, a) >= 0 {
			best = e
		}
	}
	best.IsLatest = true
	return best
}

func versions(es []Entry) []string {
	var v []string
	for _, e := range es {
		v = append(v, e.Server.Version)
	}
	return v
}

// load reads every document of the source.
func (f *Files) load() ([]Entry, error) {
	st, err := os.Stat(f.Path)
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", f.Path, err)
	}
	files := []string{f.Path}
	if st.IsDir() {
		if files, err = filepath.Glob(filepath.Join(f.Path, "*.json")); err != nil {
			return nil, err
		}
	}
	var out []Entry
	for _, file := range files {
		docs, err := readDocuments(file)
		if err != nil {
			return nil, fmt.Errorf("registry %s: %w", file, err)
		}
		for i, raw := range docs {
			if len(out) >= MaxDocuments {
				return nil, fmt.Errorf("registry %s: over %d server.json documents", f.Path, MaxDocuments)
			}
			s, err := Parse(raw)
			if err != nil {
				return nil, fmt.Errorf("registry %s: document %d %w", file, i+1, err)
			}
			out = append(out, Entry{Server: *s, Raw: raw})
		}
	}
	return out, nil
}

// readDocuments reads a file of one server.json document or an array of
// them, at most MaxResponse*4 bytes.
func readDocuments(file string) ([]json.RawMessage, error) {
	fh, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	const max = 4 * MaxResponse
	b, err := io.ReadAll(io.LimitReader(fh, max+1))
	if err != nil {
		return nil, err
	}
	if len(b) > max {
		return nil, fmt.Errorf("over %d bytes", max)
	}
	b = bytes.TrimSpace(b)
	if bytes.HasPrefix(b, []byte("[")) {
		var docs []json.RawMessage
		if err := json.Unmarshal(b, &docs); err != nil {
			return nil, fmt.Errorf("not a JSON array of server.json documents: %w", err)
		}
		return docs, nil
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("not JSON")
	}
	return []json.RawMessage{b}, nil
}
