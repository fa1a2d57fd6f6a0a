package preflight

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/declared"
)

// checkDeclarations reports, for each declared server in dir (NAME.mcp.json),
// a declaration that does not load, and each of its secret sources
// (bearer_token_file, bearer_token_env, header_files, env_files, oauth's
// client secret) that is missing (a file that cannot be read, a variable
// unset) or not granted to it by its sandbox block in cfg (the rule the
// launch applies: declared.Source.Granted). Each problem is at the
// declaration's file, with its fix.
func (r *Report) checkDeclarations(dir string, cfg *config.Config, configFile string, getenv func(string) string) {
	configName := "the configuration file (--config)"
	if configFile != "" {
		configName = configFile
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		r.add(dir, fmt.Sprintf("plugin directory: %v", unwrapPath(err)), "create it, or pass --plugins DIR")
		return
	}
	for _, e := range ents {
		name, ok := declared.Name(e.Name())
		if !ok || e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		s, err := declared.Load(path)
		if err != nil {
			r.add(path, err.Error(), "correct the declaration (the server does not start)")
			continue
		}
		pol := cfg.Sandbox.PolicyFor(name)
		for _, src := range s.Sources() {
			if what := src.Missing(getenv); what != "" {
				fix := "create the file, holding the secret on one line, readable by plughost alone (chmod 600)"
				if src.Env != "" {
					fix = "export $" + src.Env + " in serve's environment"
				}
				r.add(path, what, fix)
			}
			if err := src.Granted(pol, name); err != nil {
				ue := err.(*declared.UngrantedError)
				what := ue.Source.Env
				if ue.Path != "" {
					what = ue.Path
				}
				r.add(path, fmt.Sprintf("%s %s is not granted to server %q: it does not start", src.Member, what, name),
					fmt.Sprintf("add %s to %s in %s", ue.Grant, ue.Block, configName))
			}
		}
	}
}
