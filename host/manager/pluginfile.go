package manager

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// The file approved is the file that runs (issue 31).
//
// A plugin file is opened once per start: its digest is taken from that
// descriptor (or remembered, when its stat is that of a file hashed
// before: see hashes), and the process executes that descriptor (the child's
// /proc/self/fd link; the sandbox stage does the same with the copy it is
// handed), never the path again. A rename over the path, or a swap of a
// symbolic link's target, at any moment before, during or after the hash
// therefore either runs the bytes hashed or is seen at the next check.
//
// Why a descriptor of the file and not a copy in a sealed memfd: a memfd
// costs a copy of the whole binary at every start (measured: 20 MB in
// 19 to 40 ms on a loaded two-core machine, and 20 MB of RAM per running
// plugin that the page cache would otherwise share), a "#!" script cannot run from one (its
// interpreter opens the script by name), and Landlock and the sandbox's
// memfd rules would have to let a plugin's own process execute a memfd.
// What a descriptor leaves open is a write into the same inode between
// the hash and the exec; only the file's owner can make it, and in mode
// pinned and signed the owner must be the host's user or root
// (exposures): someone who could as well approve another file. A write
// that changes the file even so changes its ctime, which the manager
// compares with the hashed one once the process has started
// (pluginFile.changed): the process is stopped and the file checked again.
//
// "#!" scripts are executed by path: the interpreter opens the path it
// is given, and a script run as /proc/self/fd/N would find neither its
// directory's modules nor its own name. What guards a script is that no
// one but its owner may write it or its directory.
//
// A symbolic link is resolved once; its target is opened without
// following a link again (O_NOFOLLOW). In mode pinned and signed a link
// is refused (linkReason): the directory watch sees a rename over a
// plugin's own name, not over a link's target (inside the directory or
// out of it), so a swapped target would go unseen until the next start,
// and a target elsewhere has an owner and mode no one checks. In mode
// open a link leading out of the plugin directory is warned about, as
// every exposure is.

// pluginFile is a plugin's file, opened once for its digest and its exec.
type pluginFile struct {
	f *os.File
	// opened is the path opened: the link's target when the plugin's
	// path is a symbolic link.
	opened string
	// mark is the file's stat when it was opened (zero where the
	// platform has none).
	mark statMark
	// sum is the SHA-256 identify found, in hex.
	sum string
	// script: the file starts with "#!"; it is executed by path.
	script bool
	// link is the target when the plugin's path is a symbolic link.
	link string
	// outside: link leads out of the plugin directory.
	outside bool
	// exposures say who else than the host's user and root may change
	// the file or its directory; empty when none.
	exposures []string
}

// openPluginFile opens the plugin file at path, a file of the plugin
// directory dir, and notes its exposures.
func openPluginFile(dir, path string) (*pluginFile, error) {
	pf := &pluginFile{opened: path}
	if lfi, err := os.Lstat(path); err == nil && lfi.Mode()&os.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return nil, err
		}
		pf.opened, pf.link = target, target
		rdir, err := filepath.EvalSymlinks(dir)
		pf.outside = err != nil || filepath.Dir(target) != rdir
	}
	f, err := os.OpenFile(pf.opened, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s is not a regular file (%s)", pf.opened, fi.Mode().Type())
		}
		return nil, err
	}
	pf.f = f
	pf.mark, _ = markOf(fi)
	var head [2]byte
	n, _ := f.ReadAt(head[:], 0)
	pf.script = n == 2 && string(head[:]) == "#!"
	if why := exposure("plugin file "+pf.opened, fi); why != "" {
		pf.exposures = append(pf.exposures, why)
	}
	if dfi, err := os.Stat(filepath.Dir(pf.opened)); err == nil {
		if why := exposure("plugin directory "+filepath.Dir(pf.opened), dfi); why != "" {
			pf.exposures = append(pf.exposures, why)
		}
	}
	return pf, nil
}

// refusals are why the file may not run in mode pinned or signed (its
// exposures, and a symbolic link), and warnings what is only logged in
// mode open (its exposures, and a link out of the plugin directory).
func (pf *pluginFile) refusals(dir string) []string {
	out := pf.exposures
	if pf.link != "" {
		out = append(slices.Clone(out), fmt.Sprintf("it is a symbolic link to %s, and a pinned or signed plugin must be "+
			"a regular file in the plugin directory %s, whose replacement the directory watch sees (copy the file in)", pf.link, dir))
	}
	return out
}

