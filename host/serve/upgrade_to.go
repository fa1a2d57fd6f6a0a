package serve

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/packages"
	"github.com/plughost/plughost/internal/atomicfile"
)

// UpgradeTo replaces the declaration of the declared server name of o's
// plugin directory by next: the same server at another version, as
// plughost upgrade writes it for a server plughost install installed
// from a registry. Next's package (if it runs one) is installed beside
// the one that runs, then the server is started in a host of o and its
// definitions listed; when any step fails, the old declaration and the
// old package are put back and the error says why. Upgraded.Old and
// Next are nil for a remote server.
func UpgradeTo(o *Options, name string, next []byte, stderr io.Writer) (*Upgraded, error) {
	if _, err := declared.Parse(next); err != nil {
		return nil, fmt.Errorf("the new declaration: %w", err)
	}
	cfg, dir, plugin, file, err := findDeclared(o, name)
	if err != nil {
		return nil, err
	}
	previous, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	hf := *o
	hf.Plugins = dir
	before, from, err := definitionsBefore(&hf, cfg, plugin, file, stderr)
	if err != nil {
		return nil, err
	}
	u := &Upgraded{Plugin: plugin, Before: before, From: from}
	var inst *packages.Installer
	if spec := PackageSpec(file); spec != nil {
		if inst, err = CommandInstaller(cfg, plugin, stderr); err != nil {
			return nil, err
		}
		pkgDir, err := PackagesDir(plugin)
		if err != nil {
			return nil, err
		}
		if u.Old, err = packages.Current(pkgDir, spec); err != nil {
			return nil, err
		}
	}
	if err := atomicfile.Write(file, next); err != nil {
		return nil, err
	}
	back := func(why error) error {
		err := atomicfile.Write(file, previous)
		if err == nil && u.Old != nil && inst != nil {
			err = inst.Use(u.Old)
		}
		if err != nil {
			return fmt.Errorf("%s: the new version failed (%v), and going back failed: %w", plugin, why, err)
		}
		return fmt.Errorf("%s: the old version stays: %w", plugin, why)
	}
	if u.Spec = PackageSpec(file); u.Spec != nil {
		if inst == nil {
			if inst, err = CommandInstaller(cfg, plugin, stderr); err != nil {
				return nil, back(err)
			}
		}
		if u.Next, err = inst.Ensure(context.Background(), u.Spec); err != nil {
			return nil, back(err)
		}
	}
	after, ok, err := listOnce(&hf, plugin, file, stderr)
	if err == nil && !ok {
		err = fmt.Errorf("it listed nothing (see its errors above)")
	}
	if err != nil {
		return nil, back(fmt.Errorf("it did not start: %w", err))
	}
	u.After = after
	if u.Digest, _, err = PluginDigest(plugin, file); err != nil {
		return nil, err
	}
	u.Pinned = cfg.Trust.ModeFor(plugin) == config.TrustPinned
	return u, nil
}
