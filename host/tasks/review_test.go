package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/plughost/plughost/host/tasks"
)

// flaky is a memory store whose next Update fails while failing is set
// (a redis outage, a lost connection).
type flaky struct {
	*tasks.Memory
	failing atomic.Bool
}

func (f *flaky) Update(ctx context.Context, id string, change func(*tasks.Task) error) (*tasks.Task, error) {
	if f.failing.Load() {
		return nil, errors.New("redis: connection refused")
	}
	return f.Memory.Update(ctx, id, change)
}

// TestOutcomeWriteFails: when the store fails the write of a call's
// outcome (Complete), the task must not stay "working" for its whole TTL
// with nothing behind it: Close (the call is over) must still end it.
// Today Complete claims the Run before writing, so Close finds it claimed
// and writes nothing; the owner beats, so no peer fails it either.
func TestOutcomeWriteFails(t *testing.T) {
	t.Parallel()
	store := &flaky{Memory: tasks.NewMemory(tasks.MemoryOptions{})}
	svc := tasks.New(tasks.Options{Store: store})
	defer svc.Close()
	ctx := context.Background()
	task, run, err := svc.Create(ctx, tester, "tool")
	if err != nil {
		t.Fatal(err)
	}
	store.failing.Store(true)
	if err := run.Complete(ctx, json.RawMessage(`{"content":[]}`)); err == nil {
		t.Fatal("Complete succeeded on a failing store")
	}
	store.failing.Store(false) // the store is back
	run.Close()
	got, err := svc.Get(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Status.Terminal() {
		t.Errorf("after a failed outcome write and Close the task is %s, want it terminal", got.Status)
	}
}
