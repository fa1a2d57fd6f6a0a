// Command clock is a bundled plughost plugin with one tool,
// get_current_time, which tells the time of the machine it runs on, as text
// and as structured content. See README.md.
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

func main() {
	pluginproto.Serve(newPlugin(time.Now))
}

const inputSchema = `{"type":"object","properties":{"format":{"type":"string","enum":["simple","detailed"],"default":"simple",` +
	`"description":"simple: \"2026-11-22 14:03:05\"; detailed: weekday, date, time, time zone and Unix time."}},` +
	`"additionalProperties":false}`

const outputSchema = `{"type":"object","properties":{` +
	`"text":{"type":"string","description":"The time in the requested format."},` +
	`"iso8601":{"type":"string","format":"date-time","description":"The time in RFC 3339 form, with its UTC offset."},` +
	`"weekday":{"type":"string"},` +
	`"timezone":{"type":"string","description":"The time zone's abbreviation, such as CET."},` +
	`"utcOffset":{"type":"string","description":"The offset from UTC, such as +01:00."},` +
	`"unix":{"type":"integer","description":"Seconds since 1970-01-01T00:00:00Z."}},` +
	`"required":["text","iso8601","weekday","timezone","utcOffset","unix"],"additionalProperties":false}`

// newPlugin returns the clock plugin, reading the time from now.
func newPlugin(now func() time.Time) *pluginproto.Plugin {
	p := pluginproto.New("clock", version)
	p.SetAbout(pluginproto.About{Title: "Clock", Description: "The current date, time, weekday and time zone of the machine plughost runs on."})
	p.AddTool(pluginproto.Tool{
		Name:         "get_current_time",
		Title:        "Current time",
		Description:  "Returns the current local date and time of the machine plughost runs on.",
		InputSchema:  json.RawMessage(inputSchema),
		OutputSchema: json.RawMessage(outputSchema),
		Annotations:  &pluginproto.Annotations{ReadOnlyHint: new(true), OpenWorldHint: new(false)},
	}, clock{now}.currentTime)
	return p
}

type clock struct{ now func() time.Time }

// currentTime is the structured content of get_current_time.
type currentTime struct {
	Text      string `json:"text"`
	ISO8601   string `json:"iso8601"`
	Weekday   string `json:"weekday"`
	Timezone  string `json:"timezone"`
	UTCOffset string `json:"utcOffset"`
	Unix      int64  `json:"unix"`
}

func (c clock) currentTime(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
	var args struct {
		Format string `json:"format"`
	}
	if err := req.Bind(&args); err != nil {
		return nil, err
	}
	t := c.now()
	zone, _ := t.Zone()
	offset := t.Format("-07:00")
	var text string
	switch args.Format {
	case "", "simple":
		text = t.Format(time.DateTime)
	case "detailed":
		text = fmt.Sprintf("%s, %s %s (UTC%s), Unix time %d", t.Weekday(), t.Format(time.DateTime), zone, offset, t.Unix())
	default:
		return pluginproto.ErrorResult(`argument "format" is %q; want "simple" or "detailed"`, args.Format), nil
	}
	return &pluginproto.Result{
		Content: []pluginproto.Content{pluginproto.Text(text)},
		StructuredContent: currentTime{
			Text:      text,
			ISO8601:   t.Format(time.RFC3339),
			Weekday:   t.Weekday().String(),
			Timezone:  zone,
			UTCOffset: offset,
			Unix:      t.Unix(),
		},
	}, nil
}
