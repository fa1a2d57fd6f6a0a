package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/manager"
	"github.com/plughost/plughost/host/packages"
	"github.com/plughost/plughost/host/trust"
	"github.com/plughost/plughost/sandbox"
)

// Install once, run offline (package host/packages): a declared server
// whose command is a package runner (npx, bunx, uvx, pipx run) has its
// package installed into its own cache at its first start, in a
// sandboxed step, and runs from there: these are the wiring.

// installTimeoutSetting names where an install's limit is raised.
const installTimeoutSetting = `install_timeout in the plugins block of --config`

// PackagesDir is the package cache of the declared server name:
// $XDG_STATE_HOME/plughost/packages/NAME, out of the server's data
// directory (which it may write) so that it cannot change what it runs.
func PackagesDir(name string) (string, error) {
	state, err := StateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(state, "packages", name), nil
}

// PackageSpec returns the package a declared server's declaration at path
// installs; nil when it is not a package runner's one-liner (or not a
// declaration, or unreadable: the launch says why).
func PackageSpec(path string) *packages.Spec {
	if _, ok := declared.Name(filepath.Base(path)); !ok {
		return nil
	}
	s, err := declared.Load(path)
	if err != nil || s.Remote() {
		return nil
	}
	spec, ok, err := packages.Parse(s.Command, s.Args)
	if !ok || err != nil {
		return nil
	}
	return spec
}

// installedPackage is the package the declared server name (declaration
// at path) runs, installed; nil when it is no package runner's one-liner
// or not installed yet.
func installedPackage(name, path string) *packages.Installed {
	spec := PackageSpec(path)
	if spec == nil {
		return nil
	}
	dir, err := PackagesDir(name)
	if err != nil {
		return nil
	}
	in, _ := packages.Current(dir, spec)
	return in
}

// newInstaller is the Installer of the declared server name, whose steps
// run in sb. The user's npm settings come along without their
// credentials, unless pol (the server's policy) grants their .npmrc.
func newInstaller(sb *sandbox.Launcher, name string, pol *sandbox.Policy, timeout time.Duration, log hclog.Logger) (*packages.Installer, error) {
	dir, err := PackagesDir(name)
	if err != nil {
		return nil, err
	}
	home, _ := os.UserHomeDir()
	node, _ := sandbox.LookCommand("node", sandbox.PluginPATH)
	configs, user := packages.NPMConfigs(home, node, os.Getenv)
	settings, err := packages.NPMSettings(configs, os.Environ(), os.Getenv, user != "" && pol.Readable(user))
	if err != nil {
		return nil, err
	}
	pip, pipRead := packages.PipSettings(os.Getenv, false)
	return packages.New(&packages.Options{Dir: dir, Run: packages.SandboxRunner(sb, name), NPM: settings, Pip: pip, PipRead: pipRead,
		Timeout: timeout, TimeoutSetting: installTimeoutSetting, Logger: log.With("plugin", name)})
}

// packageLaunch makes the declared server s, of the plugin name, run its
// package installed: installed now at its first start (the wait logged
// with its progress, bounded by the install limit), offline at every
// later one. Its command becomes node and the package's program (or the
// virtual environment's program), and the installed tree is granted to
// it read-only; its network stays what pol grants (none by default).
// An install is cancelled when ctx ends (the host stops).
func packageLaunch(ctx context.Context, name string, s *declared.Server, pol *sandbox.Policy, installer func() (*packages.Installer, error), log hclog.Logger) error {
	spec, ok, err := packages.Parse(s.Command, s.Args)
	if !ok {
		return nil
	}
	if err != nil {
		return err
	}
	inst, err := installer()
	if err != nil {
		return err
	}
	in, err := inst.Ensure(ctx, spec)
	if err != nil {
		return err
	}
	s.Args = append([]string{in.Entry}, spec.Args...)
	s.Command = in.Entry
	if spec.Manager == packages.NPM {
		searchPATH := sandbox.PluginPATH
		if p, ok := s.Env["PATH"]; ok {
			searchPATH = p
		}
		if s.Command, err = sandbox.LookCommand("node", searchPATH); err != nil {
			return err
		}
	} else {
		s.Args = spec.Args
	}
	if spec.Manager == packages.NPM {
		pol.AllowRead = append(pol.AllowRead, in.Tree)
	}
	// A venv's program is granted its venv by sandbox.ServerGrants (the
	// #! line names the venv's python): the tree needs no grant of its
	// own. (Granting it as well once hung the sandbox's stage: a path put
	// back inside another one; the sandbox handles that now.)
	log.Debug("declared server runs its installed package", "plugin", name, "package", in.String(), "tree", in.Tree)
	return nil
}

// packageTrust is the manager's Trust for hosts that serve declared
// servers: the digest a declared server is checked with covers what it
// runs as well as its declaration (declaredIdentity): the installed tree
// of one that installs a package (packages.Digest), or the program its
// command names, so that trust mode pinned approves exactly that and
// holds back a changed one, saying which part changed.
// allow, when not nil, maps a provider name to the digest it may run
// with whatever the trust file says (Options.Allow).
type packageTrust struct {
	manager.Trust
	allow map[string]string
}

