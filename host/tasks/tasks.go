// Package tasks keeps the tasks of MCP 2026-07-28's tasks extension
// (io.modelcontextprotocol/tasks, SEP-2663): tool calls that go on in the
// background while the client polls them with tasks/get, feeds them input
// with tasks/update and stops them with tasks/cancel.
//
// A task is run by the replica that created it (its owner): the call to the
// plugin lives in that process. Its record lives in a Store that every
// replica reads: in process for a single plughost (NewMemory), in Redis
// for replicas (package redistore). So any replica answers tasks/get, and
// tasks/update and tasks/cancel reach the owner through the store's change
// feed. An owner that stops without finishing its tasks is noticed through
// its heartbeat (Store.Alive): its unfinished tasks are failed, naming the
// replica, soon after the store's replica timeout (within a third more in
// redistore).
//
// The protocol layer (host/mcp) drives a task through a Run: it creates the
// task when a call goes on as one, reports the call's progress and its
// needs for input, and ends the task with the call's outcome. The Service
// answers the three methods and feeds subscriptions/listen.
package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/plughost/plughost/internal/jsonrpc"
)

// Status is a task's status.
type Status string

// The statuses of a task. Completed, Failed and Cancelled are terminal: a
// task in one of them never changes again.
const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Terminal reports whether s is completed, failed or cancelled.
func (s Status) Terminal() bool { return s == Completed || s == Failed || s == Cancelled }

// Task is a task's record, as a Store keeps it.
type Task struct {
	// ID is the taskId: 128 random bits, unguessable (a task ID is the
	// only key to the task's state).
	ID     string `json:"id"`
	Status Status `json:"status"`
	// StatusMessage says what the task is doing (the call's last progress
	// message), what it waits for, or why it failed; a Run writes at most
	// 1 KiB of it.
	StatusMessage string    `json:"statusMessage,omitempty"`
	Created       time.Time `json:"created"`
	Updated       time.Time `json:"updated"`
	// TTL is how long after Created the task is kept; the store forgets
	// it then.
	TTL time.Duration `json:"ttl"`
	// PollInterval is the polling interval suggested to the client.
	PollInterval time.Duration `json:"pollInterval"`
	// InputRequests, while InputRequired, are the requests to the client
	// not answered yet: a JSON object, key → MCP request object
	// ({"method": ..., "params": ...}).
	InputRequests json.RawMessage `json:"inputRequests,omitempty"`
	// Answers are the client's responses received for this round's
	// requests: a JSON object, key → result. The owner takes them when
	// every request is answered.
	Answers json.RawMessage `json:"answers,omitempty"`
	// State is the provider's request state for the next round (never
	// shown to the client).
	State string `json:"state,omitempty"`
	// Asked lists every key InputRequests held over the task's life: a key
	// names one request only, so none is asked twice (never shown to the
	// client).
	Asked []string `json:"asked,omitempty"`
	// Result, when Completed, is the MCP CallToolResult.
	Result json.RawMessage `json:"result,omitempty"`
	// Error, when Failed, is the JSON-RPC error object ({"code", "message"}).
	Error json.RawMessage `json:"error,omitempty"`
	// Owner is the replica running the task.
	Owner string `json:"owner"`
	// Tool is the exposed name of the tool called.
	Tool string `json:"tool"`
	// Caller is the key of the caller that created the task (Caller.Key):
	// the only one that may see, answer, cancel or watch it.
	Caller string `json:"caller"`
}

