package install

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/importer"
	"github.com/plughost/plughost/host/packages"
	"github.com/plughost/plughost/host/registry"
	"github.com/plughost/plughost/host/serve"
	"github.com/plughost/plughost/sandbox"
)

// FromRegistry installs the server ref (NAME[@VERSION]) of the
// configured MCP Registry: it is found and validated against the
// official schema, a way to run it chosen, its values asked, what it
// will run shown and agreed to; then its package is installed once and
// its declaration, secret files and plugin block written, or nothing is.
func FromRegistry(e *Env, ref string) error {
	cfg, err := serve.LoadConfig(e.ConfigPath)
	if err != nil {
		return err
	}
	src, err := openRegistry(e.Registry, cfg)
	if err != nil {
		return err
	}
	name, version := registry.SplitRef(ref)
	entry, err := src.Get(e.Ctx, name, version)
	if err != nil {
		return err
	}
	s := &entry.Server
	switch entry.Status {
	case "deleted":
		return fmt.Errorf("%s@%s is deleted from %s: not installed", s.Name, s.Version, src)
	case "deprecated":
		fmt.Fprintf(e.Stdout, "note: %s@%s is deprecated in %s\n", s.Name, s.Version, src)
	}
	choice, others, err := registry.Choose(s, e.Type)
	if err != nil {
		return err
	}
	provider, err := providerName(e.Name, s.Name)
	if err != nil {
		return err
	}
	declPath := filepath.Join(e.PluginDir, provider+declared.Suffix)
	if _, err := os.Lstat(declPath); err == nil && !e.Force {
		return fmt.Errorf("%s is installed already (%s): plughost upgrade %s, or --force to replace it, or --name to install it under another name", provider, declPath, provider)
	}
	plan, err := registry.Build(s, choice, src.String(), npmIndexes(), e.Ask)
	if err != nil {
		return fmt.Errorf("%s@%s: %w; nothing installed", s.Name, s.Version, err)
	}
	fmt.Fprintf(e.Stdout, "\nplughost install %s as %q:\n", s.Name, provider)
	plan.Describe(e.Stdout, others)
	if plan.URL != "" && !e.OAuth {
		probeOAuth(e, plan)
	}
	if err := goAhead(e); err != nil {
		return err
	}
	if plan.BundleURL != "" {
		return installRegistryBundle(e, plan)
	}
	return writeRegistryServer(e, cfg, provider, plan)
}

// openRegistry opens the registry flag names, else the configuration's.
func openRegistry(flag string, cfg *config.Config) (registry.Source, error) {
	return registry.Open(cmp.Or(flag, cfg.Registry.URL), cfg.Registry.Timeout)
}

// probeOAuth asks a remote server whether it wants OAuth (a 401 naming
// its resource metadata): then the declaration gets "oauth": {}, as
// with --oauth, and install says to log in.
func probeOAuth(e *Env, plan *registry.Plan) {
	needs, err := registry.ProbeOAuth(e.Ctx, http.DefaultClient, plan.URL, plan.Headers)
	switch {
	case err != nil:
		fmt.Fprintf(e.Stdout, "  note: %s did not answer (%v): if it wants OAuth, install again with --oauth\n", plan.URL, err)
	case needs:
		e.OAuth = true
		fmt.Fprintf(e.Stdout, "  oauth:     it answers 401 naming its OAuth resource metadata: declared with \"oauth\": {}, log in with plughost login once installed\n")
	}
}

// installRegistryBundle downloads an mcpb package, checks its SHA-256
// before anything else, and installs it as a bundle file is.
func installRegistryBundle(e *Env, plan *registry.Plan) error {
	if e.DryRun {
		fmt.Fprintf(e.Stdout, "dry run: would download %s, check its SHA-256, and install it; nothing written\n", plan.BundleURL)
		return nil
	}
	hc := &http.Client{Timeout: registry.DefaultDownloadTimeout}
	path, err := registry.DownloadBundle(e.Ctx, hc, plan.BundleURL, plan.BundleSHA256, 0, "")
	if err != nil {
		return fmt.Errorf("%w; nothing installed", err)
	}
	defer os.Remove(path)
	origin := plan.Origin
	return Bundle(e, path, &origin)
}

