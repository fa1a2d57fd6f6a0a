package mcp

import (
	"context"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/tasks"
)

// earlyCheckStore is a task store whose Create first has the Service
// re-read the task through its change feed, before the record exists: what
// the Service's safety poll does when its tick falls while a Create is on
// its way to Redis (slow under load). The re-read runs on a goroutine of
// its own, as a feed's, and is done before Create writes the record.
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

// TestTaskEndsThoughCheckedWhileCreated: a task re-read by its Service
// while it was being created (found missing: not written yet) still ends
// with its call's outcome. In CI (cmd/plughost TestTasksBelongToTheirCaller,
// under load) the Service's poll took the missing record for a task that
// ended: it stopped the Run, whose Cancelled cancelled the call 3 ms after
// the CreateTaskResult, and nobody ended the task: it stayed working.
func TestTaskEndsThoughCheckedWhileCreated(t *testing.T) {
	t.Parallel()
	store := &earlyCheckStore{Store: tasks.NewMemory(tasks.MemoryOptions{})}
	svc := tasks.New(tasks.Options{Store: store})
	t.Cleanup(func() { svc.Close() })
	c := newClient(t, clientOptions{server: Options{Tasks: svc}})

	id := startTask(t, c, 1, "job", `{}`)
	c.await("the job to wait", func() bool { n, _ := c.cat.Jobs(); return n == 1 })
	c.cat.ReleaseJob(0)
	task := awaitTaskWhere(t, svc, id, "a terminal status", func(task *tasks.Task) bool { return task.Status.Terminal() })
	if task.Status != tasks.Completed || !strings.Contains(string(task.Result), "job done") {
		t.Errorf("task %s, result %s; want completed with the job's result", task.Status, task.Result)
	}
	if _, ended := c.cat.Jobs(); ended != 0 {
		t.Errorf("%d jobs were cancelled, want none", ended)
	}
}
