package serve

import (
	"context"
	"io"
	"os"
	"path/filepath"
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
// servers: the digest a declared server that installs a package is
// checked with covers its installed tree as well as its declaration
// (packages.Digest), so that trust mode pinned approves exactly that
// tree and holds back a changed one.
// allow, when not nil, maps a provider name to the digest it may run
// with whatever the trust file says (Options.Allow).
type packageTrust struct {
	manager.Trust
	allow map[string]string
}

func (t packageTrust) Check(name, path, digest string) trust.Verdict {
	if d, ok := declaredDigest(name, path, digest); ok {
		digest = d
	}
	if d, ok := t.allow[name]; ok && d == digest && digest != "" {
		return trust.Verdict{Mode: trust.ModePinned, State: trust.StateApproved, Digest: digest}
	}
	return t.Trust.Check(name, path, digest)
}

// declaredDigest is the digest of a declared server that installs a
// package, whose declaration at path has the digest fileDigest; ok is
// false for any other plugin file (its own digest stands).
func declaredDigest(name, path, fileDigest string) (string, bool) {
	spec := PackageSpec(path)
	if spec == nil || fileDigest == "" {
		return "", false
	}
	dir, err := PackagesDir(name)
	if err != nil {
		return "", false
	}
	in, err := packages.Current(dir, spec)
	if err != nil {
		return "", false
	}
	d, err := packages.Digest(fileDigest, in)
	if err != nil {
		d, _ = packages.Digest(fileDigest, nil)
	}
	return d, true
}

// PluginDigest is the digest approve records for the plugin file at
// path, of provider name: the file's, or for a declared server that
// installs a package, the one covering its installed tree.
func PluginDigest(name, path string) (string, error) {
	d, err := trust.Digest(path)
	if err != nil {
		return "", err
	}
	if pd, ok := declaredDigest(name, path, d); ok {
		return pd, nil
	}
	return d, nil
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
