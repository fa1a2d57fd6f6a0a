package preflight

import (
	"errors"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/manager"
)

// checkHooks reports each hook of cfg whose plugin no file of the plugin
// directory dir is (as the manager would load it: manager.Find), at the
// hook's block in the configuration src. Serve starts with such a hook
// (a plugin may be installed later), but until then every question to it
// fails, and its on_error decides every request it matches.
func (r *Report) checkHooks(dir string, cfg *config.Config, src []byte, filename string) {
	for _, h := range cfg.Hooks {
		_, _, err := manager.Find(dir, h.Plugin)
		if err == nil {
			continue
		}
		if !errors.Is(err, manager.ErrNoPlugin) {
			return // the directory cannot be read: checkDeclarations says so
		}
		consequence := "every request it matches is refused (on_error = \"refuse\")"
		if h.OnError == config.HookOnErrorPass {
			consequence = "it is skipped (on_error = \"pass\")"
		}
		r.add(hookBlock(src, filename, h.Name), fmt.Sprintf("hook %q names plugin %q, which is not in %s: %s", h.Name, h.Plugin, dir, consequence),
			fmt.Sprintf("install the plugin (put it in %s), or correct plugin = in the hook block", dir))
	}
}

// hookBlock is "file:line" of hook "name" in the hooks block of src; ""
// when it is not found.
func hookBlock(src []byte, filename, name string) string {
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return ""
	}
	for _, b := range file.Body.(*hclsyntax.Body).Blocks {
		if b.Type != "hooks" {
			continue
		}
		for _, h := range b.Body.Blocks {
			if h.Type == "hook" && len(h.Labels) == 1 && h.Labels[0] == name {
				return at(h.TypeRange)
			}
		}
	}
	return ""
}
