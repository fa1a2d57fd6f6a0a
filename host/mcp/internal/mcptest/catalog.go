// Package mcptest holds what the tests of host/mcp and its transports
// share: an in-memory catalog whose tools exercise the protocol, and a check
// of every message against the official schemas.
package mcptest

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

// Catalog is an in-memory mcp.Catalog (this package cannot import mcp,
// whose own tests use it) with tools that exercise the protocol:
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
//	args     returns its raw arguments as text, {} when absent or null (as
//	         the real catalog defaults them; not listed)
//	late     returns at once, keeping its Call to misuse later (not listed)
//	caps     returns its ClientCapabilities as text (not listed)
//	<script> any of the input scripts (see Scripts; not listed) needing the
//	         client's input, answered as a CallToolResult
//	job…     the task tools (see tasks.go; not listed)
//
// Any other name is tool.ErrUnknownTool. ListTools pages by pageSize. The
// rest of the surface (resources, prompts, completion, subscriptions) is
// described in surface.go.
type Catalog struct {
	pageSize int

	mu       sync.Mutex
	subs     map[int]func(tool.Change)
	watchers map[int]func(string)
	next     int
	// live counts the live subscriptions of each URI (released ones gone).
	live map[string]int
	// execs counts the runs of input scripts.
	execs atomic.Int64

	running atomic.Int64 // calls running right now
	peak    atomic.Int64 // the most calls ever running at once
	// OnChange, when set, is called after a call parks (tests' event hook).
	OnChange func()
	// NoPark makes slow return at once (for fuzzing).
	NoPark bool

	parkMu   sync.Mutex
	parked   []*parkedCall // slow calls parked, in the order they parked
	lateCall *tool.Call    // the last call of the late tool
	// scriptCtx is the context of the last input script run.
	scriptCtx context.Context
	// lastInput is the Input of the last retry of an input script.
	lastInput *tool.Input
	jobs      jobs // the task tools' (tasks.go)
}

// parkedCall is a slow call waiting to be released or cancelled.
type parkedCall struct {
	ctx      context.Context
	release  chan struct{}
	released bool
}

// NewCatalog returns a Catalog whose lists page by 3.
func NewCatalog() *Catalog {
	return &Catalog{pageSize: 3, subs: map[int]func(tool.Change){}, watchers: map[int]func(string){}, live: map[string]int{}}
}

// ToolNames are the listed tools, in list order.
var ToolNames = []string{"chatty", "echo", "fail", "garbage", "pretty", "slow"}

func (c *Catalog) ListTools(cursor string) ([]json.RawMessage, string, error) {
	return c.page(cursor, ToolNames, func(name string) string {
		return `{"name":"` + name + `","description":"the ` + name + ` tool",` + "\n" + `  "inputSchema":{"type":"object"}}`
	})
}

// page returns the page of names starting at cursor ("page-N"), each item
// made by item, and the next page's cursor.
func (c *Catalog) page(cursor string, names []string, item func(string) string) ([]json.RawMessage, string, error) {
	start := 0
	if cursor != "" {
		n, ok := strings.CutPrefix(cursor, "page-")
		i, err := strconv.Atoi(n)
		if !ok || err != nil || i <= 0 || i >= len(names) {
			return nil, "", fmt.Errorf("%w: %q", tool.ErrInvalidCursor, cursor)
		}
		start = i
	}
	end := min(start+c.pageSize, len(names))
	var items []json.RawMessage
	for _, name := range names[start:end] {
		items = append(items, json.RawMessage(item(name)))
	}
	next := ""
	if end < len(names) {
		next = "page-" + strconv.Itoa(end)
	}
	return items, next, nil
}

