package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// allTools are the tools of the echo, clock and conformance plugins.
var allTools = func() []string {
	t := append([]string{"echo", "sleep", "get_current_time"}, conformanceTools...)
	slices.Sort(t)
	return t
}()

// TestFirstListIsComplete: a client that lists tools right after
// initialize gets every plugin's tools, not the part loaded so far, over
// stdio and over Streamable HTTP; first with an empty catalog cache (the
// list waits for the plugins to load), then with the cache the first run
// left (the list comes from it, before any plugin starts).
func TestFirstListIsComplete(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			dir, cache := t.TempDir(), t.TempDir()
			for _, p := range []string{"echo", "clock", "conformance"} {
				copyPlugin(t, p, dir, p)
			}
			for _, run := range []string{"cold cache", "warm cache"} {
				if got := firstList(t, tr, dir, cache); !slices.Equal(got, allTools) {
					t.Errorf("%s: the first tools/list = %v, want %v", run, got, allTools)
				}
			}
			if leftover := processesUnder(dir); len(leftover) > 0 {
				t.Errorf("plugin processes outlived the host: %v", leftover)
			}
		})
	}
}

// firstList starts plughost serving dir over tr with the catalog cache in
// cache, connects the go-sdk client, lists every tool once, and stops.
func firstList(t *testing.T, tr, dir, cache string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "plughost-e2e", Version: "1"}, nil)
	args := []string{"serve", "--plugins", dir, "--workspace", t.TempDir()}
	env := append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+cache, "PLUGHOST_TOKEN=")
	var cs *mcp.ClientSession
	var err error
	switch tr {
	case "stdio":
		cmd := exec.Command(bin.plughost, args...)
		cmd.Env = env
		cs, err = client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, sessionEra)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer cs.Close()
	case "http":
		cmd := exec.Command(bin.plughost, append(args, "--http", "127.0.0.1:0")...)
		cmd.Env = env
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
		var url string
		lines := bufio.NewScanner(stderr)
		for url == "" && lines.Scan() {
			if m := listenURL.FindStringSubmatch(lines.Text()); m != nil {
				url = m[1] + "/mcp"
			}
		}
		go func() { // keep the pipe drained
			for lines.Scan() {
			}
		}()
		if url == "" {
			t.Fatal("plughost printed no URL")
		}
		cs, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, sessionEra)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer cs.Close()
	}
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}
