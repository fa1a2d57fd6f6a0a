package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/plughost/plughost/host/mcp/sealed"
	"github.com/plughost/plughost/host/ratelimit"
	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/jsonrpc"

	"github.com/plughost/plughost/host/mcp/stdio"
)

// Options configure a [Server]. The zero value (or nil) means defaults.
type Options struct {
	// Version is serverInfo.version in the initialize result; "" means "devel".
	Version string
	// Instructions, when not empty, is sent as the initialize result's
	// instructions (a hint for the model on how to use the tools).
	Instructions string
	// Logger receives the server's own logs (never protocol); nil discards
	// them. In stdio mode it must not write to stdout.
	Logger hclog.Logger
	// MaxMessageSize limits one incoming message (one line on stdio), in
	// bytes; 0 means DefaultMaxMessageSize (4 MiB). A longer message is
	// answered with error -32600 and skipped; the session goes on.
	MaxMessageSize int
	// MaxInFlight limits the long requests of one session that run at once
	// (tools/call, resources/read, prompts/get, completion/complete,
	// resources/subscribe and unsubscribe); 0 means 64. Further ones wait
	// for a slot (and can be cancelled while they wait). Once 4×MaxInFlight
	// are pending the server stops reading from a stdio or HTTP+SSE client
	// until one finishes (Streamable HTTP answers 429).
	//
	// A request waiting for its client's answer to a provider's input
	// request holds no slot, nor (over stdio and HTTP+SSE) a worker of the
	// read loop through which that answer comes. At most 4×MaxInFlight
	// requests of a session are in input rounds at once; one whose
	// provider asks while that many are is answered at once naming the
	// limit (tools/call: an isError result; resources/read and
	// prompts/get: -32602).
	MaxInFlight int
	// MaxSubscriptions limits the resources one session may be subscribed
	// to at once (resources/subscribe); 0 means 1000. One more is refused
	// with -32602 naming the limit.
	MaxSubscriptions int
	// NotificationRate limits the notifications one call sends its client
	// (the tool's progress and logs, after the level filter), per second,
	// with bursts of as many; 0 means DefaultNotificationRate (100). Past
	// it they are dropped, counted in CallEnd.DroppedNotifications, and
	// logged at WARN once per call: a plugin that floods cannot fill a
	// client's stream or a session's replay buffer with them.
	NotificationRate int
	// OnLimit, when not nil, is told of each refusal at one of the
	// session's limits, by one of the Limit… names, on whatever transport
	// (metrics count them). It must be quick.
	OnLimit func(limit string)
	// Access, when not nil, returns the guard of a session's caller (package
	// access builds it from the configuration's rules): what the caller
	// may list and use (see access.go). A nil guard sees everything.
	Access func(*Caller) tool.Guard
	// InputTimeout is how long the server waits for the client to answer
	// one request made for a provider that needs the client's input
	// (sampling, elicitation, roots); 0 means DefaultInputTimeout (10
	// minutes). The request is then cancelled and the call fails as timed
	// out.
	InputTimeout time.Duration
	// Ready, when not nil, is closed once the catalog holds everything it
	// will hold at start (every plugin found at start published, from a
	// cache or loaded, or failed). A list request (tools, resources,
	// templates, prompts) or long call (tools/call, resources/read, ...)
	// that comes before waits for it, at most ReadyWait, so that no
	// client is answered from a catalog that is still loading (a partial
	// list; an unknown tool whose plugin is loading, as a replica that
	// just started would answer); initialize, server/discover and the
	// other short requests are served at once.
	Ready <-chan struct{}
	// ReadyWait bounds that wait; 0 means DefaultReadyWait (10s). A
	// request served at the bound is served with what the catalog holds,
	// and a warning is logged.
	ReadyWait time.Duration
	// StateSealer seals the requestState of the stateless revision's
	// InputRequiredResult (see the package doc). Replicas behind a load
	// balancer must share its key, so that any one of them opens what
	// another sealed; nil means a random key of this process alone.
	StateSealer *sealed.Sealer
	// StateTTL is how long a requestState stays valid: how long a client
	// has to answer an input request. 0 means DefaultStateTTL (15
	// minutes).
	StateTTL time.Duration
	// ListTTL is the caching hint (ttlMs) on the stateless revision's list
	// results and server/discover: how long a client may keep one before
	// asking again. 0 means DefaultListTTL; negative means 0 (always
	// stale). Clients that listen (subscriptions/listen) learn of changes
	// at once whatever it is.
	ListTTL time.Duration
	// MaxListeners limits the subscriptions/listen streams open at once in
	// the whole server; 0 means DefaultMaxListeners (1000). One more is
	// refused with -32602 naming the limit.
	MaxListeners int
	// MaxListenBytes limits the bytes of the URIs and task ids one
	// subscriptions/listen stream names (each counted once); 0 means
	// DefaultMaxListenBytes (256 KiB). More is refused with -32602 naming
	// the limit.
	MaxListenBytes int64
	// ListenBudget limits the bytes of the URIs and task ids all open
	// subscriptions/listen streams name together; 0 means
	// DefaultListenBudget (16 MiB). A stream that would pass it is
	// refused with -32602 naming the limit, the others go on.
	ListenBudget int64
	// Tasks, when not nil, runs MCP 2026-07-28's tasks extension
	// (tasks.go): server/discover declares it, a call of a tool that
	// supports tasks may go on as one for a client that declares it, and
	// tasks/get, tasks/update and tasks/cancel are served. Nil: no tasks
	// (those methods answer -32601). Its store decides whether replicas
	// share the tasks (Redis) or each keeps its own.
	Tasks *tasks.Service
	// EscalateAfter is how long a call that may go on as a task runs for
	// its request before the server makes it a task by itself; 0 means
	// only when its provider says so (a plugin's Request.RunAsTask).
	EscalateAfter time.Duration
	// ToolSearch, when not nil, serves the catalog in tool search mode
	// (search.go): tools/list offers the pinned tools and the host's
	// search_tools and call_tool instead of every tool.
	ToolSearch *ToolSearch
	// OnSession, when set, is called with every session the server opens,
	// before it serves anything. The function it returns, when not nil, is
	// called each time a piece of the session's work has written its
	// output (a call answered or cancelled, a notification or a request to
	// the client written), when [Session.Pending] may have dropped. Tests
	// await a settled session with it; it must not block.
	OnSession func(*Session) (onIdle func())
	// RateLimit, when not nil, weighs each request that reaches a provider
	// against its caller's rate limits and quotas (ratelimit.go): one over
	// them is answered CodeRateLimited naming the limit. Its Update swaps
	// the limits while the server runs.
	RateLimit *ratelimit.Limiter
	// OnRateLimited, when set, is told of each request RateLimit refused
	// (metrics and the audit log); it must be quick and not keep e.
	OnRateLimited func(e *RateLimited)
	// OnCallEnd, when set, is called once for every tools/call that ends
	// (answered, refused, cancelled, or its task ended), after its response
	// is written, on the goroutine that wrote it: metrics and the audit log
	// learn of calls through it. It must be quick and not keep e.
	OnCallEnd func(e *CallEnd)
	// Tracer, when set, starts a server span for each request, and Meter,
	// when set, records mcp.server.operation.duration (spans.go): serve
	// sets them from the observability block (host/telemetry). Nil: no
	// telemetry, at no cost.
	Tracer oteltrace.Tracer
	Meter  metric.Meter
}

