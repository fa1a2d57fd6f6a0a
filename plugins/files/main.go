// Command files is a bundled plughost plugin with one tool, create_file,
// which writes a file inside a workspace directory and nowhere else, and
// the workspace's files as resources, kept up to date as files come, go
// and change. The workspace is the writable directory the host grants it
// under the name "workspace" (plughost serve --workspace DIR, or a
// dir "workspace" block in its sandbox policy). See README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/plughost/plughost/pluginproto"
)

// version is set at build time (-X main.version=...).
var version = "dev"

// workspaceDir is the name of the granted directory create_file writes
// into.
const workspaceDir = "workspace"

func main() {
	workspace, err := pluginproto.Granted().WritableDir(workspaceDir)
	p, c := newPlugin(workspace)
	if err != nil {
		c.none = err.Error()
	}
	if workspace != "" {
		c.files = serveFiles(p, workspace)
	}
	pluginproto.Serve(p)
}

// newPlugin returns the files plugin writing into workspace ("" when the
// host granted none: every call then fails, saying why), and its tool's
// creator, whose files (nil: none) learn of each file it writes.
func newPlugin(workspace string) (*pluginproto.Plugin, *creator) {
	p := pluginproto.New("files", version)
	p.SetAbout(pluginproto.About{Title: "Workspace files", Description: "Writes files into the workspace directory and serves its files as resources."})
	c := &creator{workspace: workspace}
	p.AddTool(pluginproto.Tool{
		Name:  "create_file",
		Title: "Create a file",
		Description: "Creates or overwrites a file in the workspace directory, creating missing directories. " +
			"filename is relative to the workspace, such as notes/today.txt; absolute paths, '..' and " +
			"symbolic links leading outside the workspace are refused.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"filename":{"type":"string","description":"Path of the file relative to the workspace, such as notes/today.txt."},` +
			`"content":{"type":"string","description":"The file's complete new content."}},` +
			`"required":["filename","content"],"additionalProperties":false}`),
		Annotations: &pluginproto.Annotations{
			ReadOnlyHint: new(false), DestructiveHint: new(true), IdempotentHint: new(true), OpenWorldHint: new(false),
		},
	}, c.createFile)
	return p, c
}

type creator struct {
	workspace string
	none      string // why there is no workspace, when there is none
	files     *workspaceFiles
}

func (c *creator) createFile(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	var args struct {
		Filename *string `json:"filename"`
		Content  *string `json:"content"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	switch {
	case args.Filename == nil:
		return pluginproto.ErrorResult(`missing required argument "filename"`), nil
	case args.Content == nil:
		return pluginproto.ErrorResult(`missing required argument "content"`), nil
	}
	name, content := *args.Filename, *args.Content
	if err := checkName(name); err != nil {
		return pluginproto.ErrorResult("refusing to write %q: %v", name, err), nil
	}
	if c.workspace == "" {
		why := c.none
		if why == "" {
			why = "the host granted none (start plughost with --workspace DIR)"
		}
		return pluginproto.ErrorResult("no workspace: %s", why), nil
	}
	root, err := os.OpenRoot(c.workspace)
	if err != nil {
		return pluginproto.ErrorResult("the workspace %s cannot be opened: %v", c.workspace, err), nil
	}
	defer root.Close()

	// os.Root resolves every component inside the workspace and refuses,
	// without a race, symbolic links that lead out of it.
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return refuse(root, name, err), nil
		}
	}
	if fi, err := root.Stat(name); err == nil && !fi.Mode().IsRegular() {
		return pluginproto.ErrorResult("refusing to write %q: it exists and is not a regular file (%s)", name, fi.Mode().Type()), nil
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return refuse(root, name, err), nil
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return pluginproto.ErrorResult("writing %q failed: %v", name, err), nil
	}
	if c.files != nil {
		c.files.changed()
	}
	return pluginproto.TextResult(fmt.Sprintf("wrote %d bytes to %s", len(content), name)), nil
}

// checkName refuses names that are empty, absolute or contain "..", before
// anything is touched.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("the filename is empty")
	case strings.ContainsRune(name, 0):
		return errors.New("the filename contains a NUL byte")
	case strings.HasPrefix(name, "/"):
		return errors.New("absolute paths are not allowed; give a path relative to the workspace")
	case strings.HasSuffix(name, "/"):
		return errors.New("the filename names a directory")
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return errors.New(`a ".." component is not allowed`)
		}
	}
	if path.Clean(name) == "." {
		return errors.New("the filename names the workspace itself")
	}
	return nil
}

// refuse explains why os.Root refused name: it names the symbolic link that
// leads outside the workspace when there is one, else gives the error.
func refuse(root *os.Root, name string, err error) *pluginproto.Result {
	parts := strings.Split(path.Clean(name), "/")
	for i := range parts {
		prefix := strings.Join(parts[:i+1], "/")
		fi, lerr := root.Lstat(prefix)
		if lerr != nil {
			break // missing: nothing further exists to lead anywhere
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		if _, serr := root.Stat(prefix); serr != nil && !errors.Is(serr, fs.ErrNotExist) {
			return pluginproto.ErrorResult("refusing to write %q: %q is a symbolic link leading outside the workspace", name, prefix)
		}
	}
	return pluginproto.ErrorResult("refusing to write %q: %v", name, err)
}
