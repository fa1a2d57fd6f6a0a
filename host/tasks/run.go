package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/plughost/plughost/internal/jsonrpc"
)

// Run is the owner's handle on one task it runs. Its methods are safe for
// concurrent use; after Complete, Fail or a cancel they do nothing
// (NeedInput and WaitInput answer an error wrapping ErrTerminal).
//
// An outcome the store fails to take (Redis unreachable for a moment) is
// not lost: Complete and Fail return the store's error, and the outcome
// stays pending. Close tries it again, then the Service every few seconds,
// until it lands, the task ends otherwise (cancelled, failed by a peer) or
// its TTL passes (the store has forgotten it then). Until then the Run
// keeps its slot among MaxRunning: a pending outcome holds a result of up
// to MaxResultBytes in memory, and MaxRunning so bounds what an outage
// makes a replica hold.
//
// A call drives its Run so:
//
//	t, run, err := svc.Create(ctx, toolName)
//	defer run.Close()
//	… run the call, stopping it when run.Cancelled() closes …
//	run.Progress("3 of 10 files")
//	run.NeedInput(ctx, requests, state) // the client answers with tasks/update
//	answers, state, err := run.WaitInput(ctx)
//	run.Complete(ctx, result) // or run.Fail(ctx, code, message)
type Run struct {
	s         *Service
	id        string
	expires   time.Time     // the task's Created+TTL: the store forgets it then
	interval  time.Duration // between two progress writes: PollInterval/2
	cancelled chan struct{}
	wake      chan struct{} // holds a token when the record changed: WaitInput looks again
	stopOnce  sync.Once

	writing sync.Mutex // one progress write at a time, so the last message lands last
	landing sync.Mutex // one outcome write at a time

	mu sync.Mutex
	// created: the store has the task (Service.Create wrote it). Until
	// then a re-read finds nothing, which does not mean it ended.
	created  bool
	finished bool        // no more progress or input: an outcome is claimed, or the task ended elsewhere
	outcome  func(*Task) // the outcome claimed and not written yet (its write under way, or failed)
	closed   bool
	waiting  bool // NeedInput parked the task; WaitInput has not taken the answers yet
	asked    int  // how many keys the task asked so far (len of the record's Asked)
	message  string
	pending  bool        // message is not written yet
	timer    *time.Timer // runs flush
	last     time.Time   // when the last progress write started
}

// ID is the task's ID.
func (r *Run) ID() string { return r.id }

// Cancelled is closed when the task is cancelled (tasks/cancel on any
// replica) or otherwise ends before the call's outcome (it expired, or a
// peer failed it believing this replica dead), and when the service
// closes: the call must stop.
func (r *Run) Cancelled() <-chan struct{} { return r.cancelled }

// Progress sets the task's statusMessage, coalesced: the store is written
// at most every PollInterval/2, in the background, and the last message
// lands unless the task ends first. While the task waits for input, its
// message says so and progress is dropped. A message over 1 KiB is cut
// there (at a UTF-8 boundary) and ends with "…".
func (r *Run) Progress(message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished || r.waiting {
		return
	}
	r.message, r.pending = clip(message), true
	if r.timer == nil {
		r.timer = time.AfterFunc(max(0, time.Until(r.last.Add(r.interval))), r.flush)
	}
}

// flush writes the pending progress message. A write already under way
// finishes first; the message is skipped if the task is no longer working
// or has asked for input since the message was taken (it is stale then).
func (r *Run) flush() {
	r.writing.Lock()
	defer r.writing.Unlock()
	r.mu.Lock()
	r.timer = nil
	if !r.pending || r.finished || r.waiting {
		r.mu.Unlock()
		return
	}
	msg, asked := r.message, r.asked
	r.pending, r.last = false, time.Now()
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	_, err := r.s.store.Update(ctx, r.id, func(t *Task) error {
		if t.Status != Working || len(t.Asked) != asked || t.StatusMessage == msg {
			return errUnchanged
		}
		t.StatusMessage, t.Updated = msg, now()
		return nil
	})
	switch {
	case errors.Is(err, ErrTerminal) || errors.Is(err, ErrNotFound):
		r.ended()
	case err != nil && !errors.Is(err, errUnchanged):
		r.s.log.Debug("cannot write a task's progress", "task", r.id, "error", err)
	}
}

