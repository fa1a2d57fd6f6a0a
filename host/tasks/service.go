package tasks

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"
)

// Defaults of Options.
const (
	DefaultTTL            = time.Hour
	DefaultPollInterval   = 500 * time.Millisecond
	DefaultMaxRunning     = 256
	DefaultMaxResultBytes = 4 << 20
)

// Options configure a Service. Zero fields take the defaults.
type Options struct {
	// Store keeps the records; nil means NewMemory(MemoryOptions{}).
	Store Store
	// Replica names this process among the replicas sharing Store
	// (random when empty).
	Replica string
	// TTL is how long a task is kept after its creation (DefaultTTL).
	TTL time.Duration
	// PollInterval is the pollIntervalMs suggested to clients.
	PollInterval time.Duration
	// MaxRunning bounds the tasks this replica runs at once (not yet
	// terminal); Create answers ErrTooMany beyond it.
	MaxRunning int
	// MaxResultBytes bounds a result (or an input request set) kept in a
	// task; a larger one fails the task, naming the size.
	MaxResultBytes int
	Log            *slog.Logger
}

// Service creates, runs and answers tasks on one replica.
type Service struct{}

// New returns a Service over opts.Store.
func New(opts Options) *Service { panic("unimplemented") }

// Replica is this replica's name.
func (s *Service) Replica() string { panic("unimplemented") }

// Create creates a task, run by this replica, for a call of the exposed
// tool toolName served by provider, and returns it with the Run that
// drives it. ErrTooMany when MaxRunning tasks run already. The task is
// durable when Create returns.
func (s *Service) Create(ctx context.Context, toolName, provider string) (*Task, *Run, error) {
	panic("unimplemented")
}

// Get returns the task (tasks/get). A task not yet terminal whose owner no
// longer beats is failed first (-32603, naming the replica). ErrNotFound
// for an unknown or expired ID.
func (s *Service) Get(ctx context.Context, id string) (*Task, error) { panic("unimplemented") }

// Update delivers the client's responses (tasks/update's inputResponses, a
// JSON object key → result) to the task: responses to keys it has not
// asked, or asked and got already, are ignored; the answered keys leave
// InputRequests; once none is left the task is working again and its
// owner resumes it. A task that is not input_required ignores them.
// ErrNotFound for an unknown ID.
func (s *Service) Update(ctx context.Context, id string, responses json.RawMessage) error {
	panic("unimplemented")
}

// Cancel cancels the task (tasks/cancel): it is cancelled at once and its
// owner stops the call. A terminal task is left as it is (nil error).
// ErrNotFound for an unknown ID.
func (s *Service) Cancel(ctx context.Context, id string) error { panic("unimplemented") }

// Watch calls changed with the task each time one of ids changes (for
// notifications/tasks on subscriptions/listen), until stop is called.
func (s *Service) Watch(ids []string, changed func(*Task)) (stop func()) { panic("unimplemented") }

// Close fails the tasks this replica still runs ("the replica stopped") and
// closes the store.
func (s *Service) Close() error { panic("unimplemented") }

// Run is the owner's handle on one task it runs. Its methods are safe for
// concurrent use; after Complete, Fail or a cancel they do nothing.
type Run struct{}

// ID is the task's ID.
func (r *Run) ID() string { panic("unimplemented") }

// Cancelled is closed when the task is cancelled (tasks/cancel on any
// replica) or the service closes: the call must stop.
func (r *Run) Cancelled() <-chan struct{} { panic("unimplemented") }

// Progress sets the task's statusMessage (coalesced: the store is written
// at most every PollInterval/2, and the last message always lands).
func (r *Run) Progress(message string) { panic("unimplemented") }

// NeedInput parks the task in input_required with requests (a JSON
// object, key → MCP request) and the provider's state for the next round.
// Keys must be new over the task's life (a key answered before is an
// error).
func (r *Run) NeedInput(ctx context.Context, requests json.RawMessage, state string) error {
	panic("unimplemented")
}

// WaitInput waits until every request of NeedInput is answered and returns
// the answers (key → result) and the state; an error when ctx ends or the
// task is cancelled first.
func (r *Run) WaitInput(ctx context.Context) (answers json.RawMessage, state string, err error) {
	panic("unimplemented")
}

// Complete ends the task with the call's result (an MCP CallToolResult,
// isError or not).
func (r *Run) Complete(ctx context.Context, result json.RawMessage) error { panic("unimplemented") }

// Fail ends the task failed, with a JSON-RPC error of code and message;
// the message is the statusMessage too.
func (r *Run) Fail(ctx context.Context, code int, message string) error { panic("unimplemented") }

// Close says the call is over: the Run's slot among MaxRunning is free
// again, and a task still not terminal is failed ("the call ended without
// an outcome"). Call it exactly once, after the call has returned.
func (r *Run) Close() { panic("unimplemented") }
