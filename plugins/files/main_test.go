package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/plughost/plughost/internal/pluginhost"
)

type result struct {
	Content []struct{ Text string }
	IsError bool
}

func createFile(t *testing.T, workspace string, args any) result {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := newPlugin(workspace)
	raw, err := pluginhost.Of(p).CallTool(t.Context(), &pluginhost.CallRequest{Tool: "create_file", Arguments: b})
	if err != nil {
		t.Fatal(err)
	}
	var r result
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Content) != 1 {
		t.Fatalf("result %s: want one content block", raw)
	}
	return r
}

// snapshot lists every path under dir with its type, size and content, so a
// test can tell that nothing was written.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := make(map[string]string)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			files[rel] = "symlink " + target
			return err
		case d.IsDir():
			files[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			files[rel] = "file " + string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestCreateFileRefuses(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		filename  any  // string, or nil to leave it out
		noContent bool // leave content out
		// workspace is "ok" (a prepared temporary workspace), "unset" or
		// "missing" (a path that does not exist).
		workspace string
		want      string
	}{
		"absolute path":         {filename: "OUTSIDE/x.txt", want: "absolute paths are not allowed"},
		"dot-dot escaping":      {filename: "../x.txt", want: `a ".." component is not allowed`},
		"dot-dot staying":       {filename: "sub/../x.txt", want: `a ".." component is not allowed`},
		"dot-dot last":          {filename: "sub/..", want: `a ".." component is not allowed`},
		"empty name":            {filename: "", want: "the filename is empty"},
		"workspace itself":      {filename: ".", want: "names the workspace itself"},
		"trailing slash":        {filename: "sub/", want: "names a directory"},
		"NUL byte":              {filename: "a\x00b", want: "NUL byte"},
		"existing directory":    {filename: "sub", want: "it exists and is not a regular file"},
		"parent symlink out":    {filename: "out/x.txt", want: `"out" is a symbolic link leading outside the workspace`},
		"deep parent symlink":   {filename: "sub/out/new/x.txt", want: `"sub/out" is a symbolic link leading outside the workspace`},
		"final symlink out":     {filename: "victim.txt", want: `"victim.txt" is a symbolic link leading outside the workspace`},
		"dangling symlink out":  {filename: "dangling.txt", want: `"dangling.txt" is a symbolic link leading outside the workspace`},
		"absolute symlink":      {filename: "abs/x.txt", want: `"abs" is a symbolic link leading outside the workspace`},
		"missing filename":      {filename: nil, want: `missing required argument "filename"`},
		"missing content":       {filename: "x.txt", noContent: true, want: `missing required argument "content"`},
		"filename not a string": {filename: 7, want: `invalid arguments for tool "create_file"`},
		"workspace unset":       {filename: "x.txt", workspace: "unset", want: "no workspace: the host granted none (start plughost with --workspace DIR)"},
		"workspace missing":     {filename: "x.txt", workspace: "missing", want: "cannot be opened"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := t.TempDir()
			ws, outside := filepath.Join(base, "workspace"), filepath.Join(base, "outside")
			for _, dir := range []string{filepath.Join(ws, "sub"), outside} {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(outside, "victim.txt"), []byte("original"), 0o644); err != nil {
				t.Fatal(err)
			}
			for link, target := range map[string]string{
				"out":          "../outside",
				"sub/out":      "../../outside",
				"victim.txt":   "../outside/victim.txt",
				"dangling.txt": "../outside/new.txt",
				"abs":          outside,
			} {
				if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
					t.Fatal(err)
				}
			}
			beforeWS, beforeOut := snapshot(t, ws), snapshot(t, outside)

			args := map[string]any{"content": "payload"}
			if tc.filename != nil {
				fn := tc.filename
				if s, ok := fn.(string); ok {
					fn = strings.Replace(s, "OUTSIDE", outside, 1)
				}
				args["filename"] = fn
			}
			if tc.noContent {
				delete(args, "content")
			}
			workspace := ws
			switch tc.workspace {
			case "unset":
				workspace = ""
			case "missing":
				workspace = filepath.Join(base, "nowhere")
			}

			r := createFile(t, workspace, args)
			if !r.IsError || !strings.Contains(r.Content[0].Text, tc.want) {
				t.Errorf("got %q (isError %v), want an isError result containing %q", r.Content[0].Text, r.IsError, tc.want)
			}
			if diff := cmp.Diff(beforeWS, snapshot(t, ws)); diff != "" {
				t.Errorf("workspace changed (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(beforeOut, snapshot(t, outside)); diff != "" {
				t.Errorf("outside changed (-before +after):\n%s", diff)
			}
			if _, err := os.Stat(filepath.Join(base, "nowhere")); err == nil {
				t.Error("the missing workspace was created")
			}
		})
	}
}

func TestCreateFileWrites(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	ws, outside := filepath.Join(base, "workspace"), filepath.Join(base, "outside")
	for _, dir := range []string{filepath.Join(ws, "real"), outside} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A symbolic link that stays inside the workspace is followed.
	if err := os.Symlink("real", filepath.Join(ws, "alias")); err != nil {
		t.Fatal(err)
	}

	steps := []struct {
		filename, content, want string
	}{
		{"top.txt", "hi", "wrote 2 bytes to top.txt"},
		{"notes/2026/today.txt", "dear diary", "wrote 10 bytes to notes/2026/today.txt"},
		{"./notes//2026/today.txt", "overwritten", "wrote 11 bytes to ./notes//2026/today.txt"},
		{"alias/via-link.txt", "", "wrote 0 bytes to alias/via-link.txt"},
	}
	for _, s := range steps {
		r := createFile(t, ws, map[string]string{"filename": s.filename, "content": s.content})
		if r.IsError || r.Content[0].Text != s.want {
			t.Errorf("create_file %q = %q (isError %v), want %q", s.filename, r.Content[0].Text, r.IsError, s.want)
		}
	}
	want := map[string]string{
		".":                    "dir",
		"top.txt":              "file hi",
		"notes":                "dir",
		"notes/2026":           "dir",
		"notes/2026/today.txt": "file overwritten",
		"real":                 "dir",
		"real/via-link.txt":    "file ",
		"alias":                "symlink real",
	}
	if diff := cmp.Diff(want, snapshot(t, ws)); diff != "" {
		t.Errorf("workspace (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{".": "dir"}, snapshot(t, outside)); diff != "" {
		t.Errorf("something was written outside the workspace (-want +got):\n%s", diff)
	}
}