// writeRegistryServer installs the plan's package once, then writes the
// declaration, its secret files and its plugin block; a failure at any
// step removes what the earlier ones wrote.
func writeRegistryServer(e *Env, cfg *config.Config, provider string, plan *registry.Plan) (err error) {
	own := append(serve.PlughostDirs(), filepath.Dir(e.ConfigOut))
	opts := &importer.Options{PluginDir: e.PluginDir, Force: e.Force, DryRun: true, StateDir: e.StateDir, Own: own, Secrets: plan.Secrets,
		Amend: func(d *declared.Server) {
			origin := plan.Origin
			d.Origin = &origin
			if e.OAuth && d.URL != "" {
				d.OAuth = &declared.OAuth{}
			}
		}}
	file := &importer.File{Servers: map[string]json.RawMessage{provider: plan.Entry()}}
	dry := importer.Import(file, opts).Servers[0]
	if dry.Skipped != nil {
		return fmt.Errorf("%s: %w; nothing installed", provider, dry.Skipped)
	}
	blocks := importer.Blocks([]importer.Server{dry})
	writeConfig := e.ConfigOut != "-"
	if writeConfig {
		src, rerr := os.ReadFile(e.ConfigOut)
		if rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return rerr
		}
		if _, _, err := importer.MergeConfig(src, e.ConfigOut, blocks, e.Force); err != nil {
			return fmt.Errorf("%w; nothing installed", err)
		}
	}
	if e.DryRun {
		fmt.Fprintf(e.Stdout, "\ndry run: would write %s:\n  %s\n", filepath.Join(e.PluginDir, provider+declared.Suffix),
			strings.ReplaceAll(strings.TrimSpace(string(dry.Content)), "\n", "\n  "))
		fmt.Fprintf(e.Stdout, "and its plugin block (to %s):\n%s", e.ConfigOut, importer.Snippet([]importer.Server{dry}))
		return nil
	}

	var undo []func()
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				undo[i]()
			}
			err = fmt.Errorf("%w; nothing installed", err)
		}
	}()
	if plan.Spec != nil {
		if err := checkStateDir(e.StateDir); err != nil {
			return err
		}
		pkgDir, err := serve.PackagesDir(provider)
		if err != nil {
			return err
		}
		if _, serr := os.Stat(pkgDir); errors.Is(serr, fs.ErrNotExist) {
			undo = append(undo, func() { os.RemoveAll(pkgDir) })
		}
		inst, err := serve.CommandInstaller(cfg, provider, e.Stderr)
		if err != nil {
			return err
		}
		in, err := inst.Ensure(e.Ctx, plan.Spec)
		if err != nil {
			return fmt.Errorf("installing %s: %w", plan.Spec, err)
		}
		fmt.Fprintf(e.Stdout, "installed %s into %s: it runs offline from there\n", in, pkgDir)
	}
	secretsDir := filepath.Join(e.StateDir, "secrets", provider)
	if _, serr := os.Stat(secretsDir); errors.Is(serr, fs.ErrNotExist) {
		undo = append(undo, func() { os.RemoveAll(secretsDir) })
	}
	declPath := filepath.Join(e.PluginDir, provider+declared.Suffix)
	previous, perr := os.ReadFile(declPath) // --force: the one replaced, put back on a failure
	opts.DryRun = false
	srv := importer.Import(file, opts).Servers[0]
	if srv.Skipped != nil {
		return srv.Skipped
	}
	undo = append(undo, func() {
		if perr == nil {
			importer.WriteNew(declPath, previous, 0o600, true)
		} else {
			os.Remove(declPath)
		}
	})
	fmt.Fprintf(e.Stdout, "%s\n", srv.Status)
	for _, n := range srv.Notes {
		if n.Kind == importer.InfoNote && strings.Contains(n.Text, "installs it once") {
			continue // done now, not at its first start
		}
		fmt.Fprintf(e.Stdout, "  %s: %s\n", n.Kind, n.Text)
	}
	rec := installRecord{Name: provider, Declaration: declPath}
	if writeConfig {
		kept, err := importer.WriteConfig(e.ConfigOut, importer.Blocks([]importer.Server{srv}), e.Force)
		if err != nil {
			return fmt.Errorf("configuration %s: %w", e.ConfigOut, err)
		}
		if len(kept) == 0 {
			rec.Config = e.ConfigOut
			fmt.Fprintf(e.Stdout, "added its plugin block to %s:\n%s", e.ConfigOut, blocks[0].Text)
		} else {
			fmt.Fprintf(e.Stdout, "%s: KEPT its plugin block for %q as it was (--force replaces it); the one install would write:\n%s", e.ConfigOut, provider, blocks[0].Text)
		}
	} else {
		fmt.Fprint(e.Stdout, importer.Snippet([]importer.Server{srv}))
	}
	if err := writeInstallRecord(e.StateDir, &rec); err != nil {
		return err
	}
	nextSteps(e, cfg, provider)
	return nil
}

