package packages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// npmView is what `npm view PKG@SPEC name version dist.unpackedSize
// --json` prints for one version.
type npmView struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Size    int64  `json:"dist.unpackedSize"`
}

// npmArgs are the options of every npm step: the filtered settings as
// its only configuration, its cache in the server's, no network beside
// the registry's (no audit, no update check, no funding notice). The
// settings are written in a directory of the install's own, which done
// removes: with the operator's grant they hold their tokens, which stay
// on disk no longer than the steps that read them.
func (i *Installer) npmArgs() (args, read []string, done func(), err error) {
	dir, err := os.MkdirTemp(i.opts.Dir, ".npmrc-")
	if err != nil {
		return nil, nil, nil, err
	}
	done = func() { os.RemoveAll(dir) }
	// 0711: the step reads the files in it as the sandbox's uid when
	// the host is root, and lists nothing.
	if err := os.Chmod(dir, 0o711); err != nil {
		done()
		return nil, nil, nil, err
	}
	rc := filepath.Join(dir, "npmrc")
	global := filepath.Join(dir, "npmrc-global")
	// 0600: with the operator's grant it holds their tokens. The step
	// reads it as the sandbox's uid when the host is root.
	if err := os.WriteFile(rc, []byte(i.opts.NPM.NPMRC), 0o600); err != nil {
		done()
		return nil, nil, nil, err
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(rc, sandboxUID, sandboxUID); err != nil {
			done()
			return nil, nil, nil, err
		}
	}
	if err := os.WriteFile(global, nil, 0o644); err != nil {
		done()
		return nil, nil, nil, err
	}
	args = []string{"--userconfig", rc, "--globalconfig", global, "--cache", filepath.Join(i.opts.Dir, "npm-cache"),
		"--no-update-notifier", "--no-audit", "--no-fund", "--logs-max=0", "--color=false"}
	return args, append([]string{rc, global}, i.opts.NPM.Read...), done, nil
}

// installNPM resolves spec with npm view, then installs that exact
// version with npm install --prefix into a tree of its own:
// --ignore-scripts (a package's install scripts do not run: they would
// run with the network and the tree writable; the few servers that need
// one, to build a native module, are installed by hand and declared as
// node FILE), --save-exact, and the lockfile npm writes is the record
// of what was installed.
func (i *Installer) installNPM(ctx context.Context, s *Spec, online bool) (*Installed, error) {
	common, read, done, err := i.npmArgs()
	if err != nil {
		return nil, err
	}
	defer done()
	cache := filepath.Join(i.opts.Dir, "npm-cache")
	if err := os.MkdirAll(cache, 0o700); err != nil {
		return nil, err
	}
	want := s.Name
	if s.Version != "" {
		want += "@" + s.Version
	}
	view := append([]string{"view", want, "name", "version", "dist.unpackedSize", "--json"}, common...)
	if online {
		view = append(view, "--prefer-online")
	}
	out, stderr, err := i.opts.Run(ctx, Step{What: "resolve", Command: "npm", Args: view, Runtime: "node", Read: read, Write: []string{cache}})
	if err != nil {
		return nil, stepError("resolve", s, stderr, err)
	}
	v, err := newestView(out)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve %s: npm view printed %q: %v", s, strings.TrimSpace(string(out)), err)
	}
	in := &Installed{Format: RecordFormat, Manager: NPM, Name: s.Name, Declared: s.Version, Bin: s.Bin, Version: v.Version}
	if in.Tree, err = i.treePath(s.Name, v.Version); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(in.Tree, "package-lock.json")); err == nil {
		return i.record(in) // that version is installed already (beside the one that runs)
	}
	sized := ""
	if v.Size > 0 {
		sized = " (" + size(v.Size) + ")"
	}
	i.log.Info(fmt.Sprintf("installing %s%s…", in, sized), "package", in.String())
	start := i.opts.Now()
	tmp, err := os.MkdirTemp(filepath.Join(i.opts.Dir, "trees"), ".install-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	install := append([]string{"install", "--prefix", tmp, "--ignore-scripts", "--save-exact", s.Name + "@" + v.Version}, common...)
	if _, stderr, err := i.opts.Run(ctx, Step{What: "install", Command: "npm", Args: install, Runtime: "node", Read: read, Write: []string{cache, tmp}}); err != nil {
		return nil, stepError("install", s, stderr, err)
	}
	if err := own(tmp); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, in.Tree); err != nil {
		return nil, err
	}
	in, err = i.record(in)
	if err != nil {
		return nil, err
	}
	i.log.Info(fmt.Sprintf("installed %s in %s: %s, %s", in, i.opts.Now().Sub(start).Round(100*time.Millisecond), count(in.Packages, "package"), size(in.Size)),
		"package", in.String(), "lock", in.Lock)
	return in, nil
}

