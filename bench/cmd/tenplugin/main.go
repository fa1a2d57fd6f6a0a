// Command tenplugin is the benchmark's scale plugin: a plughost plugin with
// ten tools. Its tools are named after its file (<file>_t0 … <file>_t9), so
// that a hundred copies (hard links under different names) offer a thousand
// distinct tools without clashes, each with a schema of its own (a host that
// compiled one schema once for all would be measured on a case no real set
// of servers gives it).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/plughost/plughost/pluginproto"
)

func main() {
	base := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, filepath.Base(os.Args[0]))
	p := pluginproto.New("tenplugin", "1")
	for i := range 10 {
		p.AddTool(pluginproto.Tool{
			Name:        fmt.Sprintf("%s_t%d", base, i),
			Description: fmt.Sprintf("Benchmark tool %d of %s: returns its text.", i, base),
			InputSchema: map[string]any{
				"type":       "object",
				"properties": map[string]any{"text": map[string]any{"type": "string", "description": fmt.Sprintf("The text %s_t%d returns.", base, i)}},
				"required":   []string{"text"},
			},
		}, echo)
	}
	pluginproto.Serve(p)
}

func echo(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	var args struct {
		Text string `json:"text"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	return pluginproto.TextResult(args.Text), nil
}