// checkStateDir refuses a --state other than serve's state directory for
// a package: the package cache is serve's (STATE/packages/NAME), and one
// installed elsewhere would be installed again, online, at the first
// start.
func checkStateDir(state string) error {
	serveState, err := serve.StateDir()
	if err != nil {
		return err
	}
	if filepath.Clean(state) != filepath.Clean(serveState) {
		return fmt.Errorf("--state %s is not serve's state directory (%s, from XDG_STATE_HOME): the package installed there would not be found by serve; set XDG_STATE_HOME instead", state, serveState)
	}
	return nil
}

// nextSteps says what comes next: logging in, approving.
func nextSteps(e *Env, cfg *config.Config, provider string) {
	if e.OAuth {
		fmt.Fprintf(e.Stdout, "next: plughost login %s (it logs in to the server once, in a browser)\n", provider)
	}
	if cfg.Trust.ModeFor(provider) == config.TrustPinned {
		fmt.Fprintf(e.Stdout, "next: it is in trust mode pinned: it waits for plughost approve %s", provider)
		if e.ConfigPath != "" {
			fmt.Fprintf(e.Stdout, " --config %s", e.ConfigPath)
		}
		fmt.Fprintln(e.Stdout, ", which shows its definitions")
		return
	}
	fmt.Fprintf(e.Stdout, "next: plughost serve serves it as %q\n", provider)
}

// npmIndexes are the package registries the user's npm and pip settings
// install from (as an install step gets them), to honour a package's
// registryBaseUrl.
func npmIndexes() registry.Indexes {
	home, _ := os.UserHomeDir()
	node, _ := sandbox.LookCommand("node", sandbox.PluginPATH)
	configs, _ := packages.NPMConfigs(home, node, os.Getenv)
	npmrc := map[string]string{}
	if settings, err := packages.NPMSettings(configs, os.Environ(), os.Getenv, false); err == nil {
		for _, line := range strings.Split(settings.NPMRC, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				npmrc[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	}
	idx := registry.Indexes{NPM: func(pkg string) string {
		if scope, _, ok := strings.Cut(pkg, "/"); ok && strings.HasPrefix(scope, "@") && npmrc[scope+":registry"] != "" {
			return npmrc[scope+":registry"]
		}
		return npmrc["registry"]
	}}
	if f := strings.Fields(os.Getenv("PIP_INDEX_URL")); len(f) > 0 {
		idx.PyPI = f[0]
	}
	return idx
}
