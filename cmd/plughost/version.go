package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/plughost/plughost/internal/versioninfo"
)

// commit is set at build time with version (-X main.commit=...).
var commit string

// versionCommand prints the version, commit, Go version, platform and the
// plugin contract versions this host speaks (--json: as one object).
func versionCommand(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "plughost version: unexpected argument %q\n", fs.Arg(0))
		return errUsage
	}
	return versioninfo.Read(version, commit).Write(stdout, *asJSON)
}
