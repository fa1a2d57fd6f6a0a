package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"mime"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/fsnotify/fsnotify"

	"github.com/plughost/plughost/pluginproto"
)

// The workspace's files as resources: each regular file is a resource
// (file:// and its absolute path), read as text when it is UTF-8 and as a
// blob otherwise. A file added or removed changes the list
// (notifications/resources/list_changed); a file written reports an update
// of its resource to the clients subscribed to it
// (notifications/resources/updated). The plugin learns of changes from
// inotify (fsnotify) and from its own create_file.

const (
	// maxFiles bounds the files listed; the rest are left out (logged).
	maxFiles = 1000
	// maxRead bounds a file read as a resource.
	maxRead = 4 << 20
	// settle is how long a burst of file events is gathered before the
	// workspace is scanned again.
	settle = 50 * time.Millisecond
)

// fileState is what tells a file's contents changed.
type fileState struct {
	size int64
	mod  time.Time
}

// workspaceFiles keeps the plugin's resources in step with the workspace.
type workspaceFiles struct {
	p   *pluginproto.Plugin
	dir string

	syncing sync.Mutex // one sync at a time, so an older scan never lands last

	mu        sync.Mutex
	known     map[string]fileState // by path relative to dir
	truncated bool                 // the last scan left files out
	timer     *time.Timer          // the pending rescan, if any
	afterSync func()               // tests' hook, called after each sync
}

// serveFiles lists the files of dir as p's resources and keeps watching
// them. A workspace that cannot be watched is still listed; its changes
// are then seen only after create_file.
func serveFiles(p *pluginproto.Plugin, dir string) *workspaceFiles {
	w := &workspaceFiles{p: p, dir: dir, known: map[string]fileState{}}
	p.Offer(pluginproto.Offers{Resources: true, ResourceSubscriptions: true})
	w.sync()
	if err := w.watch(); err != nil {
		log.Printf("files: the workspace is not watched, changes are seen only after create_file: %v", err)
	}
	return w
}

// uri is the resource URI of the file rel.
func (w *workspaceFiles) uri(rel string) string {
	return (&url.URL{Scheme: "file", Path: filepath.Join(w.dir, filepath.FromSlash(rel))}).String()
}

// scan returns the workspace's regular files, at most maxFiles of them in
// path order, skipping hidden files and directories.
func (w *workspaceFiles) scan() (map[string]fileState, bool) {
	files := map[string]fileState{}
	truncated := false
	root, err := os.OpenRoot(w.dir)
	if err != nil {
		return files, false
	}
	defer root.Close()
	_ = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: skip it
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if len(files) == maxFiles {
			truncated = true
			return fs.SkipAll
		}
		if fi, err := d.Info(); err == nil {
			files[p] = fileState{fi.Size(), fi.ModTime()}
		}
		return nil
	})
	return files, truncated
}

// sync scans the workspace and brings the resources in line: new files
// added, gone ones removed, changed ones reported updated.
func (w *workspaceFiles) sync() {
	w.syncing.Lock()
	defer w.syncing.Unlock()
	files, truncated := w.scan()
	w.mu.Lock()
	defer w.mu.Unlock()
	if truncated && !w.truncated {
		log.Printf("files: the workspace has more than %d files; only the first %d (in path order) are resources", maxFiles, maxFiles)
	}
	w.truncated = truncated
	for rel := range w.known {
		if _, ok := files[rel]; !ok {
			w.p.RemoveResource(w.uri(rel))
		}
	}
	for rel, st := range files {
		old, ok := w.known[rel]
		switch {
		case !ok:
			w.p.AddResource(pluginproto.Resource{
				URI:         w.uri(rel),
				Name:        rel,
				Description: "The workspace file " + rel + ".",
				MIMEType:    mime.TypeByExtension(path.Ext(rel)),
			}, w.reader(rel))
		case old != st:
			w.p.ResourceUpdated(w.uri(rel))
		}
	}
	w.known = files
	if w.afterSync != nil {
		w.afterSync()
	}
}

// changed schedules a scan once the events of a burst have settled. An
// event during a scan schedules another, which starts after it.
func (w *workspaceFiles) changed() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer == nil {
		w.timer = time.AfterFunc(settle, func() {
			w.mu.Lock()
			w.timer = nil // events from now on schedule the next scan
			w.mu.Unlock()
			w.sync()
		})
	}
}

// watch follows the workspace's directories with inotify.
func (w *workspaceFiles) watch() error {
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	addTree := func(dir string) {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			_ = watcher.Add(p)
			return nil
		})
	}
	addTree(w.dir)
	if len(watcher.WatchList()) == 0 {
		watcher.Close()
		return fmt.Errorf("cannot watch %s", w.dir)
	}
	go func() {
		for {
			select {
			case ev, ok := <-watcher.Events:
				if !ok {
					return
				}
				if ev.Has(fsnotify.Create) {
					if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
						addTree(ev.Name)
					}
				}
				w.changed()
			case err, ok := <-watcher.Errors:
				if !ok {
					return
				}
				log.Printf("files: watching the workspace: %v", err)
				w.changed() // an overflow loses events: scan again
			}
		}
	}()
	return nil
}

// reader returns the handler reading the file rel.
func (w *workspaceFiles) reader(rel string) pluginproto.ResourceHandler {
	return func(context.Context, *pluginproto.ResourceRead) (*pluginproto.ResourceResult, error) {
		root, err := os.OpenRoot(w.dir)
		if err != nil {
			return nil, fmt.Errorf("the workspace cannot be opened: %w", err)
		}
		defer root.Close()
		f, err := root.Open(rel)
		if errors.Is(err, fs.ErrNotExist) {
			w.changed()
			return nil, fmt.Errorf("%w: %s was removed", pluginproto.ErrUnknownResource, rel)
		}
		if err != nil {
			return nil, err
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, maxRead+1))
		switch {
		case err != nil:
			return nil, err
		case len(data) > maxRead:
			return nil, fmt.Errorf("%s is larger than %d MiB, the most a resource read returns", rel, maxRead>>20)
		case utf8.Valid(data):
			return pluginproto.TextContents(textType(rel), string(data)), nil
		}
		return pluginproto.BlobContents(mime.TypeByExtension(path.Ext(rel)), data), nil
	}
}

// textType is the MIME type of a text file: by its extension, else
// text/plain.
func textType(rel string) string {
	if t := mime.TypeByExtension(path.Ext(rel)); t != "" {
		return t
	}
	return "text/plain"
}
