package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/mcpb"
	"github.com/plughost/plughost/host/trust"
	"github.com/plughost/plughost/host/wrapped"
	"github.com/plughost/plughost/sandbox"
)

// MCP Bundles (package mcpb): a declared server whose declaration names a
// bundle ({"bundle": "x.mcpb"}), or a .mcpb file in the plugin directory,
// runs the bundle's server unpacked under BundlesDir, as a declared stdio
// server whose command its manifest gives.

// BundlesDir is where the bundles of the declared server name are
// unpacked: $XDG_STATE_HOME/plughost/bundles/NAME/SHA256/, out of the
// server's data directory (it is granted read-only) so that it cannot
// change what it runs.
func BundlesDir(name string) (string, error) {
	state, err := StateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(state, "bundles", name), nil
}

// BundlePath is the bundle file a declaration at declPath names: an
// absolute path, or one relative to the plugin directory (the
// declaration's).
func BundlePath(declPath string, s *declared.Server) string {
	if filepath.IsAbs(s.Bundle) {
		return filepath.Clean(s.Bundle)
	}
	return filepath.Join(filepath.Dir(declPath), s.Bundle)
}

// envBundleExpect hands the wrapper what the manifest says the server
// offers (wrapped.Expected, JSON).
const envBundleExpect = "PLUGHOST_BUNDLE_EXPECT"

// OpenedBundle is a bundle file read, its signature checked and its
// files unpacked and verified.
type OpenedBundle struct {
	*mcpb.Installed
	Manifest *mcpb.Manifest
}

// OpenBundle reads the bundle file at path, checks it is the one pinned
// (sha256, hex; "" pins none), checks its signature (CheckBundleSignature
// with cfg's settings), and makes it unpacked under root (mcpb.Ensure),
// refusing a manifest this host cannot run (its platform, runtimes and
// server type) before a file is written.
func OpenBundle(cfg *config.Config, path, sha256, root string) (*OpenedBundle, error) {
	b, sum, err := mcpb.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if sha256 != "" && sum != sha256 {
		return nil, fmt.Errorf("bundle %s has SHA-256 %s, and the declaration pins %s (bundle_sha256): "+
			"install the new one with `plughost install --force %s`", path, sum, sha256, path)
	}
	archive, signer, err := CheckBundleSignature(cfg, b)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", path, err)
	}
	in, m, err := mcpb.Ensure(root, sum, archive, signer, BundleLimits(cfg), BundleRunnable)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", path, err)
	}
	return &OpenedBundle{Installed: in, Manifest: m}, nil
}

// BundleLimits are the limits of what a bundle may unpack to: cfg's
// plugins { bundle_limits { } }, mcpb's defaults for those it leaves
// unset.
func BundleLimits(cfg *config.Config) mcpb.Limits {
	l := cfg.Plugins.BundleLimits
	return mcpb.Limits{MaxFiles: l.MaxFiles, MaxFile: l.MaxFileSize, MaxTotal: l.MaxTotalSize}
}

// BundleRunnable reports why a bundle's manifest cannot run here: its
// server type, platform or runtimes.
func BundleRunnable(m *mcpb.Manifest) error {
	if m.Server.Type == mcpb.TypeUV {
		return errors.New(`server type "uv": uv bundles need uv and the network to install their Python dependencies: not supported yet`)
	}
	h := mcpb.Host{Platform: mcpb.Platform(runtime.GOOS)}
	if needs(m, "node") {
		h.Node = interpreterVersion("node")
	}
	if needs(m, "python") {
		h.Python = interpreterVersion("python3")
	}
	return m.Compatible(h)
}

// needs reports whether m's compatibility names the runtime rt.
func needs(m *mcpb.Manifest, rt string) bool {
	_, ok := m.Compatibility.RuntimesOf()[rt]
	return ok
}

// interpreterVersion is the version of the interpreter named that the
// sandbox's PATH finds ("22.1.0"), or "" when there is none.
func interpreterVersion(name string) string {
	prog, err := sandbox.LookCommand(name, sandbox.PluginPATH)
	if err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, prog, "--version").Output()
	if err != nil {
		return ""
	}
	v := strings.TrimSpace(string(out)) // "v22.1.0", "Python 3.11.7"
	v = strings.TrimPrefix(strings.TrimPrefix(v, "Python "), "v")
	return v
}

