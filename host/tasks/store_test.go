package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/internal/redistest"
)

// record is a task with every member set, created now for an hour.
func record(id string) *tasks.Task {
	at := time.Now().UTC().Truncate(time.Millisecond)
	return &tasks.Task{
		ID: id, Status: tasks.InputRequired, StatusMessage: "waiting", Created: at, Updated: at,
		TTL: time.Hour, PollInterval: time.Second,
		InputRequests: json.RawMessage(`{"b":{"method":"elicitation/create"}}`), Answers: json.RawMessage(`{"a":{"action":"accept"}}`),
		State: "state", Asked: []string{"a", "b"}, Owner: "a", Tool: "echo",
	}
}

// A created task reads back whole on every replica, as a copy of its own.
func TestStoreCreateGet(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		s := b.open(t, "a", "b")
		ctx := context.Background()
		want := record("t1")
		if err := s[0].Create(ctx, want); err != nil {
			t.Fatal(err)
		}
		got := mustGet(t, s[1], "t1")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Get (-created +got):\n%s", diff)
		}
		got.Asked[0], got.StatusMessage = "changed", "changed"
		if diff := cmp.Diff(want, mustGet(t, s[0], "t1")); diff != "" {
			t.Errorf("changing a task Get returned changed the store (-created +got):\n%s", diff)
		}
		if err := s[1].Create(ctx, record("t1")); err == nil {
			t.Error("Create of an ID taken succeeded")
		}
		_, err := s[1].Get(ctx, "nope")
		isNotFound(t, "Get of an unknown ID", err)
		_, err = s[1].Update(ctx, "nope", func(*tasks.Task) error { return nil })
		isNotFound(t, "Update of an unknown ID", err)
	})
}

// Update applies its change and returns the result; the change's error
// aborts it; a terminal task is not changed.
func TestStoreUpdate(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		s := b.open(t, "a", "b")
		ctx := context.Background()
		if err := s[0].Create(ctx, record("t1")); err != nil {
			t.Fatal(err)
		}
		got, err := s[1].Update(ctx, "t1", func(t *tasks.Task) error { t.StatusMessage = "one"; return nil })
		if err != nil || got.StatusMessage != "one" {
			t.Fatalf("Update = %+v, %v; want statusMessage one", got, err)
		}
		boom := errors.New("boom")
		if _, err := s[0].Update(ctx, "t1", func(t *tasks.Task) error { t.StatusMessage = "two"; return boom }); err != boom {
			t.Errorf("Update with a failing change = %v, want its error", err)
		}
		if got := mustGet(t, s[0], "t1").StatusMessage; got != "one" {
			t.Errorf("after an aborted update, statusMessage = %q, want one", got)
		}
		if _, err := s[0].Update(ctx, "t1", func(t *tasks.Task) error { t.Status = tasks.Cancelled; return nil }); err != nil {
			t.Fatal(err)
		}
		called := false
		_, err = s[1].Update(ctx, "t1", func(t *tasks.Task) error { called = true; return nil })
		if !errors.Is(err, tasks.ErrTerminal) || called {
			t.Errorf("Update of a cancelled task = %v (change called: %v), want ErrTerminal without calling it", err, called)
		}
	})
}

// Concurrent updates from two replicas never lose one.
func TestStoreConcurrentUpdates(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		s := b.open(t, "a", "b")
		ctx := context.Background()
		if err := s[0].Create(ctx, record("t1")); err != nil {
			t.Fatal(err)
		}
		const writers, each = 8, 5
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				for range each {
					if _, err := s[i%2].Update(ctx, "t1", func(t *tasks.Task) error { t.State += "x"; return nil }); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if got := mustGet(t, s[1], "t1").State; got != "state"+strings.Repeat("x", writers*each) {
			t.Errorf("after %d updates, state = %q: some were lost", writers*each, got)
		}
	})
}

