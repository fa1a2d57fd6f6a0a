// Command peer-mcpgo serves the benchmark's echo tool in-process with
// github.com/mark3labs/mcp-go: MCP over stdio, or with -http ADDR over
// Streamable HTTP at /mcp (the library's defaults).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

const schema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`

func echo(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text, err := req.RequireString("text")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText(text), nil
}

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP on this address (endpoint /mcp) instead of stdio")
	flag.Parse()
	srv := server.NewMCPServer("peer-mcpgo", "1", server.WithToolCapabilities(false))
	srv.AddTool(mcp.NewToolWithRawSchema("echo", "Returns the given text unchanged.", json.RawMessage(schema)), echo)
	var err error
	if *addr != "" {
		err = server.NewStreamableHTTPServer(srv).Start(*addr)
	} else {
		err = server.ServeStdio(srv)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer-mcpgo:", err)
		os.Exit(1)
	}
}
