package packages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// A Python package installs into a virtual environment of its own, in
// three sandboxed steps, since a venv cannot be moved once made (its
// programs name their interpreter by absolute path):
//
//  1. resolve: in a scratch venv, `pip install --dry-run --report` gives
//     the exact version of the package and of each dependency, with the
//     index's SHA-256 of each wheel;
//  2. the tree's venv is made where it stays (TREE/venv, without pip:
//     pip runs from the system's pip wheel, pipWheel), and TREE/requirements.txt written:
//     name==version --hash=sha256:… per distribution, pip's
//     --require-hashes form;
//  3. pip runs `pip install --require-hashes --no-deps -r
//     requirements.txt`: pip refuses any file whose hash is not the one
//     recorded.
//
// Wheels only (--only-binary=:all:): building a source distribution runs
// its code. requirements.txt is the tree's lock (pipLockDigest).

// pipReport is what pip install --report writes, in part.
type pipReport struct {
	Install []struct {
		Metadata struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"metadata"`
		DownloadInfo struct {
			URL         string `json:"url"`
			ArchiveInfo struct {
				Hash   string            `json:"hash"`
				Hashes map[string]string `json:"hashes"`
			} `json:"archive_info"`
		} `json:"download_info"`
	} `json:"install"`
}

// PipSettings are the pip options an install step gets: the index and
// extra indexes (without a password in their URL, unless granted), the CA
// bundle, the proxy and trusted hosts, from the PIP_* variables of
// getenv.
func PipSettings(getenv func(string) string, auth bool) (args, read []string) {
	for _, o := range []struct{ env, flag string }{
		{"PIP_INDEX_URL", "--index-url"}, {"PIP_EXTRA_INDEX_URL", "--extra-index-url"}, {"PIP_CERT", "--cert"},
		{"PIP_PROXY", "--proxy"}, {"PIP_TRUSTED_HOST", "--trusted-host"},
	} {
		for _, v := range strings.Fields(getenv(o.env)) {
			if u, err := url.Parse(v); err == nil && u.User != nil && !auth {
				u.User = nil
				v = u.String()
			}
			args = append(args, o.flag, v)
			if o.flag == "--cert" {
				read = append(read, v)
			}
		}
	}
	return args, read
}

// pythonEnv is the environment of every Python step, beside -I (isolated
// mode: no PYTHON* variable, no user site-packages, no script directory
// on sys.path): the step's HOME is the server's data directory, which
// the server writes, and a .pth file it planted in
// ~/.local/lib/python3.X/site-packages would run in the step, with the
// network and the tree about to be hashed writable. PYTHONNOUSERSITE
// says it again, for any python the step starts itself.
var pythonEnv = []string{"PYTHONNOUSERSITE=1"}

// pipArgs are the options of every pip step: pip's own configuration
// files and variables ignored (--isolated: the settings are the step's
// arguments), no version check, no prompt.
func (i *Installer) pipArgs() []string {
	return append([]string{"--isolated", "--disable-pip-version-check", "--no-input", "--only-binary=:all:", "--no-cache-dir"}, i.opts.Pip...)
}

// installPip installs a Python package into a virtual environment of its
// own (see above).
func (i *Installer) installPip(ctx context.Context, s *Spec) (*Installed, error) {
	want := s.Name
	if s.Version != "" {
		want = s.String()
	}
	scratch, err := os.MkdirTemp(filepath.Join(i.opts.Dir, "trees"), ".resolve-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	venv := filepath.Join(scratch, "venv")
	pip, err := pipWheel()
	if err != nil {
		return nil, err
	}
	if _, stderr, err := i.opts.Run(ctx, Step{What: "resolve", Command: "python3", Args: []string{"-I", "-m", "venv", "--without-pip", venv}, Runtime: "python",
		Env: pythonEnv, Write: []string{scratch}}); err != nil {
		return nil, stepError("resolve", s, stderr, err)
	}
	report := filepath.Join(scratch, "report.json")
	args := append([]string{"-I", filepath.Join(pip, "pip"), "install", "--dry-run", "--ignore-installed", "--quiet", "--report", report}, i.pipArgs()...)
	if _, stderr, err := i.opts.Run(ctx, Step{What: "resolve", Command: filepath.Join(venv, "bin", "python"), Args: append(args, want),
		Runtime: "python", Env: pythonEnv, Read: append(append([]string{pip}, distroFiles()...), i.opts.PipRead...), Write: []string{scratch}}); err != nil {
		return nil, stepError("resolve", s, stderr, err)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve %s: pip wrote no report: %w", s, err)
	}
	var rep pipReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("cannot resolve %s: pip's report: %w", s, err)
	}
	var reqs []string
	version := ""
	for _, p := range rep.Install {
		h := p.DownloadInfo.ArchiveInfo.Hashes["sha256"]
		if h == "" {
			h, _ = strings.CutPrefix(p.DownloadInfo.ArchiveInfo.Hash, "sha256=")
		}
		if h == "" {
			return nil, fmt.Errorf("cannot install %s: the index gives no SHA-256 for %s (%s), so it cannot be pinned", s, p.Metadata.Name, p.DownloadInfo.URL)
		}
		reqs = append(reqs, fmt.Sprintf("%s==%s --hash=sha256:%s", p.Metadata.Name, p.Metadata.Version, h))
		if normalize(p.Metadata.Name) == normalize(strings.SplitN(s.Name, "[", 2)[0]) {
			version = p.Metadata.Version
		}
	}
	if version == "" {
		return nil, fmt.Errorf("cannot resolve %s: pip's report does not install it", s)
	}
	sort.Strings(reqs)
	in := &Installed{Format: RecordFormat, Manager: Pip, Name: s.Name, Declared: s.Version, Bin: s.Bin, Version: version}
	if in.Tree, err = i.treePath(s.Name, version); err != nil {
		return nil, err
	}
	lock := filepath.Join(in.Tree, "requirements.txt")
	if _, err := os.Stat(lock); err == nil {
		return i.recordPip(in)
	}
	i.log.Info(fmt.Sprintf("installing %s (%s)…", in, count(len(reqs), "distribution")), "package", in.String())
	start := i.opts.Now()
	if err := os.RemoveAll(in.Tree); err != nil { // a tree an install left half made
		return nil, err
	}
	if err := os.MkdirAll(in.Tree, 0o755); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(in.Tree)
		}
	}()
	venv = filepath.Join(in.Tree, "venv")
	pending := filepath.Join(in.Tree, "requirements.pending")
	if err := os.WriteFile(pending, []byte(strings.Join(reqs, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	if _, stderr, err := i.opts.Run(ctx, Step{What: "install", Command: "python3", Args: []string{"-I", "-m", "venv", "--without-pip", venv}, Runtime: "python",
		Env: pythonEnv, Write: []string{in.Tree}}); err != nil {
		return nil, stepError("install", s, stderr, err)
	}
	args = append([]string{"-I", filepath.Join(pip, "pip"), "install", "--require-hashes", "--no-deps", "--quiet", "-r", pending}, i.pipArgs()...)
	if _, stderr, err := i.opts.Run(ctx, Step{What: "install", Command: filepath.Join(venv, "bin", "python"), Args: args,
		Runtime: "python", Env: pythonEnv, Read: append(append([]string{pip}, distroFiles()...), i.opts.PipRead...), Write: []string{in.Tree}}); err != nil {
		return nil, stepError("install", s, stderr, err)
	}
	if err := own(in.Tree); err != nil {
		return nil, err
	}
	if err := os.Rename(pending, lock); err != nil {
		return nil, err
	}
	in, err = i.recordPip(in)
	if err != nil {
		return nil, err
	}
	ok = true
	i.log.Info(fmt.Sprintf("installed %s in %s: %s, %s", in, i.opts.Now().Sub(start).Round(100*time.Millisecond), count(in.Packages, "distribution"), size(in.Size)),
		"package", in.String(), "lock", in.Lock)
	return in, nil
}

// recordPip fills in what a Python tree holds.
func (i *Installer) recordPip(in *Installed) (*Installed, error) {
	bin := in.Bin
	if bin == "" {
		bin = strings.SplitN(in.Name, "[", 2)[0]
	}
	in.Entry = filepath.Join(in.Tree, "venv", "bin", bin)
	if _, err := os.Stat(in.Entry); err != nil {
		return nil, fmt.Errorf("%s installs no program %q in %s: name it with uvx --from %s PROGRAM", in.Name, bin, filepath.Dir(in.Entry), in.Name)
	}
	var err error
	if in.Lock, err = pipLockDigest(in.Tree); err != nil {
		return nil, err
	}
	b, _ := os.ReadFile(filepath.Join(in.Tree, "requirements.txt"))
	in.Packages = strings.Count(string(b), "\n")
	if in.Files, in.Size, err = TreeDigest(in.Tree); err != nil {
		return nil, err
	}
	in.InstalledAt = i.opts.Now().UTC()
	return in, nil
}

// pipLockDigest is the digest of a Python tree's requirements.txt: each
// distribution's name, version and wheel SHA-256, in order.
func pipLockDigest(tree string) (string, error) {
	b, err := os.ReadFile(filepath.Join(tree, "requirements.txt"))
	if err != nil {
		return "", err
	}
	lines := strings.Fields(strings.ReplaceAll(string(b), " --hash=", "|"))
	if len(lines) == 0 {
		return "", errors.New(tree + ": requirements.txt is empty")
	}
	sort.Strings(lines)
	h := sha256.New()
	field(h, "plughost-pip-lock/v1")
	for _, l := range lines {
		field(h, l)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// pipWheel finds the pip that runs the steps: the wheel the system's
// ensurepip would install (Debian keeps it in /usr/share/python-wheels,
// others in the standard library's ensurepip/_bundled). A wheel is a zip
// Python runs from (WHEEL/pip is pip's main module), so the venvs are
// made without pip and the server's holds only its own distributions.
func pipWheel() (string, error) {
	var found []string
	for _, pattern := range []string{"/usr/share/python-wheels/pip-*.whl", "/usr/lib/python3*/ensurepip/_bundled/pip-*.whl",
		"/usr/local/lib/python3*/ensurepip/_bundled/pip-*.whl"} {
		m, _ := filepath.Glob(pattern)
		found = append(found, m...)
	}
	if len(found) == 0 {
		return "", fmt.Errorf("uvx and pipx run need pip's wheel (python3-venv, or python3-pip-whl): none found in /usr/share/python-wheels or ensurepip/_bundled")
	}
	return found[0], nil
}

// distroFiles are the files through which pip names the system in its
// User-Agent (its vendored distro module fails without them): those of
// them that exist.
func distroFiles() []string {
	var out []string
	for _, p := range []string{"/etc/os-release", "/usr/lib/os-release", "/etc/debian_version", "/etc/lsb-release", "/etc/redhat-release", "/etc/alpine-release"} {
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// normalize is a distribution name as PEP 503 compares them.
func normalize(name string) string {
	return strings.NewReplacer("_", "-", ".", "-").Replace(strings.ToLower(name))
}
