// Package release builds plughost's release: for each target platform an
// archive of plughost and the bundled plugins (tar.gz for linux and darwin,
// zip for windows), a source archive, SHA256SUMS over them, and its SSH
// signature. `make release` runs it through cmd/release; it is a package
// so that the rules (what goes into an archive, in which order, with which
// flags) are tested here, not in a Makefile.
//
// A release is reproducible: the same commit, built with the same Go
// version, gives byte-identical archives on any machine and at any path.
// That needs the Go build to leave out everything that varies from one
// machine to the next (-trimpath for the paths, an empty -buildid,
// CGO_ENABLED=0 so no C toolchain is involved, -buildvcs=false with the
// commit passed by -X instead, since the VCS stamp records a dirty flag and
// a time), and the archives to take nothing from the file system but the
// files' bytes (archive.go). Anyone can then rebuild a release and compare
// its SHA256SUMS with the published one.
package release

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Target is one platform a release is built for.
type Target struct{ OS, Arch string }

func (t Target) String() string { return t.OS + "/" + t.Arch }

// exe is the file name suffix of a program on the target.
func (t Target) exe() string {
	if t.OS == "windows" {
		return ".exe"
	}
	return ""
}

// archiveExt is the target's archive format: zip is what Windows opens
// without extra tools; tar.gz keeps the executable bit elsewhere.
func (t Target) archiveExt() string {
	if t.OS == "windows" {
		return ".zip"
	}
	return ".tar.gz"
}

// Targets is every platform a release is built for.
var Targets = []Target{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// Options says what to build and where.
type Options struct {
	// Source is the root of the plughost module to build.
	Source string
	// Out is the directory the archives and SHA256SUMS are written to; it
	// is created, and must not hold a previous release's files.
	Out string
	// Version is the release's version (a semantic version tag, see
	// CheckVersion); Commit is the commit it is built from. Both reach the
	// binaries through -X main.version and -X main.commit.
	Version, Commit string
	// Time is the commit's time: every archive entry's mtime (the
	// SOURCE_DATE_EPOCH convention), so the archives do not depend on when
	// they are built.
	Time time.Time
	// Targets defaults to Targets.
	Targets []Target
	// Plugins are the bundled plugins' names: plugins/NAME is a main
	// package (default: every plugins/*/main.go, as the Makefile's PLUGINS).
	Plugins []string
	// Docs are files of Source copied into every archive beside plughost
	// when they exist (default README.md, LICENSE).
	Docs []string
	// Go is the go command (default "go").
	Go string
	// Log receives one line per step (default: nothing).
	Log func(format string, args ...any)
}

// Build builds every target's binaries and archive into Out and returns
// the archives' file names (relative to Out), in Targets' order.
func Build(ctx context.Context, o Options) ([]string, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "plughost-release-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	var names []string
	for _, t := range o.Targets {
		name := ArchiveName(o.Version, t)
		o.Log("release: building %s", name)
		bin := filepath.Join(work, t.OS+"-"+t.Arch)
		if err := goBuild(ctx, o, t, bin); err != nil {
			return nil, err
		}
		if err := writeArchive(filepath.Join(o.Out, name), t, archiveEntries(o, t, bin), o.Time); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		names = append(names, name)
	}
	return names, nil
}

// ArchiveName is the file name of version's archive for t, e.g.
// plughost_v0.4.0_linux_amd64.tar.gz; the archive's entries are under a
// directory of the same name without the extension.
func ArchiveName(version string, t Target) string {
	return archiveDir(version, t) + t.archiveExt()
}

func archiveDir(version string, t Target) string {
	return "plughost_" + version + "_" + t.OS + "_" + t.Arch
}

func (o Options) withDefaults() (Options, error) {
	if o.Source == "" || o.Out == "" || o.Version == "" || o.Commit == "" || o.Time.IsZero() {
		return o, fmt.Errorf("release: Source, Out, Version, Commit and Time are required")
	}
	o.Go = cmp.Or(o.Go, "go")
	if o.Targets == nil {
		o.Targets = Targets
	}
	if o.Docs == nil {
		o.Docs = []string{"README.md", "LICENSE"}
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	if o.Plugins == nil {
		mains, err := filepath.Glob(filepath.Join(o.Source, "plugins", "*", "main.go"))
		if err != nil {
			return o, err
		}
		for _, m := range mains { // Glob sorts: the archives' order is fixed
			o.Plugins = append(o.Plugins, filepath.Base(filepath.Dir(m)))
		}
	}
	return o, nil
}

// goBuild builds plughost and the bundled plugins for t into dir with one
// go command, so the go command builds them in parallel and shares their
// packages. The environment is set whole for what changes the output:
// GOFLAGS, GOAMD64 or GOARM64 and GOEXPERIMENT from the caller's
// environment would make a release differ from another machine's.
func goBuild(ctx context.Context, o Options, t Target, dir string) error {
	ldflags := "-s -w -buildid= -X main.version=" + o.Version + " -X main.commit=" + o.Commit
	args := []string{"build", "-trimpath", "-ldflags", ldflags, "-o", dir + string(filepath.Separator), "./cmd/plughost"}
	for _, p := range o.Plugins {
		args = append(args, "./plugins/"+p)
	}
	cmd := exec.CommandContext(ctx, o.Go, args...)
	cmd.Dir = o.Source
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+t.OS, "GOARCH="+t.Arch,
		"GOFLAGS=-buildvcs=false -mod=readonly", "GOAMD64=v1", "GOARM64=v8.0", "GOEXPERIMENT=", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %s: %w\n%s", t, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// archiveEntries lists t's archive: plughost, the documents, then
// plugins/NAME for each bundled plugin, in Options' order.
func archiveEntries(o Options, t Target, bin string) []entry {
	dir := archiveDir(o.Version, t) + "/"
	es := []entry{{name: dir + "plughost" + t.exe(), src: filepath.Join(bin, "plughost"+t.exe()), executable: true}}
	for _, d := range o.Docs {
		if src := filepath.Join(o.Source, d); fileExists(src) {
			es = append(es, entry{name: dir + d, src: src})
		}
	}
	for _, p := range o.Plugins {
		es = append(es, entry{name: dir + "plugins/" + p + t.exe(), src: filepath.Join(bin, p+t.exe()), executable: true})
	}
	return es
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// writeArchive writes entries to path in t's format, refusing to replace
// a file already there (a release directory is written once).
func writeArchive(path string, t Target, entries []entry, mtime time.Time) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if t.archiveExt() == ".zip" {
		err = writeZip(f, entries, mtime)
	} else {
		err = writeTarGz(f, entries, mtime)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
	}
	return err
}
