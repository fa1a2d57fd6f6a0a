package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/importer"
	"github.com/plughost/plughost/host/serve"
	"github.com/plughost/plughost/host/trust"
	"github.com/plughost/plughost/internal/atomicfile"
)

// installRecord is what plughost install wrote for a server beside its
// declaration, for uninstall: STATE/installed/NAME.json. Only what the
// operator's own command wrote is undone; a declaration cannot name a
// configuration file for uninstall to edit.
type installRecord struct {
	Name        string `json:"name"`
	Declaration string `json:"declaration"`
	// Config is the configuration file install added the plugin block
	// to; "" when it printed it only, or kept one already there.
	Config string `json:"config,omitempty"`
}

func recordPath(state, name string) string {
	return filepath.Join(state, "installed", name+".json")
}

func writeInstallRecord(state string, rec *installRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	path := recordPath(state, rec.Name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, b)
}

func readInstallRecord(state, name string) (*installRecord, error) {
	b, err := os.ReadFile(recordPath(state, name))
	if err != nil {
		return nil, err
	}
	var rec installRecord
	return &rec, json.Unmarshal(b, &rec)
}

// Uninstall removes the server name of the plugin directory plugins,
// which Install installed (its declaration has an origin) is removed whole:
// its declaration, its package cache (STATE/packages/NAME), its bundle
// (STATE/bundles/NAME), its secret files (STATE/secrets/NAME), the
// plugin block install added to the configuration file, and its entry
// in the trust file (a later install of the same name is approved
// anew). Its data directory (STATE/plugins/NAME/data) is kept: it is
// the user's.
func Uninstall(plugins, state, cfgPath, name string, stdout io.Writer) error {
	decl := filepath.Join(plugins, name+declared.Suffix)
	s, err := declared.Load(decl)
	if err != nil {
		return err
	}
	if s.Origin == nil {
		return fmt.Errorf("%s was not installed by plughost install (its declaration has no origin): remove it yourself", decl)
	}
	rec, rerr := readInstallRecord(state, name)
	if err := os.Remove(decl); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "removed %s (%s %s)\n", decl, s.Origin.Name, s.Origin.Version)
	var errs []error
	for _, sub := range []string{"packages", "bundles", "secrets"} {
		p := filepath.Join(state, sub, name)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(stdout, "removed %s\n", p)
	}
	if rerr == nil && rec.Config != "" {
		removed, err := importer.RemovePluginBlock(rec.Config, name)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("its plugin block in %s: %w", rec.Config, err))
		case removed:
			fmt.Fprintf(stdout, "removed its plugin block from %s\n", rec.Config)
		}
	}
	if rerr == nil || !errors.Is(rerr, fs.ErrNotExist) {
		os.Remove(recordPath(state, name))
	}
	cfg, err := serve.LoadConfig(cfgPath)
	if err == nil {
		if tf, err := serve.TrustFile(cfg); err == nil {
			if f, err := trust.ReadFile(tf); err == nil {
				if _, ok := f.Plugins[name]; ok {
					if err := trust.Revoke(tf, name); err != nil {
						errs = append(errs, err)
					} else {
						fmt.Fprintf(stdout, "removed its entry from %s\n", tf)
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}