// A task is gone once Created+TTL has passed: one created expired at
// once, one with a short TTL when it lapses.
func TestStoreExpiry(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		s := b.open(t, "a")[0]
		ctx := context.Background()
		old := record("old")
		old.Created = old.Created.Add(-2 * time.Hour)
		if err := s.Create(ctx, old); err != nil {
			t.Fatal(err)
		}
		_, err := s.Get(ctx, "old")
		isNotFound(t, "Get of an expired task", err)
		_, err = s.Update(ctx, "old", func(*tasks.Task) error { return nil })
		isNotFound(t, "Update of an expired task", err)

		short := record("short")
		short.TTL = 300 * time.Millisecond
		if err := s.Create(ctx, short); err != nil {
			t.Fatal(err)
		}
		eventually(t, "a task with a 300ms TTL is gone", func() bool {
			_, err := s.Get(ctx, "short")
			return errors.Is(err, tasks.ErrNotFound)
		})
	})
}

// Watch on one replica hears of the tasks created and updated on another,
// and may read the store from its callback.
func TestStoreWatch(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		s := b.open(t, "a", "b")
		ctx := context.Background()
		// A callback under way when the test ends goes on (Watch's stop
		// says so) and may find the store closed: it reports to the loop
		// below, never to t, and never blocks.
		seen := make(chan string, 10)
		stop := s[1].Watch(func(id string) {
			msg := "error: "
			if task, err := s[1].Get(ctx, id); err != nil { // not under the store's lock
				msg += err.Error()
			} else {
				msg = id + " " + task.StatusMessage
			}
			select {
			case seen <- msg:
			default:
			}
		})
		defer stop()
		if err := s[0].Create(ctx, record("t1")); err != nil {
			t.Fatal(err)
		}
		if _, err := s[0].Update(ctx, "t1", func(t *tasks.Task) error { t.StatusMessage = "updated"; return nil }); err != nil {
			t.Fatal(err)
		}
		// The notices may coalesce: the last one reads the update.
		for got := ""; got != "t1 updated"; {
			select {
			case got = <-seen:
				if strings.HasPrefix(got, "error: ") {
					t.Fatalf("the watcher's Get: %s", got)
				}
			case <-time.After(waitFor):
				t.Fatalf("the watcher did not see the update (last saw %q)", got)
			}
		}
	})
}

// Alive is true for a replica that created a task in a memory store (it is
// this process), and false for one it never saw.
func TestMemoryAlive(t *testing.T) {
	t.Parallel()
	s := tasks.NewMemory(tasks.MemoryOptions{})
	ctx := context.Background()
	if err := s.Create(ctx, record("t1")); err != nil {
		t.Fatal(err)
	}
	for replica, want := range map[string]bool{"a": true, "stranger": false} {
		if alive, err := s.Alive(ctx, replica); alive != want || err != nil {
			t.Errorf("Alive(%s) = %v, %v; want %v", replica, alive, err, want)
		}
	}
}

// A redis replica is alive while it beats; dead at once when its store
// closes, and within the replica timeout when it vanishes without closing.
func TestRedisAlive(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	peer := openRedis(t, srv.Socket, "peer")
	closing := openRedis(t, srv.Socket, "closing")
	proxied, cut := srv.Proxy(t)
	openRedis(t, proxied, "vanishing")
	for _, r := range []string{"peer", "closing", "vanishing"} {
		if alive, err := peer.Alive(ctx, r); !alive || err != nil {
			t.Errorf("Alive(%s) = %v, %v; want true", r, alive, err)
		}
	}
	if err := closing.Close(); err != nil {
		t.Fatal(err)
	}
	if alive, err := peer.Alive(ctx, "closing"); alive || err != nil {
		t.Errorf("Alive of a replica whose store closed = %v, %v; want false at once", alive, err)
	}
	cut()
	eventually(t, "a replica cut off is dead", func() bool {
		alive, err := peer.Alive(ctx, "vanishing")
		return err == nil && !alive
	})
}

