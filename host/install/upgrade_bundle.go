package install

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/importer"
	"github.com/plughost/plughost/host/mcpb"
	"github.com/plughost/plughost/host/registry"
	"github.com/plughost/plughost/host/serve"
)

// A bundle installed from a registry entry (origin type "mcpb") is
// upgraded as its other packages are, but its package identifier is the
// bundle's download URL, another for each version: the new version's
// bundle is downloaded, checked as plughost install checks one, and
// unpacked beside the old (STATE/bundles/NAME/SHA256/) before
// serve.UpgradeTo writes the declaration naming it. A bundle installed
// from a file has no newer version to ask for: BundleFromFile says
// how to install the new file over it.

// stagedBundle is a new version's bundle copied and unpacked beside the
// one a declaration names, not yet named by it.
type stagedBundle struct {
	// root is STATE/bundles/NAME; sum the new bundle's SHA-256, old the
	// one the declaration pins.
	root, sum, old string
	// copyPath is the new bundle's copy (root/SHA256.mcpb); newCopy and
	// fresh say whether this upgrade wrote it and its unpacked tree.
	copyPath       string
	newCopy, fresh bool
	// dir is where it is unpacked.
	dir string
}

// BundleFromFile is the error of plughost upgrade for the bundle
// declaration d of the plugin name that no registry entry installed:
// nothing says where a newer version is, so the user installs the new
// file over it (its values asked again, the declaration replaced).
func BundleFromFile(name string, d *declared.Server) error {
	return fmt.Errorf("%s runs the bundle %s, installed from a file, not from a registry entry: there is no newer version to ask for; "+
		"install the new file over it: plughost install --force ./new.mcpb --name %s", name, d.Bundle, name)
}

// stageBundle downloads the mcpb package of s, the registry entry the
// bundle declaration d (at declPath) is upgraded to, and makes next (d
// made to run s, registry.Upgrade) name it. The download's fileSha256 is
// checked before anything else; then, before anything is written, its
// signature (cfg's policy), its manifest and its compatibility with this
// host, and that it asks for the user_config values d gives
// (sameUserConfig). Then it is copied and unpacked beside the old one.
// The caller undoes the staging when the new version fails, and prunes
// once it runs.
func stageBundle(ctx context.Context, cfg *config.Config, name, declPath string, d, next *declared.Server, s *registry.Server) (*stagedBundle, error) {
	choice, _, err := registry.Choose(s, registry.TypeMCPB)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", s.Name, s.Version, err)
	}
	pkg := choice.Package
	hc := &http.Client{Timeout: registry.DefaultDownloadTimeout}
	path, err := registry.DownloadBundle(ctx, hc, pkg.Identifier, pkg.FileSHA256, 0, "")
	if err != nil {
		return nil, err
	}
	defer os.Remove(path)
	b, sum, m, err := readBundle(cfg, path)
	if err != nil {
		return nil, err
	}
	_, _, installed, err := readBundle(cfg, serve.BundlePath(declPath, d))
	if err != nil {
		return nil, fmt.Errorf("the installed bundle, to compare with: %w", err)
	}
	if err := sameUserConfig(installed, m); err != nil {
		return nil, fmt.Errorf("%s %s asks for other user_config than %s did: %w; install it again: plughost install --force %s@%s",
			s.Name, s.Version, d.Origin.Version, err, s.Name, s.Version)
	}
	root, err := serve.BundlesDir(name)
	if err != nil {
		return nil, err
	}
	st := &stagedBundle{root: root, sum: sum, old: d.BundleSHA256, copyPath: filepath.Join(root, sum+declared.BundleSuffix), fresh: sum != d.BundleSHA256}
	st.newCopy = !fileExists(st.copyPath)
	if err := os.MkdirAll(root, 0o711); err != nil { // traversed by the server (uid 65534 under a root host)
		return nil, err
	}
	if st.newCopy {
		if err := importer.WriteNew(st.copyPath, b, 0o444, true); err != nil {
			return nil, err
		}
	}
	opened, err := serve.OpenBundle(cfg, st.copyPath, sum, root)
	if err != nil {
		st.undo()
		return nil, err
	}
	st.dir = opened.Dir
	next.Bundle, next.BundleSHA256 = st.copyPath, sum
	return st, nil
}

// readBundle reads the bundle file at path as plughost install does
// before writing anything: its bytes and SHA-256, its signature checked
// with cfg's policy, its manifest validated and checked runnable here.
func readBundle(cfg *config.Config, path string) ([]byte, string, *mcpb.Manifest, error) {
	b, sum, err := mcpb.ReadFile(path)
	if err != nil {
		return nil, "", nil, err
	}
	archive, _, err := serve.CheckBundleSignature(cfg, b)
	if err != nil {
		return nil, "", nil, fmt.Errorf("bundle %s: %w", path, err)
	}
	m, err := mcpb.Read(archive, serve.BundleLimits(cfg))
	if err == nil {
		err = serve.BundleRunnable(m)
	}
	if err != nil {
		return nil, "", nil, fmt.Errorf("bundle %s: %w", path, err)
	}
	return b, sum, m, nil
}

// sameUserConfig reports how next's user_config differs from old's in
// what the values given for old would mean: a key gone, a key of another
// type (or now several, or now sensitive: kept in a file), or a new key
// required without a default. A new optional key is no difference (it
// takes its default), nor are titles and descriptions.
func sameUserConfig(old, next *mcpb.Manifest) error {
	var diffs []string
	for _, k := range slices.Sorted(maps.Keys(old.UserConfig)) {
		o, n := old.UserConfig[k], next.UserConfig[k]
		switch {
		case n == nil:
			diffs = append(diffs, k+" is gone")
		case o.Type != n.Type || o.Multiple != n.Multiple || o.Sensitive != n.Sensitive:
			diffs = append(diffs, fmt.Sprintf("%s is of type %s, was %s", k, configKind(n), configKind(o)))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(next.UserConfig)) {
		if n := next.UserConfig[k]; old.UserConfig[k] == nil && n.Required && n.Default == nil {
			diffs = append(diffs, k+" is new and required")
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%s", strings.Join(diffs, ", "))
	}
	return nil
}

// configKind describes a user_config's type: "directory", "directory
// (several)", "string (sensitive)".
func configKind(c *mcpb.UserConfig) string {
	var notes []string
	if c.Multiple {
		notes = append(notes, "several")
	}
	if c.Sensitive {
		notes = append(notes, "sensitive")
	}
	if len(notes) == 0 {
		return c.Type
	}
	return c.Type + " (" + strings.Join(notes, ", ") + ")"
}

// undo removes what staging wrote: the copy, and the unpacked tree when
// it is not the one the declaration names. Nil-safe.
func (st *stagedBundle) undo() {
	if st == nil {
		return
	}
	if st.newCopy {
		os.Remove(st.copyPath)
	}
	if st.fresh {
		os.RemoveAll(filepath.Join(st.root, st.sum))
		os.Remove(filepath.Join(st.root, st.sum+".json"))
	}
}

// done prunes the unpacked bundles but the new one and the one it
// replaced (kept until the next upgrade, as plughost install keeps it),
// and says where the new one is. Nil-safe.
func (st *stagedBundle) done(stdout, stderr io.Writer) {
	if st == nil {
		return
	}
	if err := mcpb.Prune(st.root, st.sum, st.old); err != nil {
		fmt.Fprintf(stderr, "note: old bundles under %s not all removed: %v\n", st.root, err)
	}
	fmt.Fprintf(stdout, "unpacked the new bundle in %s\n", st.dir)
}
