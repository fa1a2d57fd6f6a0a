// Command peer-gosdk serves the benchmark's echo tool in-process with
// github.com/modelcontextprotocol/go-sdk (a raw-schema tool: the handler
// decodes its arguments itself): MCP over stdio, or with -http ADDR over
// Streamable HTTP at /mcp (the SDK's defaults).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const schema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`

func echo(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.Text == nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: `missing required argument "text"`}}}, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: *args.Text}}}, nil
}

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP on this address (endpoint /mcp) instead of stdio")
	flag.Parse()
	srv := mcp.NewServer(&mcp.Implementation{Name: "peer-gosdk", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", Description: "Returns the given text unchanged.", InputSchema: json.RawMessage(schema)}, echo)
	var err error
	if *addr != "" {
		mux := http.NewServeMux()
		mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
		err = http.ListenAndServe(*addr, mux)
	} else {
		err = srv.Run(context.Background(), &mcp.StdioTransport{})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peer-gosdk:", err)
		os.Exit(1)
	}
}
