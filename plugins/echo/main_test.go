package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/plughost/plughost/internal/pluginhost"
)

type result struct {
	Content []struct {
		Type, Text string
	}
	IsError bool
}

func call(t *testing.T, ctx context.Context, tool, args string, progress func(p, total float64, msg string)) result {
	t.Helper()
	raw, err := pluginhost.Of(newPlugin()).CallTool(ctx, &pluginhost.CallRequest{Tool: tool, Arguments: json.RawMessage(args), Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	var r result
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTools(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		tool, args string
		want       string
		wantError  bool
	}{
		"echo":               {tool: "echo", args: `{"text":"hello, plugin"}`, want: "hello, plugin"},
		"echo empty text":    {tool: "echo", args: `{"text":""}`, want: ""},
		"echo missing text":  {tool: "echo", args: `{}`, want: `missing required argument "text"`, wantError: true},
		"echo text not text": {tool: "echo", args: `{"text":42}`, want: `invalid arguments for tool "echo": json: cannot unmarshal number into Go struct field .text of type string`, wantError: true},
		"sleep zero":         {tool: "sleep", args: `{"ms":0}`, want: "slept 0 ms"},
		"sleep short":        {tool: "sleep", args: `{"ms":5}`, want: "slept 5 ms"},
		"sleep missing ms":   {tool: "sleep", args: `{}`, want: `missing required argument "ms"`, wantError: true},
		"sleep negative":     {tool: "sleep", args: `{"ms":-1}`, want: `argument "ms" is -1; want 0 to 600000`, wantError: true},
		"sleep too long":     {tool: "sleep", args: `{"ms":600001}`, want: `argument "ms" is 600001; want 0 to 600000`, wantError: true},
		"sleep not integer":  {tool: "sleep", args: `{"ms":1.5}`, want: `invalid arguments for tool "sleep"`, wantError: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := call(t, t.Context(), tc.tool, tc.args, nil)
			if len(r.Content) != 1 || r.Content[0].Type != "text" {
				t.Fatalf("content = %+v, want one text block", r.Content)
			}
			if r.IsError != tc.wantError || !strings.HasPrefix(r.Content[0].Text, tc.want) {
				t.Errorf("got %q (isError %v), want %q (isError %v)", r.Content[0].Text, r.IsError, tc.want, tc.wantError)
			}
		})
	}
}

func TestSleepReportsProgress(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var reports [][2]float64
	r := call(t, t.Context(), "sleep", `{"ms":350}`, func(p, total float64, msg string) {
		mu.Lock()
		defer mu.Unlock()
		reports = append(reports, [2]float64{p, total})
	})
	if r.IsError || r.Content[0].Text != "slept 350 ms" {
		t.Fatalf("result = %+v", r)
	}
	// Ticks may be dropped on a loaded machine, so the count is not exact;
	// each report must be of 350 and larger than the one before.
	if len(reports) == 0 {
		t.Fatal("no progress reported during a 350 ms sleep")
	}
	for i, rep := range reports {
		if rep[1] != 350 || rep[0] > 350 || (i > 0 && rep[0] <= reports[i-1][0]) {
			t.Errorf("progress reports %v: report %d is out of order or range", reports, i)
		}
	}
}

func TestSleepStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var once sync.Once
	// Cancel at the first progress report: the sleep is then under way.
	r := call(t, ctx, "sleep", `{"ms":600000}`, func(float64, float64, string) { once.Do(cancel) })
	if !r.IsError || !strings.HasPrefix(r.Content[0].Text, "sleep cancelled after ") {
		t.Errorf("result = %+v, want an isError result saying the sleep was cancelled", r)
	}
}

func TestToolDefinitions(t *testing.T) {
	t.Parallel()
	var names []string
	for _, raw := range newPlugin().Tools() {
		var tool struct {
			Name        string
			InputSchema map[string]any
		}
		if err := json.Unmarshal(raw, &tool); err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		if _, ok := tool.InputSchema["required"]; !ok {
			t.Errorf("tool %s has no required arguments listed", tool.Name)
		}
	}
	if diff := cmp.Diff([]string{"echo", "sleep"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}
