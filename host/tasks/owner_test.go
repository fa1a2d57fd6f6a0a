package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/plughost/plughost/host/tasks"
)

// Attack 1 of issue 31: caller B names caller A's task, on A's replica
// and on its peer. tasks/get, tasks/update and tasks/cancel are answered
// as for a task nobody knows (ErrNotFound), the task is left as it was
// (its input not answered, not cancelled), and a watch of it delivers
// nothing; the same for A once its rules deny the task's tool, and for a
// finished task. A itself is served.
func TestTaskBelongsToItsCaller(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		a, bb := services(t, b, tasks.Options{})
		ctx := context.Background()
		alice := tasks.Caller{Key: "alice"}
		task, run, err := a.Create(ctx, alice, "files")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(run.Close)
		requests := `{"1/pw":{"method":"elicitation/create","params":{"message":"confirm"}}}`
		if err := run.NeedInput(ctx, json.RawMessage(requests), ""); err != nil {
			t.Fatal(err)
		}
		denied := tasks.Caller{Key: "alice", MayUse: func(name string) bool { return name != "files" }}
		strangers := map[string]tasks.Caller{
			"another caller":                 {Key: "bob"},
			"the caller, its rules now deny": denied,
		}
		for name, who := range strangers {
			for _, s := range []*tasks.Service{a, bb} {
				_, err := s.GetAs(ctx, who, task.ID)
				isNotFound(t, name+": GetAs", err)
				isNotFound(t, name+": UpdateAs", s.UpdateAs(ctx, who, task.ID, json.RawMessage(`{"1/pw":{"action":"decline"}}`)))
				isNotFound(t, name+": CancelAs", s.CancelAs(ctx, who, task.ID))
			}
		}
		if got := get(t, bb, task.ID); got.Status != tasks.InputRequired || string(got.InputRequests) != requests {
			t.Fatalf("after the strangers: %s %s, want the task untouched", got.Status, got.InputRequests)
		}

		// A stranger's watch is told nothing, A's is.
		seen := make(chan *tasks.Task, 8)
		stopBob := bb.WatchAs(tasks.Caller{Key: "bob"}, []string{task.ID}, func(t *tasks.Task) { seen <- t })
		defer stopBob()
		mine := make(chan *tasks.Task, 8)
		stopAlice := bb.WatchAs(alice, []string{task.ID}, func(t *tasks.Task) { mine <- t })
		defer stopAlice()
		if err := bb.UpdateAs(ctx, alice, task.ID, json.RawMessage(`{"1/pw":{"action":"accept"}}`)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := run.WaitInput(ctx); err != nil {
			t.Fatal(err)
		}
		if err := run.Complete(ctx, json.RawMessage(`{"content":[]}`)); err != nil {
			t.Fatal(err)
		}
		for done := false; !done; {
			select {
			case got := <-mine:
				done = got.Status == tasks.Completed
			case <-time.After(waitFor):
				t.Fatal("the caller's watch did not see its task complete")
			}
		}
		stopBob()
		if len(seen) > 0 {
			t.Errorf("another caller's watch was delivered %s", (<-seen).Status)
		}

		// Finished: still nobody else's (a cancel of another's finished
		// task is not acknowledged as the owner's is).
		for name, who := range strangers {
			isNotFound(t, name+": CancelAs of the finished task", bb.CancelAs(ctx, who, task.ID))
			isNotFound(t, name+": UpdateAs of the finished task", bb.UpdateAs(ctx, who, task.ID, json.RawMessage(`{}`)))
		}
		if err := bb.CancelAs(ctx, alice, task.ID); err != nil {
			t.Errorf("the owner's cancel of its finished task: %v, want acknowledged", err)
		}
		if got, err := bb.GetAs(ctx, alice, task.ID); err != nil || got.Status != tasks.Completed {
			t.Errorf("the owner's get: %+v, %v; want its completed task", got, err)
		}
	})
}

// A record without a caller (written before tasks had one) is nobody's,
// and Create refuses a caller without a key.
func TestTaskWithoutCaller(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		stores := b.open(t, "a")
		svc := tasks.New(tasks.Options{Store: stores[0], Replica: "a"})
		t.Cleanup(func() { svc.Close() })
		ctx := context.Background()
		at := time.Now().UTC().Truncate(time.Millisecond)
		if err := stores[0].Create(ctx, &tasks.Task{ID: "old", Status: tasks.Completed, Created: at, Updated: at, TTL: time.Hour, Owner: "a"}); err != nil {
			t.Fatal(err)
		}
		for _, who := range []tasks.Caller{{Key: "alice"}, {Key: ""}} {
			_, err := svc.GetAs(ctx, who, "old")
			isNotFound(t, "GetAs of a task without a caller", err)
		}
		if _, _, err := svc.Create(ctx, tasks.Caller{}, "files"); err == nil || errors.Is(err, tasks.ErrTooMany) {
			t.Errorf("Create without a caller key: %v, want refused", err)
		}
	})
}
