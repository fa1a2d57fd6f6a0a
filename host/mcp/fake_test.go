package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/plughost/plughost/host/tool"
)

// fakeCatalog is an in-memory Catalog with tools that exercise the protocol:
//
//	echo     returns arguments.text; a missing text is an isError result (as
//	         the real catalog answers a schema violation)
//	slow     reports progress 1 ("started"), then parks until the call is
//	         cancelled (returns ctx.Err()) or released (returns "slow done")
//	chatty   reports progress 1, 1, 0.5, 2/3 and logs at debug, info,
//	         warning and error, then returns "chatty done"
//	fail     returns an error (→ an isError result)
//	garbage  returns bytes that are not JSON
//	pretty   returns a result spread over several lines
//	args     returns its raw arguments as text (not listed)
//	late     returns at once, keeping its Call to misuse later (not listed)
//
// Any other name is tool.ErrUnknownTool. ListTools pages by pageSize.
type fakeCatalog struct {
	pageSize int

	mu   sync.Mutex
	subs map[int]func()
	next int

	running  atomic.Int64 // calls inside CallTool right now
	peak     atomic.Int64 // the most calls ever inside CallTool at once
	onChange func()       // called after a call parks (tests' event hook)
	noPark   bool         // slow returns at once (for fuzzing)

	parkMu   sync.Mutex
	parked   []*parkedCall // slow calls parked, in the order they parked
	lateCall *tool.Call    // the last call of the late tool
}

// parkedCall is a slow call waiting to be released or cancelled.
type parkedCall struct {
	ctx      context.Context
	release  chan struct{}
	released bool
}

func newFakeCatalog() *fakeCatalog {
	return &fakeCatalog{pageSize: 3, subs: map[int]func(){}}
}

var fakeToolNames = []string{"chatty", "echo", "fail", "garbage", "pretty", "slow"}

func (c *fakeCatalog) ListTools(cursor string) ([]json.RawMessage, string, error) {
	start := 0
	if cursor != "" {
		n, ok := strings.CutPrefix(cursor, "page-")
		i, err := strconv.Atoi(n)
		if !ok || err != nil || i <= 0 || i >= len(fakeToolNames) {
			return nil, "", fmt.Errorf("%w: %q", tool.ErrInvalidCursor, cursor)
		}
		start = i
	}
	end := min(start+c.pageSize, len(fakeToolNames))
	var tools []json.RawMessage
	for _, name := range fakeToolNames[start:end] {
		tools = append(tools, json.RawMessage(`{"name":"`+name+`","description":"the `+name+` tool",`+"\n"+
			`  "inputSchema":{"type":"object"}}`))
	}
	next := ""
	if end < len(fakeToolNames) {
		next = "page-" + strconv.Itoa(end)
	}
	return tools, next, nil
}

func (c *fakeCatalog) CallTool(ctx context.Context, call *tool.Call) (json.RawMessage, error) {
	n := c.running.Add(1)
	defer c.running.Add(-1)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
	switch call.Name {
	case "echo":
		var args struct {
			Text *string `json:"text"`
		}
		if err := json.Unmarshal(call.Arguments, &args); err != nil || args.Text == nil {
			return tool.ErrorResult("invalid arguments: text is required and must be a string"), nil
		}
		return tool.TextResult(*args.Text), nil
	case "slow":
		if call.Progress != nil {
			call.Progress(tool.Progress{Progress: 1, Message: "started"})
		}
		if c.noPark {
			return tool.TextResult("slow done"), nil
		}
		p := c.park(ctx)
		defer c.unpark(p)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-p.release:
			return tool.TextResult("slow done"), nil
		}
	case "chatty":
		if call.Progress != nil {
			for _, p := range []tool.Progress{{Progress: 1}, {Progress: 1}, {Progress: 0.5}, {Progress: 2, Total: 3, Message: "two of three"}} {
				call.Progress(p)
			}
		}
		for _, l := range []string{"debug", "info", "warning", "error"} {
			call.Log(tool.Log{Level: l, Logger: "chatty", Data: json.RawMessage(`{"said": "` + l + `"}`)})
		}
		call.Log(tool.Log{Level: "info", Data: json.RawMessage("not json")}) // dropped
		call.Log(tool.Log{Level: "loud", Data: json.RawMessage(`"unknown level"`)})
		return tool.TextResult("chatty done"), nil
	case "args":
		return tool.TextResult(string(call.Arguments)), nil
	case "late":
		c.parkMu.Lock()
		c.lateCall = call
		c.parkMu.Unlock()
		return tool.TextResult("returned"), nil
	case "fail":
		return nil, errors.New("backend exploded")
	case "garbage":
		return json.RawMessage("{oops"), nil
	case "pretty":
		return json.RawMessage("{\n  \"content\": [\n    {\"type\": \"text\", \"text\": \"a\\nb\"}\n  ]\n}\n"), nil
	}
	return nil, fmt.Errorf("%w: %q", tool.ErrUnknownTool, call.Name)
}

func (c *fakeCatalog) park(ctx context.Context) *parkedCall {
	p := &parkedCall{ctx: ctx, release: make(chan struct{})}
	c.parkMu.Lock()
	c.parked = append(c.parked, p)
	c.parkMu.Unlock()
	if c.onChange != nil {
		c.onChange()
	}
	return p
}

func (c *fakeCatalog) unpark(p *parkedCall) {
	c.parkMu.Lock()
	defer c.parkMu.Unlock()
	c.parked = slices.DeleteFunc(c.parked, func(q *parkedCall) bool { return q == p })
}

// liveParked counts the parked calls that are neither released nor
// cancelled: calls that will write nothing until something happens. It
// changes at once when a call is released or cancelled, before the call's
// goroutine wakes.
func (c *fakeCatalog) liveParked() int64 {
	c.parkMu.Lock()
	defer c.parkMu.Unlock()
	var n int64
	for _, p := range c.parked {
		if !p.released && p.ctx.Err() == nil {
			n++
		}
	}
	return n
}

// releaseOne lets the longest-parked live call return "slow done". It
// reports false if no call is parked.
func (c *fakeCatalog) releaseOne() bool {
	c.parkMu.Lock()
	defer c.parkMu.Unlock()
	for _, p := range c.parked {
		if !p.released && p.ctx.Err() == nil {
			p.released = true
			close(p.release)
			return true
		}
	}
	return false
}

func (c *fakeCatalog) Subscribe(fn func()) (cancel func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.next
	c.next++
	c.subs[id] = fn
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.subs, id)
	}
}

// change tells every subscriber that the tool list changed.
func (c *fakeCatalog) change() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, fn := range c.subs {
		fn()
	}
}

func (c *fakeCatalog) subscribers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.subs)
}

var _ Catalog = (*fakeCatalog)(nil)
