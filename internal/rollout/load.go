package rollout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Counts are what a Load's clients saw.
type Counts struct {
	// Requests counts the stateless (2026-07-28) tools/call requests
	// answered, and Failures those that were not answered with the echo
	// (an HTTP error, a JSON-RPC error, no connection).
	Requests, Failures int
	// SessionCalls counts the calls of the 2025-11-25 sessions,
	// SessionFailures those that failed otherwise than by the session's
	// 404, and Reinitialized the sessions that got 404 (their replica
	// stopped) and initialized again.
	SessionCalls, SessionFailures, Reinitialized int
	// Errors describes the first failures.
	Errors []string
}

// maxErrors bounds Counts.Errors.
const maxErrors = 10

// Load is a client load through the balancer, until Stop: workers
// sending stateless tools/call echo requests one after the other, and
// 2025-11-25 sessions (the go-sdk client) calling echo, each of which
// initializes again when its session is gone (404). Latencies are kept
// per phase (see Phase).
type Load struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	counts  Counts
	phase   string
	latency map[string][]time.Duration
	changed chan struct{} // closed and replaced on every count
}

// LoadOptions shape a Load.
type LoadOptions struct {
	// Stateless workers and Sessions, each one call at a time.
	Stateless, Sessions int
	// Every paces each worker and session: one call at most every so
	// long (a session over plughost's --rate-limit, 100 a second by
	// default, would get 429).
	Every time.Duration
}

// StartLoad starts the load against url, in phase "steady".
func StartLoad(ctx context.Context, url string, o LoadOptions) *Load {
	stateless, sessions := o.Stateless, o.Sessions
	ctx, cancel := context.WithCancel(ctx)
	l := &Load{cancel: cancel, phase: "steady", latency: map[string][]time.Duration{}, changed: make(chan struct{})}
	tr := &http.Transport{MaxIdleConnsPerHost: stateless + sessions}
	hc := &http.Client{Transport: tr}
	for w := range stateless {
		l.wg.Go(func() { l.statelessWorker(ctx, hc, url, w, o.Every) })
	}
	for s := range sessions {
		l.wg.Go(func() { l.sessionWorker(ctx, hc, url, s, o.Every) })
	}
	context.AfterFunc(ctx, tr.CloseIdleConnections)
	return l
}

// Phase names the phase the next latencies count in ("steady", "roll").
func (l *Load) Phase(name string) {
	l.mu.Lock()
	l.phase = name
	l.mu.Unlock()
}

// Stop ends the load and returns its counts.
func (l *Load) Stop() Counts {
	l.cancel()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts
}

// Latency returns the p50 and p99 of the stateless requests' latency in
// phase, and how many there were.
func (l *Load) Latency(phase string) (p50, p99 time.Duration, n int) {
	l.mu.Lock()
	d := slices.Clone(l.latency[phase])
	l.mu.Unlock()
	if len(d) == 0 {
		return 0, 0, 0
	}
	slices.Sort(d)
	return d[len(d)*50/100], d[min(len(d)-1, len(d)*99/100)], len(d)
}

// Await waits until both kinds of client have made n calls more than
// when it was called, or ctx ends.
func (l *Load) Await(ctx context.Context, n int) error {
	l.mu.Lock()
	from, fromSess := l.counts.Requests, l.counts.SessionCalls
	l.mu.Unlock()
	for {
		l.mu.Lock()
		done := l.counts.Requests-from >= n && l.counts.SessionCalls-fromSess >= n
		changed := l.changed
		l.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("the load made fewer than %d calls: %w", n, ctx.Err())
		}
	}
}

// count records one call's outcome under the lock.
func (l *Load) count(change func(c *Counts), took time.Duration, failure error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	change(&l.counts)
	if took > 0 {
		l.latency[l.phase] = append(l.latency[l.phase], took)
	}
	if failure != nil && len(l.counts.Errors) < maxErrors {
		l.counts.Errors = append(l.counts.Errors, failure.Error())
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

// statelessWorker sends tools/call echo until ctx ends.
func (l *Load) statelessWorker(ctx context.Context, hc *http.Client, url string, w int, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := 0; pace(ctx, tick); i++ {
		text := "w" + strconv.Itoa(w) + "-" + strconv.Itoa(i)
		start := time.Now()
		err := echoStateless(ctx, hc, url, text)
		if ctx.Err() != nil {
			return // the load stopped mid-call: not the server's doing
		}
		if err != nil {
			l.count(func(c *Counts) { c.Requests++; c.Failures++ }, 0, fmt.Errorf("stateless %s: %w", text, err))
			continue
		}
		l.count(func(c *Counts) { c.Requests++ }, time.Since(start), nil)
	}
}

// pace waits for tick's next beat, reporting false when ctx ends first.
func pace(ctx context.Context, tick *time.Ticker) bool {
	select {
	case <-tick.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// echoStateless sends one stateless tools/call of echo with text and
// checks the answer holds it.
func echoStateless(ctx context.Context, hc *http.Client, url, text string) error {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + `"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	raw, status, err := post(ctx, hc, url, "tools/call", "echo", body)
	switch {
	case err != nil:
		return err
	case status != http.StatusOK || !bytes.Contains(raw, []byte(`"text":"`+text+`"`)) || bytes.Contains(raw, []byte(`"isError":true`)):
		return fmt.Errorf("HTTP %d: %.300s", status, raw)
	}
	return nil
}

// post sends one stateless request with MCP 2026-07-28's headers and
// returns the body.
func post(ctx context.Context, hc *http.Client, url, method, name, body string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader([]byte(body)))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return raw, resp.StatusCode, err
}

// sessionWorker keeps a 2025-11-25 session calling echo until ctx ends,
// initializing a new one when the server says the session is gone.
func (l *Load) sessionWorker(ctx context.Context, hc *http.Client, url string, s int, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	client := mcp.NewClient(&mcp.Implementation{Name: "rollout-session", Version: "1"}, nil)
	era := &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	var cs *mcp.ClientSession
	defer func() {
		if cs != nil {
			cs.Close()
		}
	}()
	for i := 0; pace(ctx, tick); i++ {
		if cs == nil {
			var err error
			if cs, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, era); err != nil {
				if ctx.Err() != nil {
					return
				}
				l.count(func(c *Counts) { c.SessionCalls++; c.SessionFailures++ }, 0, fmt.Errorf("session %d: initialize: %w", s, err))
				continue
			}
		}
		text := "s" + strconv.Itoa(s) + "-" + strconv.Itoa(i)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
		if ctx.Err() != nil {
			return
		}
		switch {
		case errors.Is(err, mcp.ErrSessionMissing):
			// The spec's path: a 404 for the session, a new initialize.
			cs.Close()
			cs = nil
			l.count(func(c *Counts) { c.SessionCalls++; c.Reinitialized++ }, 0, nil)
		case err != nil:
			cs.Close()
			cs = nil
			l.count(func(c *Counts) { c.SessionCalls++; c.SessionFailures++ }, 0, fmt.Errorf("session %d: %s: %w", s, text, err))
		case res.IsError || textOf(res) != text:
			l.count(func(c *Counts) { c.SessionCalls++; c.SessionFailures++ }, 0, fmt.Errorf("session %d: %s answered %+v", s, text, res))
		default:
			l.count(func(c *Counts) { c.SessionCalls++ }, 0, nil)
		}
	}
}

// textOf returns a result's only text content, or "".
func textOf(res *mcp.CallToolResult) string {
	if len(res.Content) != 1 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}