// newestView reads npm view's JSON: one object, or an array of them when
// a range matches several versions (npm lists them oldest first).
func newestView(out []byte) (npmView, error) {
	var one npmView
	if err := json.Unmarshal(out, &one); err == nil && one.Version != "" {
		return one, nil
	}
	var many []npmView
	if err := json.Unmarshal(out, &many); err != nil || len(many) == 0 {
		return npmView{}, errors.New("no version matches")
	}
	return many[len(many)-1], nil
}

// record fills in what the tree holds: the entry file, the lock's and
// the files' digests, the count and size.
func (i *Installer) record(in *Installed) (*Installed, error) {
	var err error
	if in.Entry, err = npmEntry(in.Tree, in.Name, in.Bin); err != nil {
		return nil, err
	}
	if in.Lock, in.Packages, err = LockDigest(filepath.Join(in.Tree, "package-lock.json")); err != nil {
		return nil, err
	}
	if in.Files, in.Size, err = TreeDigest(in.Tree); err != nil {
		return nil, err
	}
	in.InstalledAt = i.opts.Now().UTC()
	return in, nil
}

// npmEntry is the file npx would run for the package name installed in
// tree: its bin named bin, else its only bin, else the bin named as the
// package (without its scope).
func npmEntry(tree, name, bin string) (string, error) {
	dir := filepath.Join(tree, "node_modules", filepath.FromSlash(name))
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", fmt.Errorf("%s is not installed in %s: %w", name, tree, err)
	}
	var pj struct {
		Bin json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(b, &pj); err != nil {
		return "", fmt.Errorf("%s's package.json: %w", name, err)
	}
	bins := map[string]string{}
	var one string
	if json.Unmarshal(pj.Bin, &one) == nil && one != "" {
		bins[path.Base(name)] = one
	} else {
		_ = json.Unmarshal(pj.Bin, &bins)
	}
	var file string
	switch {
	case bin != "":
		file = bins[bin]
	case len(bins) == 1:
		for _, f := range bins {
			file = f
		}
	default:
		file = bins[path.Base(name)]
	}
	if file == "" {
		names := make([]string, 0, len(bins))
		for n := range bins {
			names = append(names, n)
		}
		sort.Strings(names)
		if bin == "" {
			return "", fmt.Errorf("%s has no program to run (its bin: %v): name one with npx -p %s PROGRAM", name, names, name)
		}
		return "", fmt.Errorf("%s has no program %q (its bin: %v)", name, bin, names)
	}
	entry := filepath.Join(dir, filepath.FromSlash(file))
	if !strings.HasPrefix(entry, dir+string(filepath.Separator)) {
		return "", fmt.Errorf("%s's bin %q is outside the package", name, file)
	}
	return entry, nil
}

// LockDigest is the digest of an npm lockfile's packages: for each entry
// but the root, sorted by path, its path, version, integrity (the
// registry's SHA-512 of the tarball), resolved URL and link, each
// length-prefixed, under SHA-256. It does not change with the lockfile's
// layout, its root's name or npm's version; it changes with any package
// installed. n is the number of packages.
func LockDigest(lockfile string) (digest string, n int, err error) {
	b, err := os.ReadFile(lockfile)
	if err != nil {
		return "", 0, err
	}
	var lock struct {
		Packages map[string]struct {
			Version   string `json:"version"`
			Integrity string `json:"integrity"`
			Resolved  string `json:"resolved"`
			Link      bool   `json:"link"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		return "", 0, fmt.Errorf("%s: %w", lockfile, err)
	}
	paths := make([]string, 0, len(lock.Packages))
	for p := range lock.Packages {
		if p != "" {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	h := sha256.New()
	field(h, "plughost-npm-lock/v1")
	for _, p := range paths {
		e := lock.Packages[p]
		field(h, p)
		field(h, e.Version)
		field(h, e.Integrity)
		field(h, e.Resolved)
		field(h, fmt.Sprint(e.Link))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), len(paths), nil
}

// TreeDigest is the digest of the files under dir: each one's path,
// kind and executable bit, and its contents' SHA-256 (a link's target),
// in lexical order, under SHA-256; and their total size. A file changed,
// added or removed after the install changes it.
func TreeDigest(dir string) (digest string, total int64, err error) {
	h := sha256.New()
	field(h, "plughost-tree/v1")
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			field(h, "d "+rel)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			field(h, "l "+rel)
			field(h, target)
		case d.Type().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			fh := sha256.New()
			n, err := io.Copy(fh, f)
			f.Close()
			if err != nil {
				return err
			}
			total += n
			field(h, fmt.Sprintf("f %s %v", rel, info.Mode().Perm()&0o111 != 0))
			field(h, hex.EncodeToString(fh.Sum(nil)))
		default:
			field(h, "? "+rel)
		}
		return nil
	})
	if err != nil {
		return "", 0, err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), total, nil
}

// field writes s length-prefixed, so that no two sequences of fields
// hash alike.
func field(h hash.Hash, s string) { fmt.Fprintf(h, "%d:%s;", len(s), s) }
