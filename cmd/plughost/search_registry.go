package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/plughost/plughost/host/registry"
)

// searchRegistryCommand is `plughost search-registry QUERY`: the latest
// version of each server of the registry whose name holds QUERY, with
// its description and what it offers (package types, remotes; those
// plughost cannot run marked).
func searchRegistryCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("search-registry", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "HCL configuration file: its registry block")
	registryFlag := fs.String("registry", "", "the MCP Registry: its URL, or a file or directory of server.json documents (default: --config's registry block, else "+registry.DefaultURL+")")
	limit := fs.Int("limit", 30, fmt.Sprintf("the most servers listed (at most %d)", registry.MaxSearchResults))
	query, err := parseWithArg(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	cfg, err := installConfig(*cfgPath)
	if err != nil {
		return err
	}
	src, err := openRegistry(*registryFlag, cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	found, err := src.Search(ctx, query, *limit)
	if err != nil {
		return err
	}
	if len(found) == 0 {
		fmt.Fprintf(stdout, "no server of %s has %q in its name\n", src, query)
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
		fmt.Fprintf(stdout, "%s %s%s\n  %s\n  offers: %s\n", s.Name, s.Version, status, s.Description, strings.Join(offers, ", "))
	}
	fmt.Fprintf(stdout, "install one with: plughost install NAME[@VERSION]\n")
	return nil
}
