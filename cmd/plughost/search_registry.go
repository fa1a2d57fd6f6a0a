package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/plughost/plughost/host/install"
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return install.Search(ctx, *cfgPath, *registryFlag, query, *limit, stdout)
}
