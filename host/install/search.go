package install

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/plughost/plughost/host/registry"
	"github.com/plughost/plughost/host/serve"
)

// Search writes the latest version of each server of the registry
// (registryFlag, else the configuration's registry block) whose name
// holds query, at most limit, with its description and what it offers
// (package types, remotes; those plughost cannot run marked).
func Search(ctx context.Context, cfgPath, registryFlag, query string, limit int, w io.Writer) error {
	cfg, err := serve.LoadConfig(cfgPath)
	if err != nil {
		return err
	}
	src, err := openRegistry(registryFlag, cfg)
	if err != nil {
		return err
	}
	found, err := src.Search(ctx, query, limit)
	if err != nil {
		return err
	}
	if len(found) == 0 {
		fmt.Fprintf(w, "no server of %s has %q in its name\n", src, query)
		return nil
	}
	for _, e := range found {
		s := &e.Server
		choices, why := registry.Options(s)
		var offers []string
		for i, c := range choices {
			t := c.Type()
			if why[i] != "" {
				t += " (not supported)"
			}
			if !slices.Contains(offers, t) {
				offers = append(offers, t)
			}
		}
		status := ""
		if e.Status != "" && e.Status != "active" {
			status = " [" + e.Status + "]"
		}
		fmt.Fprintf(w, "%s %s%s\n  %s\n  offers: %s\n", s.Name, s.Version, status, s.Description, strings.Join(offers, ", "))
	}
	fmt.Fprintf(w, "install one with: plughost install NAME[@VERSION]\n")
	return nil
}