func (t packageTrust) Check(name, path, digest string) trust.Verdict {
	var parts map[string]string
	if d, p, ok := declaredIdentity(name, path, digest); ok {
		digest, parts = d, p
	}
	if d, ok := t.allow[name]; ok && d == digest && digest != "" {
		return trust.Verdict{Mode: trust.ModePinned, State: trust.StateApproved, Digest: digest}
	}
	v := t.Trust.Check(name, path, digest)
	if diff := trust.DiffParts(v.ApprovedParts, parts); v.State == trust.StateChanged && len(diff) > 0 {
		v.Reason += "; what changed: " + strings.Join(diff, "; ")
	}
	return v
}

// declaredIdentity is the digest of a declared server whose declaration
// at path has the digest fileDigest, and the parts it covers (as
// trust.Entry.Parts names them): with the installed tree of one that
// installs a package ("package"), or the program a local server's command
// names ("program": its path, resolved through PATH as the launch
// resolves it, and its file's digest). ok is false for any other plugin
// file (its own digest stands), and for a remote server (it runs
// nothing here).
//
// The program is the file the command names: for "node server.js" node,
// not server.js (an argument is the program's business, as is a "#!"
// script's interpreter); a program that cannot be found is part of the
// digest as missing, so that it appearing later is a change too.
func declaredIdentity(name, path, fileDigest string) (string, map[string]string, bool) {
	if _, ok := declared.Name(filepath.Base(path)); !ok || fileDigest == "" {
		return "", nil, false
	}
	s, err := declared.Load(path)
	if err != nil || s.Remote() {
		return "", nil, false
	}
	parts := map[string]string{"declaration": fileDigest}
	if s.Bundle != "" {
		return bundleDigest(fileDigest, path, s)
	}
	if spec := PackageSpec(path); spec != nil {
		dir, err := PackagesDir(name)
		if err != nil {
			return "", nil, false
		}
		in, err := packages.Current(dir, spec)
		if err != nil {
			in = nil
		}
		d, err := packages.Digest(fileDigest, in)
		if err != nil {
			d, _ = packages.Digest(fileDigest, nil)
		}
		parts["package"] = d
		return d, parts, true
	}
	parts["program"] = programIdentity(s)
	h := sha256.New()
	for _, f := range []string{"plughost-declared-program/v1", fileDigest, parts["program"]} {
		fmt.Fprintf(h, "%d:%s;", len(f), f)
	}
	return trust.SHA256Digest(hex.EncodeToString(h.Sum(nil))), parts, true
}

// programIdentity is the program a local declared server's command names,
// found as wrappedLaunch finds it (the declaration's PATH, else the
// plugin's), and its digest: "/usr/bin/srv sha256:…", or why it has none.
func programIdentity(s *declared.Server) string {
	searchPATH := sandbox.PluginPATH
	if p, ok := s.Env["PATH"]; ok {
		searchPATH = p
	}
	prog, err := sandbox.LookCommand(s.Command, searchPATH)
	if err != nil {
		return s.Command + " (not found)"
	}
	d, err := trust.Digest(prog)
	if err != nil {
		return prog + " (unreadable)"
	}
	return prog + " " + d
}

// PluginDigest is the digest approve records for the plugin file at
// path, of provider name: the file's, or for a declared server, the one
// covering what it runs too (declaredIdentity); parts are what it covers
// (trust.Entry.Parts), nil for a plugin binary.
func PluginDigest(name, path string) (digest string, parts map[string]string, err error) {
	d, err := trust.Digest(path)
	if err != nil {
		return "", nil, err
	}
	if pd, parts, ok := declaredIdentity(name, path, d); ok {
		return pd, parts, nil
	}
	return d, nil, nil
}

// InstallDeclared installs the package of the declared server name
// (declaration at path) when it is a package runner's one-liner not
// installed yet, as its first start would: approve then approves the
// installed tree. Progress goes to stderr.
func InstallDeclared(cfg *config.Config, name, path string, stderr io.Writer) error {
	spec := PackageSpec(path)
	if spec == nil {
		return nil
	}
	inst, err := CommandInstaller(cfg, name, stderr)
	if err != nil {
		return err
	}
	_, err = inst.Ensure(context.Background(), spec)
	return err
}

// CommandInstaller is the Installer of the declared server name for a
// one-shot command (approve, upgrade): its steps run in a sandbox of the
// command's own, under the server's policy in cfg, with progress logged
// to stderr.
func CommandInstaller(cfg *config.Config, name string, stderr io.Writer) (*packages.Installer, error) {
	state, err := StateDir()
	if err != nil {
		return nil, err
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "plughost", Output: stderr, Level: hclog.Info})
	sb, err := sandbox.New(&sandbox.Options{StateDir: filepath.Join(state, "plugins"), Logger: log})
	if err != nil {
		return nil, err
	}
	return newInstaller(sb, name, cfg.Sandbox.PolicyFor(name), cfg.Plugins.InstallTimeout, log)
}