// NeedInput parks the task in input_required with requests (a JSON
// object, key → MCP request) and the provider's state for the next round;
// its statusMessage names the requests' methods. Keys must be new over the
// task's life (a key asked before is an error, the task left working).
// Requests (with state) over MaxResultBytes fail the task.
func (r *Run) NeedInput(ctx context.Context, requests json.RawMessage, state string) error {
	if n := len(requests) + len(state); n > r.s.maxResult {
		err := fmt.Errorf("the input requests and their state are %d bytes, over the bound of %d", n, r.s.maxResult)
		if ferr := r.Fail(ctx, codeInternal, err.Error()); ferr != nil {
			return ferr
		}
		return err
	}
	reqs, ok := members(requests)
	if !ok || len(reqs) == 0 {
		return errors.New("input requests must be a JSON object of at least one request")
	}
	keys := make([]string, 0, len(reqs))
	var methods []string
	for _, m := range reqs {
		method, ok := jsonrpc.Unquote(jsonrpc.Member(m.val, "method"))
		switch {
		case !ok:
			return fmt.Errorf("input request %q has no method", m.key)
		case slices.Contains(keys, m.key):
			return fmt.Errorf("input request key %q repeats", m.key)
		}
		keys = append(keys, m.key)
		if !slices.Contains(methods, method) {
			methods = append(methods, method)
		}
	}
	r.mu.Lock()
	switch {
	case r.finished:
		r.mu.Unlock()
		return fmt.Errorf("%w: task %s", ErrTerminal, r.id)
	case r.waiting:
		r.mu.Unlock()
		return fmt.Errorf("task %s waits for input already", r.id)
	}
	r.dropProgress()
	r.mu.Unlock()
	t, err := r.s.store.Update(ctx, r.id, func(t *Task) error {
		if t.Status != Working {
			return fmt.Errorf("task %s is %s, not working", t.ID, t.Status)
		}
		for _, k := range keys {
			if slices.Contains(t.Asked, k) {
				return fmt.Errorf("input request key %q was asked before in task %s: a key names one request over a task's life", k, t.ID)
			}
		}
		t.Status, t.StatusMessage, t.Updated = InputRequired, clip("waiting for the client's input: "+strings.Join(methods, ", ")), now()
		t.InputRequests, t.Answers, t.State = object(reqs), nil, state
		t.Asked = append(t.Asked, keys...)
		return nil
	})
	if errors.Is(err, ErrTerminal) || errors.Is(err, ErrNotFound) {
		r.ended()
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.waiting, r.asked = true, len(t.Asked)
	r.mu.Unlock()
	return nil
}

// WaitInput waits until every request of NeedInput is answered and returns
// the answers (key → result) and the state, taking them out of the record;
// an error when ctx ends, or one wrapping ErrTerminal when the task is
// cancelled (or otherwise ends) first.
func (r *Run) WaitInput(ctx context.Context) (answers json.RawMessage, state string, err error) {
	r.mu.Lock()
	waiting, finished := r.waiting, r.finished
	r.mu.Unlock()
	switch {
	case finished:
		return nil, "", fmt.Errorf("%w: task %s", ErrTerminal, r.id)
	case !waiting:
		return nil, "", fmt.Errorf("task %s asked for no input", r.id)
	}
	for {
		_, err := r.s.store.Update(ctx, r.id, func(t *Task) error {
			if t.Status != Working || len(t.InputRequests) > 0 {
				return errUnchanged
			}
			answers, state = t.Answers, t.State
			t.Answers, t.State = nil, ""
			return nil
		})
		switch {
		case err == nil:
			r.mu.Lock()
			r.waiting = false
			r.mu.Unlock()
			return answers, state, nil
		case errors.Is(err, ErrTerminal) || errors.Is(err, ErrNotFound):
			r.ended()
			return nil, "", fmt.Errorf("%w: task %s ended while waiting for input", ErrTerminal, r.id)
		case !errors.Is(err, errUnchanged):
			return nil, "", err
		}
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case <-r.cancelled:
			return nil, "", fmt.Errorf("%w: task %s ended while waiting for input", ErrTerminal, r.id)
		case <-r.wake:
		}
	}
}

// Complete ends the task with the call's result (an MCP CallToolResult,
// isError or not). A result over MaxResultBytes, or not a JSON object,
// fails the task instead, saying why. It errs only when the store does:
// the outcome is then retried (see Run).
func (r *Run) Complete(ctx context.Context, result json.RawMessage) error {
	if len(result) > r.s.maxResult {
		msg := fmt.Sprintf("the result is %d bytes, over the bound of %d", len(result), r.s.maxResult)
		return r.end(ctx, func(t *Task) { fail(t, codeInternal, msg) })
	}
	obj, ok := jsonrpc.AppendObject(nil, result)
	if !ok {
		return r.end(ctx, func(t *Task) { fail(t, codeInternal, "the call's result is not a JSON object") })
	}
	return r.end(ctx, func(t *Task) {
		end(t, Completed, "")
		t.Result = obj
	})
}