// Server serves a [Catalog] over MCP. One Server can serve many sessions at
// once; each [Server.Serve] or [Server.ServeStdio] is one session.
type Server struct {
	catalog Catalog
	log     hclog.Logger
	maxMsg  int
	maxSubs int
	// tuning holds the settings Retune changes (retune.go).
	tuning atomic.Pointer[tuning]
	// sessions are the open sessions, which Retune re-guards.
	sessions sessionSet
	// inputTimeout bounds each request to the client made for a provider.
	inputTimeout time.Duration
	ready        <-chan struct{} // Options.Ready
	readyWait    time.Duration
	// initResult holds the initialize result for each supported version.
	initResult [len(versions)][]byte
	// discoverResult is server/discover's result, but for its ttlMs.
	discoverResult []byte
	sealer         *sealed.Sealer
	listTTL        []byte // ttlMs's value, in decimal
	listeners      listeners
	onSession      func(*Session) func()
	onCallEnd      func(*CallEnd)
	tracer         oteltrace.Tracer                // Options.Tracer
	opDuration     mcpconv.ServerOperationDuration // Options.Meter's; a no-op without one
	onLimit        func(string)
	rateLimit      *ratelimit.Limiter // Options.RateLimit
	onRateLimited  func(*RateLimited) // Options.OnRateLimited
	guarded        guardedCatalog     // the catalog, listing per caller; nil when it cannot (no rules then)
	tasks          *tasks.Service     // Options.Tasks
	// search is the catalog in tool search mode (catalog wraps it); nil
	// when off.
	search *searchCatalog

	clientsMu sync.Mutex
	samplers  []*Session // initialized sessions whose client can sample, oldest first
}

