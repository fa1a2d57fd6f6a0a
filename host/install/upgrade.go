package install

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/registry"
	"github.com/plughost/plughost/host/serve"
)

// Installed is the declaration NAME.mcp.json of the plugin
// directory plugins (the flag), nil when there is none or it does not
// parse (serve.Upgrade then says why).
func Installed(plugins, name string) *declared.Server {
	dir, err := serve.ResolveDir(plugins, "plugins", "--plugins")
	if err != nil {
		return nil
	}
	d, err := declared.Load(filepath.Join(dir, name+declared.Suffix))
	if err != nil {
		return nil
	}
	return d
}

// UpgradeFromRegistry upgrades the server d, which plughost install
// installed from a registry, to the registry's latest version: the new
// declaration (the same values, the new version) is written and its
// package installed beside the old, the server started and its
// definitions compared; the old declaration and package stay when
// anything fails. A bundle's new version is downloaded and unpacked
// beside the old (stageBundle), and removed again when it fails.
func UpgradeFromRegistry(o *serve.Options, name string, d *declared.Server, registryFlag string, stdout, stderr io.Writer) error {
	cfg, err := serve.LoadConfig(o.Config)
	if err != nil {
		return err
	}
	src, err := registry.Open(cmp.Or(registryFlag, d.Origin.Registry), cfg.Registry.Timeout)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	latest, err := src.Get(ctx, d.Origin.Name, "")
	if err != nil {
		return err
	}
	if latest.Server.Version == d.Origin.Version {
		fmt.Fprintf(stdout, "%s: %s %s is the latest version in %s\n", name, d.Origin.Name, d.Origin.Version, src)
		return nil
	}
	old, err := src.Get(ctx, d.Origin.Name, d.Origin.Version)
	if err != nil {
		return fmt.Errorf("the installed version, to compare with: %w; install the new one again: plughost install --force %s", err, d.Origin.Name)
	}
	next, err := registry.Upgrade(d, &old.Server, &latest.Server)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	var staged *stagedBundle
	if d.Bundle != "" {
		dir, err := serve.ResolveDir(o.Plugins, "plugins", "--plugins")
		if err != nil {
			return err
		}
		declPath := filepath.Join(dir, name+declared.Suffix)
		if staged, err = stageBundle(ctx, cfg, name, declPath, d, next, &latest.Server); err != nil {
			return fmt.Errorf("%s: the old version stays: %w", name, err)
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(next); err != nil {
		staged.undo()
		return err
	}
	u, err := serve.UpgradeTo(o, name, b.Bytes(), stderr)
	if err != nil {
		staged.undo()
		return err
	}
	fmt.Fprintf(stdout, "%s: %s %s → %s\n", u.Plugin, d.Origin.Name, d.Origin.Version, latest.Server.Version)
	if u.Next != nil && u.Old != nil {
		fmt.Fprintf(stdout, "installed %s beside %s\n", u.Next, u.Old)
	}
	staged.done(stdout, stderr)
	if err := WriteDefinitionsDiff(stdout, u.Before, u.After, u.From); err != nil {
		return err
	}
	if u.Pinned {
		fmt.Fprintf(stdout, "%s is in trust mode %q: it is held until approved (plughost approve %s --digest %s)\n", u.Plugin, config.TrustPinned, u.Plugin, u.Digest)
	} else {
		fmt.Fprintf(stdout, "%s runs %s from its next start\n", u.Plugin, latest.Server.Version)
	}
	return nil
}