// A full memory store forgets its oldest terminal task to make room, and
// refuses a task when none is terminal.
func TestMemoryBound(t *testing.T) {
	t.Parallel()
	s := tasks.NewMemory(tasks.MemoryOptions{MaxTasks: 3})
	ctx := context.Background()
	for i, id := range []string{"t1", "t2", "t3"} {
		task := record(id)
		task.Created = task.Created.Add(time.Duration(i) * time.Millisecond)
		task.Status = tasks.Working
		if id != "t1" {
			task.Status = tasks.Completed
		}
		if err := s.Create(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Create(ctx, record("t4")); err != nil {
		t.Fatalf("Create into a full store with terminal tasks: %v", err)
	}
	_, err := s.Get(ctx, "t2")
	isNotFound(t, "Get of the oldest terminal task after an eviction", err)
	for _, id := range []string{"t1", "t3", "t4"} {
		mustGet(t, s, id)
	}
	if err := s.Create(ctx, record("t5")); err != nil { // evicts t3
		t.Fatal(err)
	}
	if err := s.Create(ctx, record("t6")); !errors.Is(err, tasks.ErrTooMany) {
		t.Errorf("Create into a store full of running tasks = %v, want ErrTooMany", err)
	}
}

// A memory store keeps its tasks' payloads within MaxBytes: a write over
// it forgets the oldest finished tasks first; when that would not make
// enough room, it forgets none, and is refused (Create: ErrTooMany,
// Update: ErrTooLarge, naming the budget), changing nothing. Failing a
// task always fits.
func TestMemoryBytes(t *testing.T) {
	t.Parallel()
	s := tasks.NewMemory(tasks.MemoryOptions{MaxBytes: 1000})
	ctx := context.Background()
	at := time.Now().UTC().Truncate(time.Millisecond)
	n := 0
	put := func(id string, status tasks.Status, size int) error {
		n++
		return s.Create(ctx, &tasks.Task{ID: id, Status: status, Created: at.Add(time.Duration(n) * time.Millisecond), Updated: at,
			TTL: time.Hour, Owner: "a", State: strings.Repeat("s", size)})
	}
	grow := func(id string, size int) error {
		_, err := s.Update(ctx, id, func(t *tasks.Task) error { t.State = strings.Repeat("s", size); return nil })
		return err
	}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	refused := func(what string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) || !strings.Contains(err.Error(), "budget of 1000 bytes") {
			t.Errorf("%s = %v, want %v naming the budget of 1000 bytes", what, err, want)
		}
	}
	kept := func(ids ...string) {
		t.Helper()
		for _, id := range ids {
			mustGet(t, s, id)
		}
	}

	must("done1", put("done1", tasks.Completed, 300))
	must("done2", put("done2", tasks.Completed, 300))
	must("run1", put("run1", tasks.Working, 300))
	must("run2, forgetting done1", put("run2", tasks.Working, 300))
	_, err := s.Get(ctx, "done1")
	isNotFound(t, "Get of the oldest finished task, forgotten for room", err)
	kept("done2", "run1")
	must("growing run1, forgetting done2", grow("run1", 600))
	_, err = s.Get(ctx, "done2")
	isNotFound(t, "Get of the finished task forgotten for an update", err)

	// 900 bytes held by running tasks: no room for 200 more.
	refused("growing run2 by 200 bytes", grow("run2", 500), tasks.ErrTooLarge)
	if got := len(mustGet(t, s, "run2").State); got != 300 {
		t.Errorf("a refused update left a state of %d bytes, want 300", got)
	}
	refused("Create of 200 bytes", put("run3", tasks.Working, 200), tasks.ErrTooMany)
	_, err = s.Get(ctx, "run3")
	isNotFound(t, "Get of a refused task", err)
	must("done3, filling the budget", put("done3", tasks.Completed, 100))
	refused("Create of 200 bytes, which forgetting done3 would not make room for", put("run3", tasks.Working, 200), tasks.ErrTooMany)
	kept("done3")

	_, err = s.Update(ctx, "run1", func(t *tasks.Task) error {
		t.Status, t.State, t.Error = tasks.Failed, "", json.RawMessage(`{"code":-32603,"message":"`+strings.Repeat("x", 1000)+`"}`)
		return nil
	})
	must("failing run1", err)
	must("run3, in the room run1 left", put("run3", tasks.Working, 200))
	kept("done3", "run1")
}

// An outcome the memory store has no room for fails the task, saying so.
func TestOutcomeOverBudget(t *testing.T) {
	t.Parallel()
	svc := tasks.New(tasks.Options{Store: tasks.NewMemory(tasks.MemoryOptions{MaxBytes: 100})})
	defer svc.Close()
	ctx := context.Background()
	task, run, err := svc.Create(ctx, tester, "echo")
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if err := run.Complete(ctx, json.RawMessage(`{"content":[{"type":"text","text":"`+strings.Repeat("x", 200)+`"}]}`)); err != nil {
		t.Fatal(err)
	}
	got, err := svc.Get(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, got, -32603, "outcome cannot be kept", "budget of 100 bytes")
}