// The limits of Options.OnLimit.
const (
	// LimitMessageSize: a message over MaxMessageSize (-32600).
	LimitMessageSize = "message_size"
	// LimitSubscriptions: a resources/subscribe (or a listen stream) over
	// MaxSubscriptions.
	LimitSubscriptions = "subscriptions"
	// LimitInputWaiting: a call needing the client's input while
	// 4×MaxInFlight calls of the session already wait for it.
	LimitInputWaiting = "input_waiting"
)

// limitHit tells Options.OnLimit of a refusal at limit.
func (srv *Server) limitHit(limit string) {
	if srv.onLimit != nil {
		srv.onLimit(limit)
	}
}

// DefaultNotificationRate is Options.NotificationRate's default.
const DefaultNotificationRate = 100

// NewServer returns a server for c. opts may be nil.
func NewServer(c Catalog, opts *Options) *Server {
	if opts == nil {
		opts = &Options{}
	}
	// The catalog itself, not tool search's wrapper: its lists are the
	// caller's too. Kept when it can list per caller, for rules that
	// Retune may bring later.
	guarded, _ := c.(guardedCatalog)
	if opts.Access != nil && guarded == nil {
		panic("mcp: Options.Access needs a catalog that lists per caller (host/catalog's)")
	}
	var search *searchCatalog
	if opts.ToolSearch != nil {
		c, search = withSearch(c, opts.ToolSearch)
	}
	s := &Server{
		catalog:       c,
		guarded:       guarded,
		search:        search,
		log:           opts.Logger,
		maxMsg:        opts.MaxMessageSize,
		maxSubs:       opts.MaxSubscriptions,
		inputTimeout:  opts.InputTimeout,
		ready:         opts.Ready,
		readyWait:     opts.ReadyWait,
		onSession:     opts.OnSession,
		onCallEnd:     opts.OnCallEnd,
		onLimit:       opts.OnLimit,
		sealer:        opts.StateSealer,
		tasks:         opts.Tasks,
		rateLimit:     opts.RateLimit,
		onRateLimited: opts.OnRateLimited,
		tracer:        opts.Tracer,
	}
	s.tuning.Store(tuningOf(opts, s.tasks != nil))
	if s.sealer == nil {
		s.sealer = sealed.NewRandom()
	}
	s.opDuration, _ = mcpconv.NewServerOperationDuration(opts.Meter) // a no-op without a meter, or when the SDK refuses it
	switch ttl := opts.ListTTL; {
	case ttl == 0:
		s.listTTL = strconv.AppendInt(nil, DefaultListTTL.Milliseconds(), 10)
	case ttl < 0:
		s.listTTL = []byte("0")
	default:
		s.listTTL = strconv.AppendInt(nil, ttl.Milliseconds(), 10)
	}
	maxListeners := opts.MaxListeners
	if maxListeners <= 0 {
		maxListeners = DefaultMaxListeners
	}
	s.listeners.init(maxListeners, cmp.Or(max(opts.ListenBudget, 0), DefaultListenBudget))
	if s.readyWait <= 0 {
		s.readyWait = DefaultReadyWait
	}
	if s.maxSubs <= 0 {
		s.maxSubs = 1000
	}
	if s.inputTimeout <= 0 {
		s.inputTimeout = DefaultInputTimeout
	}
	if s.log == nil {
		s.log = hclog.NewNullLogger()
	}
	if s.maxMsg <= 0 {
		s.maxMsg = DefaultMaxMessageSize
	}
	version := opts.Version
	if version == "" {
		version = "devel"
	}
	for i, v := range versions {
		caps := json.RawMessage(capabilities(i))
		type info struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		}
		b, err := json.Marshal(struct {
			ProtocolVersion string          `json:"protocolVersion"`
			Capabilities    json.RawMessage `json:"capabilities"`
			ServerInfo      info            `json:"serverInfo"`
			Instructions    string          `json:"instructions,omitempty"`
		}{v, caps, info{"plughost", version}, opts.Instructions})
		if err != nil {
			panic(err) // cannot happen: strings and valid JSON
		}
		s.initResult[i] = b
	}
	s.discoverResult = discoverResult(version, opts.Instructions, s.tasks != nil)
	return s
}