func (c *Catalog) call(ctx context.Context, call *tool.Call) (json.RawMessage, error) {
	n := c.running.Add(1)
	defer c.running.Add(-1)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
	call.Provider, call.Routed = "test", call.Name // as the catalog names who serves it
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
		if c.NoPark {
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
		if a := strings.TrimSpace(string(call.Arguments)); a == "" || a == "null" {
			return tool.TextResult("{}"), nil // the real catalog's default
		}
		return tool.TextResult(string(call.Arguments)), nil
	case "late":
		c.parkMu.Lock()
		c.lateCall = call
		c.parkMu.Unlock()
		return tool.TextResult("returned"), nil
	case "caps":
		return tool.TextResult(string(call.ClientCapabilities)), nil
	case "sly": // unlisted: a result that claims what only the host may say
		return json.RawMessage(`{"resultType":"input_required","ttlMs":99,"content":[{"type":"text","text":"sly"}],` +
			`"inputRequests":{"x":{"method":"roots/list"}}}`), nil
	case "fail":
		return nil, errors.New("backend exploded")
	case "garbage":
		return json.RawMessage("{oops"), nil
	case "pretty":
		return json.RawMessage("{\n  \"content\": [\n    {\"type\": \"text\", \"text\": \"a\\nb\"}\n  ]\n}\n"), nil
	}
	if res, err, ok := c.callJob(ctx, call); ok {
		return res, err
	}
	if _, ok := scripts[call.Name]; ok {
		text, failed, err := c.script(ctx, call.Name, call.Input)
		switch {
		case err != nil:
			return nil, err
		case failed:
			return tool.ErrorResult(text), nil
		}
		return tool.TextResult(text), nil
	}
	return nil, fmt.Errorf("%w: %q", tool.ErrUnknownTool, call.Name)
}

// StartCall runs the call on a goroutine of its own, as a plugin's stream
// reader would answer (mcp.Catalog).
func (c *Catalog) StartCall(ctx context.Context, call *tool.Call, done func(json.RawMessage, error)) {
	go func() { done(c.call(ctx, call)) }()
}

func (c *Catalog) park(ctx context.Context) *parkedCall {
	p := &parkedCall{ctx: ctx, release: make(chan struct{})}
	c.parkMu.Lock()
	c.parked = append(c.parked, p)
	c.parkMu.Unlock()
	if c.OnChange != nil {
		c.OnChange()
	}
	return p
}

func (c *Catalog) unpark(p *parkedCall) {
	c.parkMu.Lock()
	defer c.parkMu.Unlock()
	c.parked = slices.DeleteFunc(c.parked, func(q *parkedCall) bool { return q == p })
}

// LiveParked counts the parked calls that are neither released nor
// cancelled: calls that will write nothing until something happens. It
// changes at once when a call is released or cancelled, before the call's
// goroutine wakes.
func (c *Catalog) LiveParked() int64 {
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

// ReleaseOne lets the longest-parked live call return "slow done". It
// reports false if no call is parked.
func (c *Catalog) ReleaseOne() bool {
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

func (c *Catalog) Subscribe(fn func(tool.Change)) (cancel func()) {
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

// Change tells every subscriber that the tool list changed.
func (c *Catalog) Change() { c.ChangeLists(tool.Change{Tools: true}) }

// ChangeLists tells every subscriber that the lists of ch changed.
func (c *Catalog) ChangeLists(ch tool.Change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, fn := range c.subs {
		fn(ch)
	}
}

// Subscribers counts the subscribers.
func (c *Catalog) Subscribers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.subs)
}

// Running is the number of calls running now.
func (c *Catalog) Running() int64 { return c.running.Load() }

// Peak is the most calls ever running at once.
func (c *Catalog) Peak() int64 { return c.peak.Load() }

// Parked is the number of slow calls parked, live or not yet gone.
func (c *Catalog) Parked() int {
	c.parkMu.Lock()
	defer c.parkMu.Unlock()
	return len(c.parked)
}

// LateCall is the Call the late tool kept, to misuse.
func (c *Catalog) LateCall() *tool.Call {
	c.parkMu.Lock()
	defer c.parkMu.Unlock()
	return c.lateCall
}
