package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/plughost/plughost/host/serve"
	"github.com/plughost/plughost/sandbox"
)

// sandboxSummary is the sandbox column of `plughost plugins`.
func sandboxSummary(layers []string) string {
	if len(layers) == 0 {
		return "sandbox none"
	}
	return "sandbox " + strings.Join(layers, ",")
}

// sandboxCommand runs `plughost sandbox probe`.
func sandboxCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sandbox", flag.ContinueOnError)
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() != 1 || fs.Arg(0) != "probe" {
		fmt.Fprintln(stderr, "usage: plughost sandbox probe   (print what this machine's sandbox supports)")
		return errUsage
	}
	run, err := serve.OpenRunDir(hclog.New(&hclog.LoggerOptions{Name: "plughost", Output: stderr}))
	if err != nil {
		return err
	}
	defer run.Remove()
	s, err := sandbox.Probe(&sandbox.Options{StateDir: run.Path()})
	if err != nil {
		return err
	}
	s.Print(stdout)
	return nil
}
