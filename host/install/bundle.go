package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/importer"
	"github.com/plughost/plughost/host/mcpb"
	"github.com/plughost/plughost/host/serve"
	"github.com/plughost/plughost/internal/ask"
	"github.com/plughost/plughost/pluginproto"
)

// Bundle installs the MCP Bundle file at path; origin says which
// registry entry it came from (nil: a file the user named).
//
// The bundle is read (bounded), its signature checked with the
// configuration's policy, its manifest validated and its compatibility
// with this host checked, all before anything is written. Then its
// user_config values are asked (sensitive ones never from --set), the
// file copied to STATE/bundles/NAME/SHA256.mcpb and unpacked beside it,
// its sensitive values written to STATE/secrets/NAME/KEY (mode 0600),
// NAME.mcp.json written naming the copy and pinning its SHA-256, and the
// plugin block granting its directories and files added to the
// configuration. A failure removes what this install wrote; a previous
// install of NAME stays as it was until the new declaration replaces
// its own.
func Bundle(e *Env, path string, origin *declared.Origin) error {
	b, sum, err := mcpb.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w; nothing installed", err)
	}
	cfg, err := serve.LoadConfig(e.ConfigPath) // its trust mode and bundle signature roots, as serve reads them
	if err != nil {
		return err
	}
	archive, signer, err := serve.CheckBundleSignature(cfg, b)
	if err != nil {
		return fmt.Errorf("bundle %s: %w; nothing installed", path, err)
	}
	m, err := mcpb.Read(archive, serve.BundleLimits(cfg))
	if err == nil {
		err = serve.BundleRunnable(m)
	}
	if err != nil {
		return fmt.Errorf("bundle %s: %w; nothing installed", path, err)
	}
	name, err := providerName(e.Name, m.Name)
	if err != nil {
		return err
	}
	declPath := filepath.Join(e.PluginDir, name+declared.Suffix)
	old, err := declared.Load(declPath)
	switch {
	case err == nil && !e.Force:
		return fmt.Errorf("%s is installed already (%s): --force replaces it, --name installs the bundle under another name", name, declPath)
	case err != nil && !errors.Is(err, fs.ErrNotExist) && !e.Force:
		return fmt.Errorf("%s: %w (--force replaces it)", declPath, err)
	}
	describeBundle(e, name, path, sum, signer, m)
	if err := goAhead(e); err != nil {
		return err
	}
	vals, secrets, err := askUserConfig(e.Ask, m)
	if err != nil {
		return fmt.Errorf("%w; nothing installed", err)
	}
	dirs, files, err := m.Paths(vals)
	if err != nil {
		return fmt.Errorf("%w; nothing installed", err)
	}
	if _, err := m.Launch("/bundle", mcpb.Platform(runtime.GOOS), vals); err != nil && !missingOnlySecrets(err, secrets) {
		return fmt.Errorf("%w; nothing installed", err)
	}
	secretDir := filepath.Join(e.StateDir, "secrets", name)
	d := &declared.Server{UserConfigFiles: map[string]string{}, UserConfig: map[string]any{}}
	for _, k := range slices.Sorted(maps.Keys(secrets)) {
		d.UserConfigFiles[k] = filepath.Join(secretDir, "user_config."+k)
	}
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		d.UserConfig[k] = configJSON(m.UserConfig[k], vals[k])
	}
	secretFiles := slices.Sorted(maps.Values(d.UserConfigFiles))
	d.Requests = pluginproto.Requests{Read: append(slices.Clone(files), secretFiles...), Write: dirs}
	block := bundleBlock(name, dirs, files, secretFiles)
	if e.DryRun {
		fmt.Fprintf(e.Stdout, "\ndry run: nothing written; would write %s and add to %s:\n%s", declPath, e.ConfigOut, block.Text)
		return nil
	}

	root := filepath.Join(e.StateDir, "bundles", name)
	copyPath := filepath.Join(root, sum+declared.BundleSuffix)
	newCopy := !fileExists(copyPath)
	fresh := old == nil || old.BundleSHA256 != sum // what a failure removes
	undo := func() {
		if newCopy {
			os.Remove(copyPath)
		}
		if fresh {
			os.RemoveAll(filepath.Join(root, sum))
			os.Remove(filepath.Join(root, sum+".json"))
		}
	}
	if err := os.MkdirAll(root, 0o711); err != nil { // traversed by the server (uid 65534 under a root host)
		return err
	}
	if newCopy {
		if err := importer.WriteNew(copyPath, b, 0o444, true); err != nil {
			return fmt.Errorf("%w; nothing installed", err)
		}
	}
	opened, err := serve.OpenBundle(cfg, copyPath, sum, root)
	if err != nil {
		undo()
		return fmt.Errorf("%w; nothing installed", err)
	}
	for k, v := range secrets {
		if err := writeSecretFile(d.UserConfigFiles[k], v); err != nil {
			undo()
			return fmt.Errorf("%w; nothing installed", err)
		}
	}
	d.Bundle, d.BundleSHA256 = copyPath, sum
	d.Origin = &declared.Origin{Name: m.Name, Version: m.Version, Type: "mcpb"}
	if origin != nil {
		d.Origin = origin
	}
	raw, err := json.MarshalIndent(d, "", "  ")
	if err == nil {
		_, err = declared.Parse(raw)
	}
	if err == nil {
		err = importer.WriteNew(declPath, append(raw, '\n'), 0o644, e.Force)
	}
	if err != nil {
		undo()
		return fmt.Errorf("%s: %w; nothing installed", declPath, err)
	}
	keep := []string{sum}
	if old != nil && old.BundleSHA256 != "" {
		keep = append(keep, old.BundleSHA256) // the previous version, until the next install
	}
	if err := mcpb.Prune(root, keep...); err != nil {
		fmt.Fprintf(e.Stderr, "note: old bundles under %s not all removed: %v\n", root, err)
	}
	fmt.Fprintf(e.Stdout, "\nwrote %s (bundle unpacked in %s)\n", declPath, opened.Dir)
	return writeBundleBlock(e, cfg, name, declPath, block)
}