// Fail ends the task failed, with a JSON-RPC error of code and message;
// the message is the statusMessage too, cut to 1 KiB as Progress cuts
// one. It errs only when the store does: the outcome is then retried (see
// Run).
func (r *Run) Fail(ctx context.Context, code int, message string) error {
	return r.end(ctx, func(t *Task) { fail(t, code, message) })
}

// Close says the call is over: a task still without an outcome is failed
// ("the call ended without an outcome"), and the Run's slot among
// MaxRunning is free again once its outcome is written (at once, unless
// the store fails it: see Run). Call it exactly once, after the call has
// returned.
func (r *Run) Close() {
	r.mu.Lock()
	closed := r.closed
	r.closed = true
	r.mu.Unlock()
	if closed {
		return
	}
	r.claim(func(t *Task) { fail(t, codeInternal, "the call ended without an outcome") })
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := r.land(ctx); err != nil {
		r.s.log.Warn("cannot write a task's outcome; trying again every few seconds", "task", r.id, "error", err)
	}
}

// end claims the Run for the outcome change makes, and writes it.
func (r *Run) end(ctx context.Context, change func(*Task)) error {
	if !r.claim(change) {
		return nil
	}
	return r.land(ctx)
}

// claim marks the Run finished with outcome (nil when the task ended
// elsewhere), reporting whether it was not.
func (r *Run) claim(outcome func(*Task)) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return false
	}
	r.finished, r.outcome = true, outcome
	r.dropProgress()
	return true
}

// watched reports whether a re-read of the task may stop the Run: the
// store has it, and the Run has not finished.
func (r *Run) watched() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.created && !r.finished
}

// unwritten reports whether the Run holds an outcome the store has not
// taken yet.
func (r *Run) unwritten() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outcome != nil
}

// land writes the pending outcome, if any, and frees the Run's slot once
// it is closed with nothing left to write. The outcome is settled when it
// lands, when the task ended otherwise (ErrTerminal: it keeps its own), or
// when the task is gone (ErrNotFound, or its TTL passed while the store
// failed); a store that refuses its size (ErrTooLarge: the memory store's
// budget) gets a failure saying so instead, which drops what the task held
// and so always fits; any other error keeps it pending, returned.
func (r *Run) land(ctx context.Context) error {
	r.landing.Lock()
	defer r.landing.Unlock()
	r.mu.Lock()
	change := r.outcome
	r.mu.Unlock()
	var err error
	if change != nil {
		err = r.write(ctx, change)
		if errors.Is(err, ErrTooLarge) {
			msg := "the task's outcome cannot be kept: " + err.Error()
			change = func(t *Task) { fail(t, codeInternal, msg) }
			err = r.write(ctx, change)
		}
	}
	r.mu.Lock()
	switch {
	case err == nil || errors.Is(err, ErrNotFound):
		r.outcome = nil
	case !time.Now().Before(r.expires):
		r.outcome = nil
		r.s.log.Warn("a task's outcome was never written: the store failed until the task expired", "task", r.id, "error", err)
	default:
		r.outcome = change
	}
	free := r.closed && r.outcome == nil
	r.mu.Unlock()
	if free {
		r.s.release(r.id)
	}
	return err
}

// write ends the task with the outcome set by change; a task ended
// already keeps its own (ErrTerminal is no error here).
func (r *Run) write(ctx context.Context, change func(*Task)) error {
	_, err := r.s.store.Update(ctx, r.id, func(t *Task) error { change(t); return nil })
	if errors.Is(err, ErrTerminal) {
		return nil
	}
	return err
}

// ended notes that the task ended elsewhere: the Run stops, and unless it
// was writing its outcome itself, the call is told to stop.
func (r *Run) ended() {
	if r.claim(nil) {
		r.stop()
	}
}

// stop closes Cancelled.
func (r *Run) stop() { r.stopOnce.Do(func() { close(r.cancelled) }) }

// poke tells WaitInput to look at the record again.
func (r *Run) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// dropProgress forgets the progress not written yet. r.mu is held.
func (r *Run) dropProgress() {
	r.pending = false
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
}