// bundleLaunch turns the bundle declaration s of the plugin name (at
// declPath) into the stdio server it runs: the bundle opened (OpenBundle),
// its user_config values from the declaration (the sensitive ones read
// from their files here, by the host), its command, args and env from its
// mcp_config (mcpb.Manifest.Launch), its unpacked directory granted
// read-only. The directories and files its values name are not granted
// here: the operator grants them in the plugin's sandbox block (`plughost
// install` writes it), as anything a declaration cannot grant itself.
// What the manifest says the server offers goes to the wrapper, to be
// compared with what it lists (held in trust mode pinned and signed).
func bundleLaunch(cfg *config.Config, name, declPath string, s *declared.Server, cmd *exec.Cmd, pol *sandbox.Policy, log hclog.Logger) error {
	root, err := BundlesDir(name)
	if err != nil {
		return err
	}
	b, err := OpenBundle(cfg, BundlePath(declPath, s), s.BundleSHA256, root)
	if err != nil {
		return err
	}
	given, err := s.UserConfigValues()
	if err != nil {
		return err
	}
	vals := mcpb.Values{}
	for k, v := range given {
		if vals[k], err = b.Manifest.Value(k, v); err != nil {
			return err
		}
	}
	l, err := b.Manifest.Launch(b.Dir, mcpb.Platform(runtime.GOOS), vals)
	if err != nil {
		return err
	}
	if b.Manifest.Server.Type == mcpb.TypeBinary {
		if rel, err := filepath.Rel(b.Dir, l.Command); err != nil || !filepath.IsAbs(l.Command) || rel == ".." || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("bundle %s: a binary server's command %q is not a file of the bundle", b.Manifest.Name, l.Command)
		}
	}
	s.Command, s.Args, s.Env = l.Command, l.Args, l.Env
	s.Bundle, s.BundleSHA256, s.UserConfig, s.UserConfigFiles = "", "", nil, nil
	pol.AllowRead = append(pol.AllowRead, b.Dir)
	log.Debug("bundle unpacked", "plugin", name, "bundle", b.Manifest.Name, "version", b.Manifest.Version, "dir", b.Dir, "tree", b.Tree, "signer", b.Signer)
	exp := expectedOf(b.Manifest, trust.Mode(cfg.Trust.ModeFor(name)).HoldsDefinitions())
	if exp == nil {
		return nil
	}
	raw, err := json.Marshal(exp)
	if err != nil {
		return err
	}
	cmd.Env = append(cmd.Env, envBundleExpect+"="+string(raw))
	pol.Env = append(pol.Env, envBundleExpect)
	return nil
}

// bundleIdentity is what a bundle declaration's trust digest covers
// beyond the declaration: the bundle file's SHA-256 (the unpacked tree
// is checked against what that file unpacked to before every start), or
// why it has none.
func bundleIdentity(declPath string, s *declared.Server) string {
	path := BundlePath(declPath, s)
	_, sum, err := mcpb.ReadFile(path)
	if err != nil {
		return path + " (unreadable)"
	}
	return path + " sha256:" + sum
}

// expectedOf is what m says its server offers, for the wrapper to
// compare (hold: refuse a difference); nil when it lists nothing.
func expectedOf(m *mcpb.Manifest, hold bool) *wrapped.Expected {
	names := func(ns []mcpb.Named) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.Name)
		}
		return out
	}
	e := &wrapped.Expected{Tools: names(m.Tools), Prompts: names(m.Prompts), Hold: hold}
	if e.Tools == nil && e.Prompts == nil {
		return nil
	}
	return e
}

// bundleDigest is declaredIdentity's digest of a bundle's declaration
// (or .mcpb file) at path, whose file has the digest fileDigest: it
// covers the bundle file too (bundleIdentity), so that a new bundle at
// the same path waits for its approval.
func bundleDigest(fileDigest, path string, s *declared.Server) (string, map[string]string, bool) {
	parts := map[string]string{"declaration": fileDigest, "bundle": bundleIdentity(path, s)}
	h := sha256.New()
	for _, f := range []string{"plughost-declared-bundle/v1", fileDigest, parts["bundle"]} {
		fmt.Fprintf(h, "%d:%s;", len(f), f)
	}
	return trust.SHA256Digest(hex.EncodeToString(h.Sum(nil))), parts, true
}