// AppendWire appends the task as MCP shows it: the members of a Task,
// then with detailed the member of a DetailedTask its status carries. It
// writes no brace and starts with no comma, so the caller opens the object
// (with any member of its own before, followed by a comma) and closes it:
//
//	b = append(b, `{"resultType":"task",`...)
//	b = t.AppendWire(b, false)
//	b = append(b, '}')
//
// The members are "taskId", "status", "statusMessage" (when not empty),
// "createdAt" and "lastUpdatedAt" (RFC 3339 in UTC to the millisecond),
// "ttlMs" and "pollIntervalMs" (whole milliseconds, the latter at least
// 1); detailed adds "inputRequests" to an input_required task, "result"
// to a completed one and "error" to a failed one. The record's own members
// (answers, state, asked keys, owner, tool, caller) never show.
func (t *Task) AppendWire(b []byte, detailed bool) []byte {
	b = append(b, `"taskId":`...)
	b = jsonrpc.AppendString(b, t.ID)
	b = append(b, `,"status":`...)
	b = jsonrpc.AppendString(b, string(t.Status))
	if t.StatusMessage != "" {
		b = append(b, `,"statusMessage":`...)
		b = jsonrpc.AppendString(b, t.StatusMessage)
	}
	b = append(b, `,"createdAt":"`...)
	b = t.Created.UTC().AppendFormat(b, wireTime)
	b = append(b, `","lastUpdatedAt":"`...)
	b = t.Updated.UTC().AppendFormat(b, wireTime)
	b = append(b, `","ttlMs":`...)
	b = strconv.AppendInt(b, t.TTL.Milliseconds(), 10)
	b = append(b, `,"pollIntervalMs":`...)
	b = strconv.AppendInt(b, max(t.PollInterval.Milliseconds(), 1), 10)
	if !detailed {
		return b
	}
	switch t.Status {
	case InputRequired:
		b = appendObject(b, "inputRequests", t.InputRequests)
	case Completed:
		b = appendObject(b, "result", t.Result)
	case Failed:
		b = appendObject(b, "error", t.Error)
	}
	return b
}

// wireTime is how MCP's timestamps are written: RFC 3339, UTC, milliseconds.
const wireTime = "2006-01-02T15:04:05.000Z"

// appendObject appends the member name with the JSON object v, or with an
// empty object when v is not one (a record written by a Run always holds
// one: the member is required of the status).
func appendObject(b []byte, name string, v json.RawMessage) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	if out, ok := jsonrpc.AppendObject(b, v); ok {
		return out
	}
	return append(b, '{', '}')
}

// Errors of the Service and the stores.
var (
	// ErrNotFound: no task has that ID (never had, or it expired).
	ErrNotFound = errors.New("task not found")
	// ErrTooMany: this replica runs MaxRunning tasks already, or the
	// memory store has no room for another (MemoryOptions).
	ErrTooMany = errors.New("too many tasks running")
	// ErrTerminal: the task is completed, failed or cancelled already.
	ErrTerminal = errors.New("task already finished")
	// ErrTooLarge: what a task would keep is over a bound: the client's
	// answers over MaxResultBytes (Service.Update), or a record the
	// memory store's byte budget has no room for. Nothing was changed.
	ErrTooLarge = errors.New("too large")
)

// Store keeps task records where every replica can read them.
// Implementations are safe for concurrent use.
type Store interface {
	// Create stores a new task. When it returns, Get finds the task on
	// every replica (a CreateTaskResult may be sent).
	Create(ctx context.Context, t *Task) error
	// Get returns a copy of the task, or an error wrapping ErrNotFound
	// once Created+TTL has passed.
	Get(ctx context.Context, id string) (*Task, error)
	// Update applies change to a copy of the task atomically and returns
	// the result; change may run more than once (on a conflicting write)
	// and its error aborts the update, returned as it is. A terminal task
	// is not changed: ErrTerminal; an unknown or expired one: ErrNotFound.
	// Every successful update is announced to Watch on every replica.
	Update(ctx context.Context, id string, change func(*Task) error) (*Task, error)
	// Watch calls changed with the ID of every task created or updated on
	// any replica, until stop is called. changed runs on a goroutine of
	// the watcher's own, one call at a time, never holding up a writer; a
	// call under way may finish after stop returns. Delivery is best
	// effort (a watcher re-reads the task; a lost notice is made up by
	// polling).
	Watch(changed func(id string)) (stop func())
	// List returns the tasks of every replica, newest first, at most
	// limit (clamped to MaxList), as Task.Summary shows them (no
	// payload); expired tasks are left out. For an operator's view: a
	// store holding very many tasks may list the newest of those it
	// looked at (see each store's doc).
	List(ctx context.Context, limit int) ([]*Task, error)
	// Alive reports whether the replica still beats. A store shared by
	// replicas beats for its own replica while open; one silent for the
	// store's replica timeout is dead. Where every beat may vanish at
	// once (a server restarting without its data, or stalling past the
	// timeout), one look is not enough to say so: redistore wants the
	// beat missing on two looks ReplicaTimeout/3 apart. A store in
	// process serves one process: every replica that created a task in
	// it is alive.
	Alive(ctx context.Context, replica string) (bool, error)
	// Close stops the store's background work; peers see its replica dead
	// at once.
	Close() error
}