// describeBundle shows what the bundle will run and asks for.
func describeBundle(e *Env, name, path, sum, signer string, m *mcpb.Manifest) {
	w := e.Stdout
	fmt.Fprintf(w, "\nplughost install %s as %q:\n", path, name)
	fmt.Fprintf(w, "  bundle:    %s %s (manifest %s), sha256 %s, %s\n", m.Title(), m.Version, m.ManifestVersion, sum, signer)
	mc := m.Server.MCPConfig
	fmt.Fprintf(w, "  runs:      a %s server (entry point %s): %s %s\n", m.Server.Type, m.Server.EntryPoint, mc.Command, strings.Join(mc.Args, " "))
	if len(m.Tools) > 0 {
		var names []string
		for _, t := range m.Tools {
			names = append(names, t.Name)
		}
		fmt.Fprintf(w, "  tools:     %s (compared with what it lists when it runs)\n", strings.Join(names, ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(m.UserConfig)) {
		c := m.UserConfig[k]
		var notes []string
		if c.Required {
			notes = append(notes, "required")
		}
		if c.Sensitive {
			notes = append(notes, "sensitive: kept in a file")
		}
		if c.Multiple {
			notes = append(notes, "several, comma-separated")
		}
		switch c.Type {
		case mcpb.ConfigDirectory:
			notes = append(notes, "granted read and write")
		case mcpb.ConfigFile:
			notes = append(notes, "granted read")
		}
		fmt.Fprintf(w, "  asks for:  %s (%s, %s)\n", k, c.Type, strings.Join(notes, ", "))
	}
}

// askUserConfig asks for each of m's user_config values, once: the
// values that are no secret (checked against their type) and the
// sensitive ones (kept apart: they go to files). A value left empty
// takes its default when the server starts. Directories and files are
// made absolute and must exist.
func askUserConfig(a *ask.Asker, m *mcpb.Manifest) (mcpb.Values, map[string]string, error) {
	vals, secrets := mcpb.Values{}, map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(m.UserConfig)) {
		c := m.UserConfig[k]
		v, err := a.Ask(ask.Question{Key: k, Title: c.Title, Description: c.Description, Required: c.Required && c.Default == nil, Secret: c.Sensitive})
		if err != nil {
			return nil, nil, fmt.Errorf("user_config %s: %w", k, err)
		}
		if v == "" {
			continue
		}
		if c.Sensitive {
			if _, err := m.Value(k, v); err != nil {
				return nil, nil, err
			}
			secrets[k] = v
			continue
		}
		var items []any
		if c.Multiple {
			for _, s := range strings.Split(v, ",") {
				items = append(items, strings.TrimSpace(s))
			}
		} else {
			items = []any{v}
		}
		for i, it := range items {
			if c.Type != mcpb.ConfigDirectory && c.Type != mcpb.ConfigFile {
				continue
			}
			p, err := filepath.Abs(it.(string))
			if err != nil {
				return nil, nil, err
			}
			st, err := os.Stat(p)
			switch {
			case err != nil:
				return nil, nil, fmt.Errorf("user_config %s: %w", k, err)
			case c.Type == mcpb.ConfigDirectory && !st.IsDir():
				return nil, nil, fmt.Errorf("user_config %s: %s is not a directory", k, p)
			case c.Type == mcpb.ConfigFile && !st.Mode().IsRegular():
				return nil, nil, fmt.Errorf("user_config %s: %s is not a regular file", k, p)
			}
			items[i] = p
		}
		var err2 error
		if vals[k], err2 = m.Value(k, items); err2 != nil {
			return nil, nil, err2
		}
	}
	return vals, secrets, nil
}

// missingOnlySecrets reports whether err is a MissingError of sensitive
// values given (the install's check runs without them: they go to files).
func missingOnlySecrets(err error, secrets map[string]string) bool {
	var me *mcpb.MissingError
	if !errors.As(err, &me) {
		return false
	}
	for _, k := range me.Keys {
		if _, ok := secrets[k]; !ok {
			return false
		}
	}
	return true
}

// configJSON is the declaration's JSON value of vs for c: a number, a
// boolean, a string, or a list for a "multiple" value.
func configJSON(c *mcpb.UserConfig, vs []string) any {
	one := func(s string) any {
		switch c.Type {
		case mcpb.ConfigNumber:
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				return f
			}
		case mcpb.ConfigBoolean:
			return s == "true"
		}
		return s
	}
	if !c.Multiple {
		return one(vs[0])
	}
	out := make([]any, 0, len(vs))
	for _, s := range vs {
		out = append(out, s)
	}
	return out
}

