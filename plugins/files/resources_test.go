package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
)

// resourceURIs lists the plugin's resources' URIs.
func resourceURIs(t *testing.T, p *pluginproto.Plugin) []string {
	t.Helper()
	var uris []string
	for _, raw := range p.Resources() {
		var r struct{ URI string }
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	return uris
}

func TestWorkspaceFilesAreResources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "notes", ".hidden"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"notes/today.txt":      "hello",
		"notes/.hidden/x.txt":  "not listed",
		"picture.bin":          "\xff\xfe\x00",
		".secret":              "not listed",
		"notes/data/plan.json": `{"a":1}`,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, c := newPlugin(dir)
	c.files = &workspaceFiles{p: p, dir: dir, known: map[string]fileState{}}
	c.files.sync()
	want := []string{"file://" + dir + "/notes/data/plan.json", "file://" + dir + "/notes/today.txt", "file://" + dir + "/picture.bin"}
	if got := resourceURIs(t, p); !slices.Equal(got, want) {
		t.Fatalf("resources = %v, want %v", got, want)
	}
	text, err := pluginhost.Of(p).ReadResource(t.Context(), &pluginhost.ReadRequest{URI: want[1]})
	if err != nil || !strings.Contains(string(text), `"text":"hello"`) || !strings.Contains(string(text), `"mimeType":"text/plain`) {
		t.Errorf("read today.txt = %s, %v", text, err)
	}
	blob, err := pluginhost.Of(p).ReadResource(t.Context(), &pluginhost.ReadRequest{URI: want[2]})
	if err != nil || !strings.Contains(string(blob), `"blob":"//4A"`) {
		t.Errorf("read picture.bin = %s, %v", blob, err)
	}

	// A file written by create_file becomes a resource; a removed one goes.
	res, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "create_file", Arguments: json.RawMessage(`{"filename":"new.txt","content":"fresh"}`)})
	if err != nil || strings.Contains(string(res), "isError") {
		t.Fatal(string(res), err)
	}
	if err := os.Remove(filepath.Join(dir, "picture.bin")); err != nil {
		t.Fatal(err)
	}
	c.files.sync()
	want = []string{"file://" + dir + "/new.txt", want[0], want[1]}
	if got := resourceURIs(t, p); !slices.Equal(got, want) {
		t.Errorf("after create and remove, resources = %v, want %v", got, want)
	}
}

// TestWorkspaceWatched checks that inotify brings a new file in, without
// the plugin's own create_file.
func TestWorkspaceWatched(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p, _ := newPlugin(dir)
	synced := make(chan struct{}, 1)
	w := serveFiles(p, dir)
	w.mu.Lock()
	w.afterSync = func() {
		select {
		case synced <- struct{}{}:
		default:
		}
	}
	w.mu.Unlock()
	if err := os.WriteFile(filepath.Join(dir, "later.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "file://" + dir + "/later.txt"
	for !slices.Contains(resourceURIs(t, p), want) {
		select {
		case <-synced:
		case <-time.After(10 * time.Second):
			t.Fatalf("resources = %v; the new file never appeared", resourceURIs(t, p))
		}
	}
}