// ServeStdio serves one session over the MCP stdio binding: newline-delimited
// JSON-RPC read from in and written to out. It returns nil when in reaches
// EOF, after cancelling the calls still running and waiting for them.
// See [Server.Serve] for the rest. The session's [Peer] names the user
// running the host as its Caller: whoever can write to stdin is that user.
//
// A tools/call starts on the goroutine that read it and is answered on the
// goroutine that learns its result (Catalog.StartCall): stdio has one
// client, whose writes may block only each other.
func (srv *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	return srv.serve(ctx, stdio.New(in, out, srv.maxMsg), func(s *Session) { s.SetPeer(Peer{Caller: localCaller(), Transport: "stdio"}) }, true)
}

// Serve serves one session over t until t.Read returns io.EOF (Serve then
// returns nil), another read error, a write fails, or ctx ends (Serve returns
// ctx's cause). On the way out it cancels the calls still running and waits
// for them. If ctx ends while t.Read is blocked, Serve returns without
// waiting for Read: the goroutine blocked in it exits when Read returns.
func (srv *Server) Serve(ctx context.Context, t Transport) error {
	return srv.ServeSession(ctx, t, nil)
}

// Logger returns the logger of the server's own logs.
func (srv *Server) Logger() hclog.Logger { return srv.log }

// MaxInFlight returns the limit of calls one session runs at once
// (Options.MaxInFlight, defaults applied).
func (srv *Server) MaxInFlight() int { return srv.tuned().maxInFlight }

// ServeSession is Serve; started, when not nil, learns of the session once
// it exists (the legacy HTTP transport drains it on shutdown).
func (srv *Server) ServeSession(ctx context.Context, t Transport, started func(*Session)) error {
	return srv.serve(ctx, t, started, false)
}

// serve is ServeSession; inline lets calls start on the read loop (see
// ServeStdio).
func (srv *Server) serve(ctx context.Context, t Transport, started func(*Session), inline bool) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s := srv.OpenSession(SessionConn{Notify: t, OnWriteError: func(err error) { cancel(fmt.Errorf("mcp: write: %w", err)) }})
	s.inline, s.loop = inline, true
	if started != nil {
		started(s)
	}
	loop := make(chan error, 1)
	go func() { loop <- s.readLoop(ctx, t) }()
	var err error
	select {
	case err = <-loop:
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	s.Close()
	return err
}

// readLoop reads and dispatches messages in arrival order. Work that may
// take long (a tools/call) goes to a worker goroutine; everything else is
// answered here, which keeps state changes (initialize, setLevel,
// cancellation) in order.
//
// Workers outlive their call and take the next one: a fresh goroutine per
// call would grow its stack from scratch every time. There are at most
// 4×MaxInFlight of them; when all are busy the loop stops reading until one
// is free, pushing back on the client. A call never waits for the client
// on a worker (call.inputRounds): the client's answer comes through this
// loop. Workers end with the session.
func (s *Session) readLoop(ctx context.Context, t Transport) error {
	jobs := make(chan func())
	defer close(jobs)
	workers, maxWorkers := 0, 4*s.srv.MaxInFlight()
	// Calls are cancelled through the in-flight map (by the client, or by
	// Close when ctx ends), so their contexts need not hang off ctx: that
	// would lock ctx on every call's start and end.
	callCtx := context.WithoutCancel(ctx)
	for {
		msg, err := t.Read()
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case errors.Is(err, ErrMessageTooLarge):
			s.srv.log.Warn("refused an oversized message", "error", err)
			s.srv.limitHit(LimitMessageSize)
			s.send(t, func(b []byte) []byte {
				return jsonrpc.AppendError(b, nil, jsonrpc.NewError(jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error()))
			})
			continue
		case err == io.EOF:
			return nil
		case err != nil:
			return fmt.Errorf("mcp: read: %w", err)
		}
		run := s.dispatch(callCtx, msg, t)
		if run == nil {
			continue
		}
		select {
		case jobs <- run: // an idle worker took it
			continue
		default:
		}
		if workers < maxWorkers {
			workers++
			go s.worker(run, jobs)
			continue
		}
		select {
		case jobs <- run:
		case <-ctx.Done():
			go run() // Close cancels it; it must still run to finish
			return nil
		}
	}
}

// worker runs first, then whatever jobs brings, until the session ends.
func (s *Session) worker(first func(), jobs <-chan func()) {
	first()
	for {
		select {
		case run, ok := <-jobs:
			if !ok {
				return
			}
			run()
		case <-s.done:
			return
		}
	}
}

// Tool returns the definition of the tool exposed as name, or nil when
// there is none or the catalog cannot say (a transport checks a tool's
// x-mcp-header parameters with it).
func (srv *Server) Tool(name string) json.RawMessage {
	if l, ok := srv.catalog.(ToolLookup); ok {
		return l.Tool(name)
	}
	return nil
}
