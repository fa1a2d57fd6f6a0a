package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// corpusLines are a tools.jsonl of two servers whose tools say nothing
// of tides or trains: only almanac's description does, as the test sets
// it.
const corpusLines = `{"id":"ledger::add_entry","server":"ledger","name":"add_entry","description":"Adds an entry to the books.","inputSchema":{"type":"object","properties":{"amount":{"type":"number"}}},"server_title":"Ledger","server_description":"Bookkeeping for a small shop."}
{"id":"almanac::lookup","server":"almanac","name":"lookup","description":"Looks an entry up by its key.","inputSchema":{"type":"object","properties":{"key":{"type":"string"}}},"server_title":"Almanac","server_description":"%s"}
`

// TestToolSearchFindsByPluginDescription: a search finds a tool by words
// only its plugin's description holds (Describe's description, through
// the catalog to the index's provider stage), and finds it by the new
// words once the plugin is reloaded with another description.
func TestToolSearchFindsByPluginDescription(t *testing.T) {
	t.Parallel()
	tools := writeCorpus(t, "Tide tables and moon phases for harbours.")
	dir := t.TempDir()
	copyPlugin(t, "corpus", dir, "ledger")
	copyPlugin(t, "corpus", dir, "almanac")
	h := startTestHostIn(t, dir, []string{"--tool-search", "--config", corpusConfig(t, tools)})
	awaitFound(t, h, "harbour tides", "lookup", true)

	// The same tools, another description: a reload (a new file over the
	// plugin's) reaches the index.
	writeCorpusTo(t, tools, "Railway timetables of every station.")
	copyPlugin(t, "corpus", dir, "almanac")
	awaitFound(t, h, "railway timetables", "lookup", true)
	awaitFound(t, h, "harbour tides", "lookup", false)
}

// writeCorpus writes a tools.jsonl of corpusLines, almanac described as
// description, in a directory of its own that the sandboxed plugins may
// read (they run as another user when the tests run as root), and returns
// its path.
func writeCorpus(t *testing.T, description string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "plughost-corpus-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tools.jsonl")
	writeCorpusTo(t, path, description)
	return path
}

// writeCorpusTo replaces path with corpusLines, almanac described as
// description.
func writeCorpusTo(t *testing.T, path, description string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, fmt.Appendf(nil, corpusLines, description), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// corpusConfig writes a configuration granting every plugin read access
// to tools, the file corpusplugin serves, and returns its path.
func corpusConfig(t *testing.T, tools string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plughost.hcl")
	if err := os.WriteFile(path, fmt.Appendf(nil, "sandbox {\n  allow_read = [%q]\n}\n", tools), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
