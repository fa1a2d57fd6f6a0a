// Command peer-floor is the benchmark's hand-written echo server (package
// floor): MCP over stdio, or with -http ADDR over HTTP at /mcp.
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"

	"github.com/plughost/plughost/bench/internal/floor"
)

func main() {
	addr := flag.String("http", "", "serve HTTP on this address (endpoint /mcp) instead of stdio")
	flag.Parse()
	var err error
	if *addr != "" {
		mux := http.NewServeMux()
		mux.Handle("/mcp", floor.Handler())
		err = http.ListenAndServe(*addr, mux)
	} else {
		err = floor.Serve(os.Stdin, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer-floor:", err)
		os.Exit(1)
	}
}
