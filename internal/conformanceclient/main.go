// Command conformanceclient is the harness the official MCP conformance
// suite starts to judge plughost's OAuth client (package
// host/oauthclient) — `conformance client --suite auth`, run by
// conformance/run.sh:
//
//	conformance-client SERVER_URL    (MCP_CONFORMANCE_SCENARIO names the scenario,
//	                                  MCP_CONFORMANCE_CONTEXT holds its client credentials)
//
// It connects to SERVER_URL as a wrapped remote server's wrapper does —
// the go-sdk client over Streamable HTTP, its HTTP client an
// oauthclient.Transport — lists the tools and calls test-tool. Unlike the
// wrapper, it lets the go-sdk client choose the protocol revision: the
// suite's 2026-07-28 scenarios serve a server of that revision, which
// refuses the wrapper's pinned 2025-11-25 initialize for a missing
// MCP-Protocol-Version header before any authorization happens; what is
// judged here is the authorization, which is the same code either way. The
// authorization code scenarios go through oauthclient.Login, the code
// behind `plughost login`, with this program as the browser: it follows
// the authorization server's redirect to Login's loopback listener. The
// client credentials scenarios go through oauthclient.ClientCredentials.
// It exits 1 with the error when the scenario's flow fails (some scenarios
// expect that: a wrong iss, poisoned metadata).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/oauthclient"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: conformance-client SERVER_URL (with MCP_CONFORMANCE_SCENARIO set)")
		os.Exit(2)
	}
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var cc struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &cc); err != nil {
			fmt.Fprintf(os.Stderr, "MCP_CONFORMANCE_CONTEXT: %v\n", err)
			os.Exit(2)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := run(ctx, scenario, os.Args[1], cc.ClientID, cc.ClientSecret); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", scenario, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, scenario, server, clientID, secret string) error {
	if strings.HasPrefix(scenario, "auth/client-credentials-") {
		hc := &http.Client{Transport: &oauthclient.Transport{Handler: &oauthclient.ClientCredentials{ClientID: clientID, ClientSecret: secret}}}
		return use(ctx, server, hc)
	}
	_, err := oauthclient.Login(ctx, &oauthclient.LoginOptions{
		Name: "conformance", ServerURL: server,
		ClientID: clientID, ClientSecret: secret,
		ClientMetadataURL: "https://conformance-test.local/client-metadata.json",
		Browse:            browse,
		Connect:           func(ctx context.Context, hc *http.Client) error { return use(ctx, server, hc) },
	})
	return err
}

// use connects to server with hc, lists the tools and calls test-tool.
func use(ctx context.Context, server string, hc *http.Client) error {
	client := mcp.NewClient(&mcp.Implementation{Name: "plughost-conformance", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: server, HTTPClient: hc}, nil)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test-tool", Arguments: map[string]any{}}); err != nil {
		return fmt.Errorf("tools/call test-tool: %w", err)
	}
	return nil
}

// browse is the user's browser: it opens the authorization URL, whose
// server answers at once with a redirect to Login's listener, and follows
// it there. Login's fetcher waits for the listener, not for this.
func browse(authURL string) {
	go func() {
		resp, err := http.Get(authURL)
		if err != nil {
			fmt.Fprintf(os.Stderr, "browser: %v\n", err)
			return
		}
		resp.Body.Close()
	}()
}
