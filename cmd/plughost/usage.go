package main

import (
	"flag"
	"fmt"
	"io"
)

// usageError reports a mistake on the command line in one line.
func usageError(stderr io.Writer, fs *flag.FlagSet, format string, args ...any) error {
	fmt.Fprintf(stderr, "plughost %s: %s (run plughost %s --help)\n", fs.Name(), fmt.Sprintf(format, args...), fs.Name())
	return errUsage
}
