package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/plughost/plughost/host/serve"
	"github.com/plughost/plughost/host/tool"
)

// errToolFailed is returned when the tool answered with isError: true.
var errToolFailed = errors.New("the tool reported an error")

// callTool loads the plugins, calls one tool and prints its result: the text
// of each text block, other blocks and structuredContent as JSON lines, or
// the whole CallToolResult with --json. Progress and log messages go to stderr.
func callTool(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	var hf serve.Options
	registerHost(fs, &hf)
	argsJSON := fs.String("args", "{}", "the tool's arguments as a JSON object")
	rawJSON := fs.Bool("json", false, "print the whole CallToolResult as JSON")
	name, err := parseWithArg(fs, args, stdout, stderr)
	if err != nil {
		return err
	}
	if name == "" {
		return usageError(stderr, fs, "which tool? usage: plughost call TOOL [--args JSON]")
	}
	if !json.Valid([]byte(*argsJSON)) {
		return usageError(stderr, fs, "--args is not valid JSON: %s", *argsJSON)
	}

	h, err := serve.Start(&hf, stderr)
	if err != nil {
		return err
	}
	defer h.Stop()
	<-h.Manager().Ready()

	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	result, err := h.Catalog().CallTool(ctx, &tool.Call{
		Name:      name,
		Arguments: json.RawMessage(*argsJSON),
		Progress: func(p tool.Progress) {
			fmt.Fprintf(stderr, "progress %g/%g %s\n", p.Progress, p.Total, p.Message)
		},
		Log: func(l tool.Log) {
			fmt.Fprintf(stderr, "log %s %s %s\n", l.Level, l.Logger, l.Data)
		},
	})
	if errors.Is(err, tool.ErrUnknownTool) {
		return h.UnknownTool(name)
	}
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		// What an MCP client would get: an isError result naming the cause.
		res, rpcErr := tool.Outcome(err)
		if rpcErr != nil {
			return errors.New(rpcErr.Message)
		}
		result = res
	}
	return printResult(stdout, result, *rawJSON)
}

// printResult prints a CallToolResult for a person and reports isError.
func printResult(w io.Writer, result json.RawMessage, raw bool) error {
	var r struct {
		Content           []json.RawMessage `json:"content"`
		StructuredContent json.RawMessage   `json:"structuredContent"`
		IsError           bool              `json:"isError"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return fmt.Errorf("the tool returned an invalid result: %w", err)
	}
	if raw {
		fmt.Fprintf(w, "%s\n", result)
	} else {
		for _, c := range r.Content {
			var text struct{ Type, Text string }
			if json.Unmarshal(c, &text) == nil && text.Type == "text" {
				fmt.Fprintln(w, text.Text)
			} else {
				fmt.Fprintf(w, "%s\n", c)
			}
		}
		if len(r.Content) == 0 && len(r.StructuredContent) > 0 {
			fmt.Fprintf(w, "%s\n", r.StructuredContent)
		}
	}
	if r.IsError {
		return errToolFailed
	}
	return nil
}
