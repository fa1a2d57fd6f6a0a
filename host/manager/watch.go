package manager

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/naming"
	"github.com/plughost/plughost/host/trust"
)

// file is a plugin executable in the directory.
type file struct {
	name    string // provider name (naming.ForFile)
	path    string // absolute path
	renamed string // why name is not the file name without its extension; "" when it is
}

// ignoredName reports whether a directory entry is never a plugin whatever
// its mode: dotfiles and the leftovers of editors and downloads.
func ignoredName(base string) bool {
	if base == "" || base[0] == '.' || base == "4913" { // 4913: vim's write test
		return true
	}
	if len(base) > 1 && base[0] == '#' && base[len(base)-1] == '#' { // emacs autosave
		return true
	}
	for _, suffix := range []string{"~", ".swp", ".swo", ".swx", ".tmp", ".bak", ".orig", ".part"} {
		if strings.HasSuffix(base, suffix) {
			return true
		}
	}
	return false
}

// inspect decides whether base in the directory is a plugin. When it is not,
// why says so (for the debug log).
func (m *Manager) inspect(base string) (f file, why string, ok bool) {
	path := filepath.Join(m.opts.Dir, base)
	if ignoredName(base) {
		return file{}, "ignored name", false
	}
	fi, err := os.Stat(path) // follows symlinks: a link to an executable is a plugin
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return file{}, "no such file", false
	case err != nil:
		return file{}, err.Error(), false
	case fi.IsDir():
		return file{}, "directory", false
	case !fi.Mode().IsRegular():
		return file{}, "not a regular file (" + fi.Mode().Type().String() + ")", false
	}
	if _, ok := declared.Name(base); ok {
		if len(m.opts.Wrapper) == 0 {
			return file{}, "a declared server, and this host serves none", false
		}
		name, renamed := providerName(base)
		return file{name: name, path: path, renamed: renamed}, "", true
	}
	switch {
	case fi.Mode().Perm()&0o111 == 0:
		return file{}, "not executable (mode " + fi.Mode().Perm().String() + ")", false
	}
	name, renamed := providerName(base)
	return file{name: name, path: path, renamed: renamed}, "", true
}

// ErrNoPlugin is Find's error when no file of the directory is the
// named plugin.
var ErrNoPlugin = errors.New("no such plugin")

// Find returns the provider name and the file of the plugin of that
// provider name in dir (or of that file name), as a manager of dir with
// Options.Wrapper set would load it: the first such file by name, an
// executable or a declaration. It is how `plughost approve NAME` finds
// what to approve.
func Find(dir, name string) (provider, path string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", "", err
	}
	m := &Manager{opts: Options{Dir: dir, Wrapper: []string{"find"}}}
	for _, byFile := range []bool{false, true} {
		for _, e := range entries {
			f, _, ok := m.inspect(e.Name())
			if ok && ((!byFile && f.name == name) || (byFile && e.Name() == name)) {
				return f.name, f.path, nil
			}
		}
	}
	return "", "", fmt.Errorf("%w %q in %s", ErrNoPlugin, name, dir)
}

// providerName is the provider name of the plugin file base: a plugin's
// (naming.ForFile), or a declaration's, the name before its suffix
// (everything.mcp.json → everything).
func providerName(base string) (name, renamed string) {
	if n, ok := declared.Name(base); ok {
		return naming.ForFile(n + ".mcp")
	}
	return naming.ForFile(base)
}

// incomplete reports why an executable looks unfinished: an ELF file whose
// header, program or section headers, or the contents they describe do
// not fit in it is most likely still being copied in. A further write
// brings another directory event, and another look. "" means complete
// (or not ELF: scripts and other formats are taken as they are).
//
// The headers are read and their extents compared with the file's size,
// rather than parsed by debug/elf: elf.NewFile also read the section
// names and built a section per header, 2.5% of the CPU of a warm start
// of 100 plugins (a profile of the benchmark's start), for an answer the
// extents give.
func incomplete(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil || string(magic[:]) != elf.ELFMAG {
		return ""
	}
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	if why := elfExtents(f, uint64(fi.Size())); why != "" {
		return "incomplete ELF executable (" + why + ")"
	}
	return ""
}

// maxELFTable bounds the bytes of a program or section header table read
// (a Go binary's are under 3 KB; ELF allows 65535 entries of any size).
const maxELFTable = 1 << 20