// bundleBlock is the plugin block granting the bundle's server what its
// values name: directories read and write, files and secret files read.
func bundleBlock(name string, dirs, files, secretFiles []string) importer.Block {
	var b bytes.Buffer
	fmt.Fprintf(&b, "  plugin %q {\n", name)
	b.WriteString("    # allow_net = [\"HOST:443\"] # none: add it if it calls an outside API\n")
	if read := slices.Concat(files, secretFiles); len(read) > 0 {
		fmt.Fprintf(&b, "    allow_read = %s # the files its user_config names, and its secret files\n", hclStrings(read))
	}
	if len(dirs) > 0 {
		fmt.Fprintf(&b, "    allow_write = %s # the directories its user_config names: move to allow_read those it only reads\n", hclStrings(dirs))
	}
	b.WriteString("  }\n")
	return importer.Block{Name: name, Text: b.String(), Plugin: true}
}

// hclStrings is an HCL list of strings ("${" escaped).
func hclStrings(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strings.ReplaceAll(strings.ReplaceAll(strconv.Quote(s), "${", "$${"), "%{", "%%{")
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// writeBundleBlock adds the plugin block to the configuration (or prints
// it, for --config-out -) and says how to start.
func writeBundleBlock(e *Env, cfg *config.Config, name, declPath string, block importer.Block) error {
	snippet := "sandbox {\n" + block.Text + "}\n"
	rec := installRecord{Name: name, Declaration: declPath} // for uninstall
	if e.ConfigOut == "-" {
		fmt.Fprint(e.Stdout, snippet)
		return writeInstallRecord(e.StateDir, &rec)
	}
	kept, err := importer.WriteConfig(e.ConfigOut, []importer.Block{block}, e.Force)
	if err != nil {
		return fmt.Errorf("configuration %s: NOT WRITTEN: %w; add this yourself:\n%s", e.ConfigOut, err, snippet)
	}
	if len(kept) > 0 {
		fmt.Fprintf(e.Stdout, "%s: KEPT its plugin block for %q as it was, not this one (--force replaces it):\n%s", e.ConfigOut, name, snippet)
	} else {
		rec.Config = e.ConfigOut
		fmt.Fprintf(e.Stdout, "added to %s:\n%s", e.ConfigOut, snippet)
	}
	if err := writeInstallRecord(e.StateDir, &rec); err != nil {
		return err
	}
	if cfg.Trust.ModeFor(name) == config.TrustPinned {
		fmt.Fprintf(e.Stdout, "trust mode pinned: it waits for `plughost approve %s`\n", name)
	}
	fmt.Fprintf(e.Stdout, "start with plughost serve --config %s\n", e.ConfigOut)
	return nil
}

// writeSecretFile writes a secret value to path, mode 0600, in a
// directory of mode 0700.
func writeSecretFile(path, value string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return importer.WriteNew(path, []byte(value+"\n"), 0o600, true)
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
