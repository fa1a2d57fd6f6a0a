// Command echo is a bundled plughost plugin with two tools: echo, which
// returns its text, and sleep, a test tool that waits, reports progress and
// honours cancellation. See README.md.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/plughost/plughost/pluginproto"
)

// version is set at build time (-X main.version=...).
var version = "dev"

// maxSleep bounds the sleep tool, so that a typo cannot hold a call for days.
const maxSleep = 10 * time.Minute

// progressEvery is how often sleep reports progress when asked.
const progressEvery = 100 * time.Millisecond

func main() {
	pluginproto.Serve(newPlugin())
}

func newPlugin() *pluginproto.Plugin {
	p := pluginproto.New("echo", version)
	p.SetAbout(pluginproto.About{Title: "Echo", Description: "Returns text unchanged and waits on request: tools to try a client and the host with."})
	p.AddTool(pluginproto.Tool{
		Name:        "echo",
		Title:       "Echo",
		Description: "Returns the given text unchanged.",
		InputSchema: json.RawMessage(`{"type":"object",` +
			`"properties":{"text":{"type":"string","description":"The text to return."}},` +
			`"required":["text"],"additionalProperties":false}`),
		Annotations: &pluginproto.Annotations{ReadOnlyHint: new(true), OpenWorldHint: new(false)},
	}, echo)
	p.AddTool(pluginproto.Tool{
		Name:  "sleep",
		Title: "Sleep (for testing)",
		Description: "For testing hosts and clients: waits ms milliseconds, reporting progress every 100 ms " +
			"when asked, and stops early when the call is cancelled.",
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object",`+
			`"properties":{"ms":{"type":"integer","minimum":0,"maximum":%d,"description":"How long to wait, in milliseconds."}},`+
			`"required":["ms"],"additionalProperties":false}`, maxSleep.Milliseconds())),
		Annotations: &pluginproto.Annotations{ReadOnlyHint: new(true), OpenWorldHint: new(false)},
	}, sleeper{p}.sleep)
	return p
}

func echo(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	var args struct {
		Text *string `json:"text"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	if args.Text == nil {
		return pluginproto.ErrorResult(`missing required argument "text"`), nil
	}
	return pluginproto.TextResult(*args.Text), nil
}

// sleeper holds the plugin, whose logger tells the operator about
// cancelled sleeps.
type sleeper struct{ p *pluginproto.Plugin }

func (s sleeper) sleep(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	var args struct {
		MS *int64 `json:"ms"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	switch {
	case args.MS == nil:
		return pluginproto.ErrorResult(`missing required argument "ms"`), nil
	case *args.MS < 0 || *args.MS > maxSleep.Milliseconds():
		return pluginproto.ErrorResult(`argument "ms" is %d; want 0 to %d`, *args.MS, maxSleep.Milliseconds()), nil
	}
	ms := *args.MS
	start := time.Now()
	done := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer done.Stop()
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		select {
		case <-done.C:
			return pluginproto.TextResult(fmt.Sprintf("slept %d ms", ms)), nil
		case <-tick.C:
			elapsed := min(time.Since(start).Milliseconds(), ms)
			req.Progress(float64(elapsed), float64(ms), fmt.Sprintf("slept %d of %d ms", elapsed, ms))
		case <-ctx.Done():
			elapsed := time.Since(start).Milliseconds()
			s.p.Logger().Info("sleep cancelled", "after_ms", elapsed, "of_ms", ms)
			return pluginproto.ErrorResult("sleep cancelled after %d of %d ms", elapsed, ms), nil
		}
	}
}
