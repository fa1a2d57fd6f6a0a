package tasks_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/host/tasks"
)

// TestDrainLetsTheTasksRunningHereEnd: a replica that stops drains before
// it closes. A task that ends while Drain waits completes, and replica b
// reads it completed; one still running when Drain's context ends is
// named in Drain's error, then failed by Close naming the replica, which
// b reads too.
func TestDrainLetsTheTasksRunningHereEnd(t *testing.T) {
	forEach(t, func(t *testing.T, be backend) {
		a, b := services(t, be, tasks.Options{})
		if err := a.Drain(context.Background()); err != nil {
			t.Fatalf("Drain with no task running: %v", err)
		}

		done, run := create(t, a)
		drained := make(chan error, 1)
		go func() { drained <- a.Drain(context.Background()) }()
		if err := run.Complete(context.Background(), json.RawMessage(`{"content":[]}`)); err != nil {
			t.Fatal(err)
		}
		run.Close()
		select {
		case err := <-drained:
			if err != nil {
				t.Fatalf("Drain after the last task ended: %v", err)
			}
		case <-time.After(waitFor):
			t.Fatalf("Drain did not return within %v of the last task's end", waitFor)
		}

		cut, _ := create(t, a)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { drained <- a.Drain(ctx) }()
		cancel() // the grace period is over
		if err := <-drained; err == nil || !strings.Contains(err.Error(), "1 still running") {
			t.Fatalf("Drain past its grace with a task running: %v, want an error saying 1 still runs", err)
		}
		a.Close()

		if task := get(t, b, done.ID); task.Status != tasks.Completed {
			t.Errorf("the task that ended during the drain is %s on b, want completed", task.Status)
		}
		task := get(t, b, cut.ID)
		if task.Status != tasks.Failed || !strings.Contains(task.StatusMessage, "the replica a stopped") {
			t.Errorf("the task still running after the grace: %s %q on b, want failed naming the replica", task.Status, task.StatusMessage)
		}
	})
}
