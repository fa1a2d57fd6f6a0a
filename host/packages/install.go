package packages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/gofrs/flock"
	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/internal/atomicfile"
)

// DefaultTimeout bounds an install (resolution, download, unpacking)
// when Options.Timeout is 0.
const DefaultTimeout = 5 * time.Minute

// Step is one sandboxed command of an install: npm view, npm install,
// pip install. The Runner confines it; the step names what it needs.
type Step struct {
	// What is the step, for messages: "resolve", "install".
	What string
	// Command is the program, looked up in the sandbox's PATH when not
	// absolute; Args its arguments.
	Command string
	Args    []string
	// Runtime is the interpreter preset the program needs ("node",
	// "python"), as a plugin's runtime.
	Runtime string
	// Read and Write are the paths the step reads and writes beyond the
	// program and its runtime.
	Read, Write []string
	// Env are NAME=value entries it gets.
	Env []string
}

// Runner runs a step in the sandbox with the network, and returns what
// it printed. A step that exits non-zero is an error; its stderr is
// returned with it.
type Runner func(ctx context.Context, st Step) (stdout, stderr []byte, err error)

// Options configure an Installer. Dir and Run are required.
type Options struct {
	// Dir is the server's package cache, its own: each version installed
	// in a tree of its own under Dir/trees, and installed.json naming the
	// one that runs. Nothing else writes there.
	Dir string
	// Run runs the install's steps sandboxed (SandboxRunner).
	Run Runner
	// NPM are the npm settings the steps get (NPMSettings); nil for
	// npm's defaults.
	NPM *Settings
	// Pip are the pip options the steps get (PipSettings), PipRead the
	// files they name (a CA bundle).
	Pip, PipRead []string
	// Timeout bounds one install; 0 is DefaultTimeout.
	Timeout time.Duration
	// TimeoutSetting names where the operator raises Timeout, for the
	// message of an install that took too long.
	TimeoutSetting string
	// Logger hears the progress: installing …, installed … in 4.2s. Nil
	// discards.
	Logger hclog.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Installer installs the packages of one declared server into its cache.
type Installer struct {
	opts Options
	log  hclog.Logger
}

// New returns an Installer of opts.
func New(opts *Options) (*Installer, error) {
	o := *opts
	if o.Dir == "" || o.Run == nil {
		return nil, errors.New("packages: Options.Dir and Options.Run are required")
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NPM == nil {
		o.NPM = &Settings{}
	}
	return &Installer{opts: o, log: o.Logger}, nil
}

// Installed is one installed version of a package: what installed.json
// records, and what a start runs offline.
type Installed struct {
	// Format is the record's format, RecordFormat.
	Format int `json:"format"`
	// Manager, Name and Declared are the package as declared (Declared:
	// the version or range, "" for the newest); Bin the program named
	// apart from it.
	Manager  string `json:"manager"`
	Name     string `json:"name"`
	Declared string `json:"declared,omitempty"`
	Bin      string `json:"bin,omitempty"`
	// Version is the exact version it resolved to.
	Version string `json:"version"`
	// Tree is the directory it is installed in.
	Tree string `json:"tree"`
	// Entry is the file a start runs (node's script; a venv's program).
	Entry string `json:"entry"`
	// Lock is the digest of the installed lock (LockDigest): each
	// package's path, version and registry integrity (SHA-512).
	Lock string `json:"lock"`
	// Files is the digest of the tree's files as installed (TreeDigest).
	Files string `json:"files"`
	// Packages is how many packages the tree holds; Size its bytes.
	Packages int   `json:"packages"`
	Size     int64 `json:"size"`
	// InstalledAt is when.
	InstalledAt time.Time `json:"installed_at"`
}

// RecordFormat is the format of installed.json this host writes and
// reads; a record of another format is as good as none (reinstalled).
const RecordFormat = 1

// recordName is the record of the version that runs, in Options.Dir.
const recordName = "installed.json"

// String is "@acme/notes-mcp@1.2.3".
func (in *Installed) String() string {
	if in.Manager == Pip {
		return in.Name + "==" + in.Version
	}
	return in.Name + "@" + in.Version
}

// matches reports whether the record installs spec as declared.
func (in *Installed) matches(s *Spec) bool {
	return in.Format == RecordFormat && in.Manager == s.Manager && in.Name == s.Name && in.Declared == s.Version && in.Bin == s.Bin
}

// Current returns the installed version that runs for spec in the
// package cache dir (Options.Dir), offline: nil when none is (never
// installed, or installed for another declaration). It reads and checks
// nothing but the record and that the entry file is there; it needs no
// Installer (the trust check and plughost plugins read it).
func Current(dir string, s *Spec) (*Installed, error) {
	b, err := os.ReadFile(filepath.Join(dir, recordName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var in Installed
	if json.Unmarshal(b, &in) != nil || !in.matches(s) {
		return nil, nil
	}
	if _, err := os.Stat(in.Entry); err != nil {
		return nil, nil
	}
	return &in, nil
}

// Ensure returns the installed version of spec, installing it first when
// there is none: the first start's wait. Concurrent calls (two hosts, a
// reload, plughost upgrade) install once: the second waits for the
// first, as long as ctx lets it.
func (i *Installer) Ensure(ctx context.Context, s *Spec) (*Installed, error) {
	if in, err := Current(i.opts.Dir, s); in != nil || err != nil {
		return in, err
	}
	unlock, err := i.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if in, err := Current(i.opts.Dir, s); in != nil || err != nil {
		return in, err // installed while we waited
	}
	in, err := i.install(ctx, s, false)
	if err != nil {
		return nil, err
	}
	return in, i.Use(in)
}

// Install resolves spec to an exact version and installs it in a tree of
// its own, beside any other (a tree of that version already there is
// reused). It does not make it the version that runs (Use does). online
// asks the registry even when a cached answer would do (an upgrade). It
// holds the server's install lock, which it waits for as long as ctx
// lets it: an upgrade and a start's Ensure never write the same tree at
// once.
func (i *Installer) Install(ctx context.Context, s *Spec, online bool) (*Installed, error) {
	unlock, err := i.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return i.install(ctx, s, online)
}

// install is Install with the lock held.
func (i *Installer) install(ctx context.Context, s *Spec, online bool) (*Installed, error) {
	ctx, cancel := context.WithTimeout(ctx, i.opts.Timeout)
	defer cancel()
	if err := os.MkdirAll(filepath.Join(i.opts.Dir, "trees"), 0o711); err != nil {
		return nil, err
	}
	_ = os.Chmod(i.opts.Dir, 0o711)
	var in *Installed
	var err error
	switch s.Manager {
	case NPM:
		in, err = i.installNPM(ctx, s, online)
	case Pip:
		in, err = i.installPip(ctx, s)
	default:
		err = fmt.Errorf("unknown package manager %q", s.Manager)
	}
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		setting := ""
		if i.opts.TimeoutSetting != "" {
			setting = "; " + i.opts.TimeoutSetting + " raises it"
		}
		return nil, fmt.Errorf("installing %s took longer than the install limit of %s%s (%w)", s, i.opts.Timeout, setting, err)
	}
	return in, err
}

// Use makes in the version that runs.
func (i *Installer) Use(in *Installed) error {
	b, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(i.opts.Dir, recordName), append(b, '\n'))
}

// lockPoll is how often lock tries again for a lock another holds.
const lockPoll = 100 * time.Millisecond

// lock takes the server's install lock (Dir/.lock: flock on unix, LockFileEx on Windows), waiting
// for another install that holds it until ctx is done: ctx's error
// then, saying what it waited for.
func (i *Installer) lock(ctx context.Context) (unlock func(), err error) {
	if err := os.MkdirAll(i.opts.Dir, 0o711); err != nil {
		return nil, err
	}
	lock := flock.New(filepath.Join(i.opts.Dir, ".lock"))
	if ok, err := lock.TryLockContext(ctx, lockPoll); ok {
		return func() { _ = lock.Close() }, nil
	} else if ctx.Err() != nil {
		return nil, fmt.Errorf("waiting for another install of this server (%s) to finish: %w", lock.Path(), ctx.Err())
	} else {
		return nil, fmt.Errorf("install lock %s: %w", lock.Path(), err)
	}
}

// treeName is the directory of one version's tree under Dir/trees:
// "@acme+notes-mcp@1.2.3".
func treeName(name, version string) string {
	return strings.ReplaceAll(name, "/", "+") + "@" + version
}

// versionPattern is what a registry may report as a version: semver
// (1.2.3-beta.1+build) and PEP 440 (1!2.0.post1+local) both fit, a path
// does not. maxVersion bounds its length.
var versionPattern = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+!_-]*$`)

const maxVersion = 128

// treePath is the tree of version of the package name under
// Dir/trees. The version is the registry's word, and the path is
// renamed and removed as the host's user: a version that is not one
// (a "/", "..", a control character) is refused, as is a path that
// would not be a directory right under Dir/trees.
func (i *Installer) treePath(name, version string) (string, error) {
	if len(version) > maxVersion || !versionPattern.MatchString(version) {
		return "", fmt.Errorf("cannot install %s: the registry reports the version %q, which is not a version", name, version)
	}
	trees := filepath.Join(i.opts.Dir, "trees")
	tree := filepath.Join(trees, treeName(name, version))
	if base := filepath.Base(tree); filepath.Dir(tree) != trees || base == "." || base == ".." || strings.HasPrefix(base, ".") {
		return "", fmt.Errorf("cannot install %s@%s: its tree %s would not be in %s", name, version, tree, trees)
	}
	return tree, nil
}

// stepError is a failed step's error: the package manager's own error
// lines (npm error …, ERROR: …) without npm's boilerplate, else the end
// of its stderr.
func stepError(what string, s *Spec, stderr []byte, err error) error {
	var lines []string
	for l := range strings.Lines(string(stderr)) {
		l = strings.TrimRight(l, "\r\n")
		if rest, ok := strings.CutPrefix(l, "npm error"); ok && !npmNoise.MatchString(strings.TrimSpace(rest)) {
			lines = append(lines, l)
		} else if strings.HasPrefix(l, "ERROR:") || strings.HasPrefix(l, "error:") {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		all := strings.Split(strings.TrimSpace(string(stderr)), "\n")
		lines = all[max(0, len(all)-10):]
	}
	if len(lines) > 12 {
		lines = lines[:12]
	}
	msg := strings.TrimSpace(strings.Join(lines, "\n"))
	if msg == "" {
		return fmt.Errorf("cannot %s %s: %w", what, s, err)
	}
	return fmt.Errorf("cannot %s %s (%v):\n%s", what, s, err, msg)
}

// npmNoise are npm's error lines that say nothing of the failure.
var npmNoise = regexp.MustCompile(`^(|code [A-Z0-9_]+|[0-9]{3}|Log files were not written.*|A complete log of this run.*)$`)

// size formats n bytes as people read them: "3.1 MB".
func size(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// count is "1 package", "12 packages".
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