func (pf *pluginFile) warnings(dir string) []string {
	out := pf.exposures
	if pf.outside {
		out = append(slices.Clone(out), fmt.Sprintf("it is a symbolic link to %s, outside the plugin directory %s, "+
			"whose replacement no one watches (refused in trust mode pinned and signed)", pf.link, dir))
	}
	return out
}

// identify returns the file's identity, reusing known's digest when its
// stat still matches it (a write, a rename over it or a touch changes
// its ctime). ok is false when it cannot be read, or was written while
// it was hashed.
func (pf *pluginFile) identify(known *binaryID) (binaryID, bool) {
	if known != nil && known.SHA256 != "" && pf.mark != (statMark{}) && known.Stat == pf.mark {
		pf.sum = known.SHA256
		return *known, true
	}
	if sum, ok := hashed(pf.mark); ok {
		pf.sum = sum
		return binaryID{SHA256: sum, Stat: pf.mark}, true
	}
	sum, ok := pf.hash()
	if !ok {
		return binaryID{}, false
	}
	pf.sum = sum
	if pf.changed() {
		return binaryID{}, false // written while hashed
	}
	rememberHash(pf.mark, sum)
	return binaryID{SHA256: sum, Stat: pf.mark}, true
}

// Hashing a plugin file is most of what the host itself spends on a cold
// start: a Go plugin is 10 to 20 MB, and 100 of them took 1.8 s of the
// host's 3.6 s of CPU (a profile of the benchmark's cold start). One file
// is often started under several names (hard links, one binary serving
// several configurations) and again at each restart, so the host
// remembers the digest of each file it hashed by its stat mark: the same
// mark is the same inode, unwritten since (a write changes its ctime), as
// the catalog cache's entries already assume when they reuse a digest.

// maxHashes bounds the digests remembered; past it the memory is dropped
// whole and filled again.
const maxHashes = 1024

// hashes maps a stat mark to the SHA-256 (hex) of the file's bytes.
var hashes struct {
	sync.Mutex
	m map[statMark]string
}

// hashed returns the digest remembered for a file of stat mark m; never
// for the zero mark (a platform without one).
func hashed(m statMark) (string, bool) {
	if m == (statMark{}) {
		return "", false
	}
	hashes.Lock()
	defer hashes.Unlock()
	sum, ok := hashes.m[m]
	return sum, ok
}

// rememberHash remembers the digest of a file of stat mark m.
func rememberHash(m statMark, sum string) {
	if m == (statMark{}) {
		return
	}
	hashes.Lock()
	defer hashes.Unlock()
	if hashes.m == nil || len(hashes.m) >= maxHashes {
		hashes.m = make(map[statMark]string)
	}
	hashes.m[m] = sum
}

// hash returns the SHA-256 of the open file's bytes, in hex.
func (pf *pluginFile) hash() (string, bool) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(pf.f, 0, 1<<62)); err != nil {
		return "", false
	}
	return hex.EncodeToString(h.Sum(nil)), true
}

// changed reports whether the open file's bytes are no longer those
// identify hashed. Its stat moving is not enough: a link made to it, or
// a rename over its name, changes its ctime but not its bytes, which are
// then hashed again.
func (pf *pluginFile) changed() bool {
	fi, err := pf.f.Stat()
	if err != nil {
		return true
	}
	if m, _ := markOf(fi); m == pf.mark && pf.mark != (statMark{}) {
		return false
	}
	sum, ok := pf.hash()
	if !ok || sum != pf.sum {
		return true
	}
	pf.mark, _ = markOf(fi)
	return false
}

// execFile is the file the process must execute: the open one, or nil
// when it is executed by path (a "#!" script).
func (pf *pluginFile) execFile() *os.File {
	if pf == nil || pf.script {
		return nil
	}
	return pf.f
}

// close closes the file; a nil *pluginFile has none.
func (pf *pluginFile) close() {
	if pf != nil {
		pf.f.Close()
	}
}

// identify returns the identity of the file at path (see
// pluginFile.identify), for the catalog cache: what it cares for is the
// catalog of the bytes it hashed, not what runs.
func identify(path string, known *binaryID) (id binaryID, ok bool) {
	pf, err := openPluginFile(filepath.Dir(path), path)
	if err != nil {
		return binaryID{}, false
	}
	defer pf.close()
	return pf.identify(known)
}