// elfExtents says why the ELF file r of size bytes is cut short: its
// header, or a program or section header table, or a segment or section
// with contents in the file, ends past its end. "" when every part fits.
func elfExtents(r io.ReaderAt, size uint64) string {
	var hdr [64]byte
	n, _ := r.ReadAt(hdr[:], 0)
	if n < elf.EI_NIDENT {
		return "header cut short"
	}
	var bo binary.ByteOrder
	switch elf.Data(hdr[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
		bo = binary.LittleEndian
	case elf.ELFDATA2MSB:
		bo = binary.BigEndian
	default:
		return "unknown data encoding"
	}
	is64 := elf.Class(hdr[elf.EI_CLASS]) == elf.ELFCLASS64
	word := func(b []byte) uint64 { // an offset or size: 8 bytes in ELF64, 4 in ELF32
		if is64 {
			return bo.Uint64(b)
		}
		return uint64(bo.Uint32(b))
	}
	// Where the header keeps e_phoff, e_shoff and the tables' entry
	// sizes and counts, and where an entry keeps its offset and size in
	// the file.
	var hdrLen, phoffAt, shoffAt, tablesAt, pOffAt, pSizeAt, sTypeAt, sOffAt, sSizeAt int
	switch elf.Class(hdr[elf.EI_CLASS]) {
	case elf.ELFCLASS64:
		hdrLen, phoffAt, shoffAt, tablesAt, pOffAt, pSizeAt, sTypeAt, sOffAt, sSizeAt = 64, 32, 40, 54, 8, 32, 4, 24, 32
	case elf.ELFCLASS32:
		hdrLen, phoffAt, shoffAt, tablesAt, pOffAt, pSizeAt, sTypeAt, sOffAt, sSizeAt = 52, 28, 32, 42, 4, 16, 4, 16, 20
	default:
		return "unknown class"
	}
	if n < hdrLen {
		return "header cut short"
	}
	table := func(what string, off uint64, at int, offAt, sizeAt int, nobits func([]byte) bool) string {
		entSize, count := uint64(bo.Uint16(hdr[at:])), uint64(bo.Uint16(hdr[at+2:]))
		if count == 0 {
			return ""
		}
		total := entSize * count
		if off > size || total > size-off {
			return fmt.Sprintf("%s headers end past its %d bytes", what, size)
		}
		if total > maxELFTable || int(entSize) < sizeAt+8 {
			return "" // not a table this check reads: taken as it is
		}
		buf := make([]byte, total)
		if _, err := r.ReadAt(buf, int64(off)); err != nil {
			return fmt.Sprintf("%s headers unreadable: %v", what, err)
		}
		for i := uint64(0); i < count; i++ {
			e := buf[i*entSize : (i+1)*entSize]
			if nobits != nil && nobits(e) {
				continue
			}
			if o, sz := word(e[offAt:]), word(e[sizeAt:]); o > size || sz > size-o {
				return fmt.Sprintf("%s %d ends past its %d bytes", what, i, size)
			}
		}
		return ""
	}
	if why := table("program", word(hdr[phoffAt:]), tablesAt, pOffAt, pSizeAt, nil); why != "" {
		return why
	}
	return table("section", word(hdr[shoffAt:]), tablesAt+4, sOffAt, sSizeAt, func(e []byte) bool {
		return elf.SectionType(bo.Uint32(e[sTypeAt:])) == elf.SHT_NOBITS // .bss: no bytes in the file
	})
}

// scan lists the plugins in the directory, sorted by file name. Of two files
// with the same provider name the first keeps it.
func (m *Manager) scan() ([]file, error) {
	entries, err := os.ReadDir(m.opts.Dir)
	if err != nil {
		return nil, err
	}
	var found []file
	owner := make(map[string]string)
	for _, e := range entries {
		f, why, ok := m.inspect(e.Name())
		if !ok {
			m.log.Debug("not a plugin", "file", e.Name(), "reason", why)
			continue
		}
		if why := incomplete(f.path); why != "" {
			m.log.Warn("not loading a plugin file that looks unfinished; it is loaded once it changes", "file", f.path, "reason", why)
			continue
		}
		if other, dup := owner[f.name]; dup {
			m.refuse(f, other)
			continue
		}
		owner[f.name] = f.path
		found = append(found, f)
	}
	return found, nil
}

// dirWatcher watches the plugin directory (not its subdirectories).
type dirWatcher struct {
	*fsnotify.Watcher
}

func newDirWatcher(dir string) (*dirWatcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := w.Add(dir); err != nil {
		_ = w.Close()
		return nil, err
	}
	return &dirWatcher{w}, nil
}

func (w *dirWatcher) close() { _ = w.Close() }

// watch follows directory events until ctx ends. Events are debounced per
// file name; once a file has been quiet for Options.Debounce, sync brings its
// plugin in line with what is on disk.
func (m *Manager) watch(ctx context.Context, wg *sync.WaitGroup, w *dirWatcher) {
	due := make(map[string]time.Time) // file name → when to sync it
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	rearm := func() {
		var next time.Time
		for _, t := range due {
			if next.IsZero() || t.Before(next) {
				next = t
			}
		}
		if !next.IsZero() {
			timer.Reset(time.Until(next))
		}
	}
	var cur *burst // the burst in progress; nil when the directory is quiet
	defer func() {
		if cur != nil {
			cur.seal()
		}
	}()
	events, errs := w.Events, w.Errors
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if filepath.Clean(ev.Name) == m.opts.Dir {
				if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
					m.log.Error("plugin directory removed or renamed; keeping the loaded plugins, no longer watching", "dir", m.opts.Dir)
				}
				continue
			}
			base := filepath.Base(ev.Name)
			if filepath.Dir(ev.Name) != m.opts.Dir || ignoredName(base) {
				continue
			}
			m.log.Trace("directory event", "event", ev.String())
			if cur == nil {
				cur = m.newBurst()
			}
			due[base] = time.Now().Add(m.opts.Debounce)
			rearm()
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			m.log.Warn("watching the plugin directory", "dir", m.opts.Dir, "error", err)
		case <-timer.C:
			now := time.Now()
			for base, t := range due {
				if !t.After(now) {
					delete(due, base)
					m.sync(ctx, wg, base, cur.add())
				}
			}
			if len(due) == 0 && cur != nil {
				cur.seal()
				cur = nil
			}
			rearm()
		}
	}
}

