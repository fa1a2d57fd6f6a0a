package tasks_test

import (
	"context"
	"testing"

	"github.com/plughost/plughost/host/tasks"
)

// earlyCheckStore is a store whose Create first has the Service re-read
// the task, through the change feed, before the record exists: what the
// Service's safety poll does when its tick falls while a Create is on its
// way to Redis (a slow round trip under load). The re-read is done, on a
// goroutine of its own as a feed's, before Create writes the record.
type earlyCheckStore struct {
	tasks.Store
	changed func(id string)
}

func (s *earlyCheckStore) Watch(changed func(id string)) func() {
	s.changed = changed
	return s.Store.Watch(changed)
}

func (s *earlyCheckStore) Create(ctx context.Context, t *tasks.Task) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.changed(t.ID)
	}()
	<-done
	return s.Store.Create(ctx, t)
}

// TestTaskNotEndedByACheckWhileCreated: a re-read of a task whose Create has
// not written it yet finds nothing, which does not mean the task ended:
// its Run is not stopped (Cancelled stays open) and its outcome lands. It
// did once in CI: the call was cancelled 3 ms after its CreateTaskResult,
// and the Run, believing the task gone, never wrote an outcome, so the
// task stayed working until its TTL.
func TestTaskNotEndedByACheckWhileCreated(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		store := &earlyCheckStore{Store: b.open(t, "a")[0]}
		s := tasks.New(tasks.Options{Store: store, Replica: "a"})
		t.Cleanup(func() { s.Close() })
		task, run := create(t, s)
		select {
		case <-run.Cancelled():
			t.Fatal("the Run of a task just created is cancelled: a re-read before the record existed took it for ended")
		default:
		}
		if err := run.Complete(context.Background(), []byte(`{"content":[]}`)); err != nil {
			t.Fatal(err)
		}
		if got := get(t, s, task.ID); got.Status != tasks.Completed {
			t.Fatalf("task is %s after Complete, want completed", got.Status)
		}
	})
}
