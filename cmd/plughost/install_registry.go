package main

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

// installFromRegistry installs the server ref (NAME[@VERSION]) of the
// configured MCP Registry: it is found and validated against the
// official schema, a way to run it chosen, its values asked, what it
// will run shown and agreed to; then its package is installed once and
// its declaration, secret files and plugin block written, or nothing is.
func installFromRegistry(e *installEnv, ref string) error {
	cfg, err := installConfig(e.configPath)
	if err != nil {
		return err
	}
	src, err := openRegistry(e.registry, cfg)
	if err != nil {
		return err
	}
	name, version := registry.SplitRef(ref)
	entry, err := src.Get(e.ctx, name, version)
	if err != nil {
		return err
	}
	s := &entry.Server
	switch entry.Status {
	case "deleted":
		return fmt.Errorf("%s@%s is deleted from %s: not installed", s.Name, s.Version, src)
	case "deprecated":
		fmt.Fprintf(e.stdout, "note: %s@%s is deprecated in %s\n", s.Name, s.Version, src)
	}
	choice, others, err := registry.Choose(s, e.typ)
	if err != nil {
		return err
	}
	provider, err := providerName(e.name, s.Name)
	if err != nil {
		return err
	}
	declPath := filepath.Join(e.pluginDir, provider+declared.Suffix)
	if _, err := os.Lstat(declPath); err == nil && !e.force {
		return fmt.Errorf("%s is installed already (%s): plughost upgrade %s, or --force to replace it, or --name to install it under another name", provider, declPath, provider)
	}
	plan, err := registry.Build(s, choice, src.String(), npmIndexes(), e.ask)
	if err != nil {
		return fmt.Errorf("%s@%s: %w; nothing installed", s.Name, s.Version, err)
	}
	fmt.Fprintf(e.stdout, "\nplughost install %s as %q:\n", s.Name, provider)
	plan.Describe(e.stdout, others)
	if plan.URL != "" && !e.oauth {
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

// installConfig is the configuration serve would run with: path, else
// $PLUGHOST_CONFIG, else the default file when it exists; an empty one
// without any (its registry block, its trust mode, its policies).
func installConfig(path string) (*config.Config, error) {
	return serve.LoadConfig(path)
}

// openRegistry opens the registry flag names, else the configuration's.
func openRegistry(flag string, cfg *config.Config) (registry.Source, error) {
	return registry.Open(cmp.Or(flag, cfg.Registry.URL), cfg.Registry.Timeout)
}

// probeOAuth asks a remote server whether it wants OAuth (a 401 naming
// its resource metadata): then the declaration gets "oauth": {}, as
// with --oauth, and install says to log in.
func probeOAuth(e *installEnv, plan *registry.Plan) {
	needs, err := registry.ProbeOAuth(e.ctx, http.DefaultClient, plan.URL, plan.Headers)
	switch {
	case err != nil:
		fmt.Fprintf(e.stdout, "  note: %s did not answer (%v): if it wants OAuth, install again with --oauth\n", plan.URL, err)
	case needs:
		e.oauth = true
		fmt.Fprintf(e.stdout, "  oauth:     it answers 401 naming its OAuth resource metadata: declared with \"oauth\": {}, log in with plughost login once installed\n")
	}
}

// installRegistryBundle downloads an mcpb package, checks its SHA-256
// before anything else, and installs it as a bundle file is.
func installRegistryBundle(e *installEnv, plan *registry.Plan) error {
	if e.dryRun {
		fmt.Fprintf(e.stdout, "dry run: would download %s, check its SHA-256, and install it; nothing written\n", plan.BundleURL)
		return nil
	}
	hc := &http.Client{Timeout: registry.DefaultDownloadTimeout}
	path, err := registry.DownloadBundle(e.ctx, hc, plan.BundleURL, plan.BundleSHA256, 0, "")
	if err != nil {
		return fmt.Errorf("%w; nothing installed", err)
	}
	defer os.Remove(path)
	origin := plan.Origin
	return installBundle(e, path, &origin)
}

// writeRegistryServer installs the plan's package once, then writes the
// declaration, its secret files and its plugin block; a failure at any
// step removes what the earlier ones wrote.
func writeRegistryServer(e *installEnv, cfg *config.Config, provider string, plan *registry.Plan) (err error) {
	own := append(serve.PlughostDirs(), filepath.Dir(e.configOut))
	opts := &importer.Options{PluginDir: e.pluginDir, Force: e.force, DryRun: true, StateDir: e.stateDir, Own: own, Secrets: plan.Secrets,
		Amend: func(d *declared.Server) {
			origin := plan.Origin
			d.Origin = &origin
			if e.oauth && d.URL != "" {
				d.OAuth = &declared.OAuth{}
			}
		}}
	file := &importer.File{Servers: map[string]json.RawMessage{provider: plan.Entry()}}
	dry := importer.Import(file, opts).Servers[0]
	if dry.Skipped != nil {
		return fmt.Errorf("%s: %w; nothing installed", provider, dry.Skipped)
	}
	blocks := importer.Blocks([]importer.Server{dry})
	writeConfig := e.configOut != "-"
	if writeConfig {
		src, rerr := os.ReadFile(e.configOut)
		if rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			return rerr
		}
		if _, _, err := importer.MergeConfig(src, e.configOut, blocks, e.force); err != nil {
			return fmt.Errorf("%w; nothing installed", err)
		}
	}
	if e.dryRun {
		fmt.Fprintf(e.stdout, "\ndry run: would write %s:\n  %s\n", filepath.Join(e.pluginDir, provider+declared.Suffix),
			strings.ReplaceAll(strings.TrimSpace(string(dry.Content)), "\n", "\n  "))
		fmt.Fprintf(e.stdout, "and its plugin block (to %s):\n%s", e.configOut, importer.Snippet([]importer.Server{dry}))
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
		if err := checkStateDir(e.stateDir); err != nil {
			return err
		}
		pkgDir, err := serve.PackagesDir(provider)
		if err != nil {
			return err
		}
		if _, serr := os.Stat(pkgDir); errors.Is(serr, fs.ErrNotExist) {
			undo = append(undo, func() { os.RemoveAll(pkgDir) })
		}
		inst, err := serve.CommandInstaller(cfg, provider, e.stderr)
		if err != nil {
			return err
		}
		in, err := inst.Ensure(e.ctx, plan.Spec)
		if err != nil {
			return fmt.Errorf("installing %s: %w", plan.Spec, err)
		}
		fmt.Fprintf(e.stdout, "installed %s into %s: it runs offline from there\n", in, pkgDir)
	}
	secretsDir := filepath.Join(e.stateDir, "secrets", provider)
	if _, serr := os.Stat(secretsDir); errors.Is(serr, fs.ErrNotExist) {
		undo = append(undo, func() { os.RemoveAll(secretsDir) })
	}
	declPath := filepath.Join(e.pluginDir, provider+declared.Suffix)
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
	fmt.Fprintf(e.stdout, "%s\n", srv.Status)
	for _, n := range srv.Notes {
		if n.Kind == importer.InfoNote && strings.Contains(n.Text, "installs it once") {
			continue // done now, not at its first start
		}
		fmt.Fprintf(e.stdout, "  %s: %s\n", n.Kind, n.Text)
	}
	rec := installRecord{Name: provider, Declaration: declPath}
	if writeConfig {
		kept, err := importer.WriteConfig(e.configOut, importer.Blocks([]importer.Server{srv}), e.force)
		if err != nil {
			return fmt.Errorf("configuration %s: %w", e.configOut, err)
		}
		if len(kept) == 0 {
			rec.Config = e.configOut
			fmt.Fprintf(e.stdout, "added its plugin block to %s:\n%s", e.configOut, blocks[0].Text)
		} else {
			fmt.Fprintf(e.stdout, "%s: KEPT its plugin block for %q as it was (--force replaces it); the one install would write:\n%s", e.configOut, provider, blocks[0].Text)
		}
	} else {
		fmt.Fprint(e.stdout, importer.Snippet([]importer.Server{srv}))
	}
	if err := writeInstallRecord(e.stateDir, &rec); err != nil {
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
func nextSteps(e *installEnv, cfg *config.Config, provider string) {
	if e.oauth {
		fmt.Fprintf(e.stdout, "next: plughost login %s (it logs in to the server once, in a browser)\n", provider)
	}
	if cfg.Trust.ModeFor(provider) == config.TrustPinned {
		fmt.Fprintf(e.stdout, "next: it is in trust mode pinned: it waits for plughost approve %s", provider)
		if e.configPath != "" {
			fmt.Fprintf(e.stdout, " --config %s", e.configPath)
		}
		fmt.Fprintln(e.stdout, ", which shows its definitions")
		return
	}
	fmt.Fprintf(e.stdout, "next: plughost serve serves it as %q\n", provider)
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