// sync loads, reloads or unloads the plugin of one file name after a
// directory event. settled is called once that is done (the plugin
// published, failed or gone).
func (m *Manager) sync(ctx context.Context, wg *sync.WaitGroup, base string, settled func()) {
	if _, err := os.Stat(m.opts.Dir); err != nil {
		settled()
		// The directory is going away (rm -rf removes the files first):
		// keep serving what is loaded rather than unloading it file by file.
		m.log.Warn("plugin directory is gone; keeping the loaded plugins", "dir", m.opts.Dir, "error", err)
		return
	}
	if file, ok := trust.SignedFile(base); ok && m.opts.checking() {
		m.recheckSigned(file) // a plugin's signature: its plugin is checked again
	}
	f, why, ok := m.inspect(base)
	name, _ := providerName(base)
	path := filepath.Join(m.opts.Dir, base)
	if ok {
		if why := incomplete(path); why != "" {
			// Still being written (cp): the next write event looks again.
			m.log.Info("plugin file looks unfinished; waiting for it to change", "file", path, "reason", why)
			settled()
			return
		}
	}

	m.mu.Lock()
	delete(m.refused, path) // refused again below if it still clashes
	s := m.plugins[name]
	switch {
	case s != nil && s.path != path:
		m.mu.Unlock()
		if ok {
			m.refuse(f, s.path)
		}
		settled()
	case s != nil && !ok:
		delete(m.plugins, name)
		m.unloaded[name] = s.done
		m.mu.Unlock()
		m.log.Info("plugin file gone; unloading", "plugin", name, "reason", why)
		s.unload()
		if m.opts.Trust != nil {
			m.opts.Trust.Forget(name)
		}
		wg.Go(func() {
			<-s.done
			settled()
		})
	case s != nil && s.unchanged():
		m.mu.Unlock()
		m.log.Debug("plugin file is as last loaded; not reloading", "plugin", name)
		settled()
	case s != nil:
		m.mu.Unlock()
		m.log.Info("plugin file changed; reloading", "plugin", name)
		s.fileChanged(settled)
	case ok:
		m.mu.Unlock()
		m.log.Info("new plugin file", "plugin", name, "path", path)
		e, id := m.cache.lookup(f.name, f.path, m.opts.fingerprint(f.name))
		if p, run := m.spawn(ctx, wg, f, settled, e, id); p != nil {
			m.pub.Set(p)
			run()
		}
	default:
		m.mu.Unlock()
		m.log.Debug("not a plugin", "file", base, "reason", why)
		settled()
	}
}

// refuse records that plugin file f is not loaded because the file at
// owner has the same provider name: it is logged and listed by Status as
// StateRefused until either file changes.
func (m *Manager) refuse(f file, owner string) {
	why := fmt.Sprintf("%s not loaded: the plugin file %s has the same provider name; rename one of them",
		filepath.Base(f.path), filepath.Base(owner))
	m.log.Warn("two plugin files have the same provider name; skipping the second", "name", f.name, "kept", owner, "skipped", f.path)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refused[f.path] = PluginStatus{Name: f.name, Path: f.path, State: StateRefused, Renamed: f.renamed, LastError: why}
}

// String is for logs and test failures.
func (f file) String() string { return fmt.Sprintf("%s (%s)", f.name, f.path) }
