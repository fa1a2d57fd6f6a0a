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
		State: "state", Asked: []string{"a", "b"}, Owner: "a", Tool: "echo", Provider: "echo",
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
		seen := make(chan string, 10)
		stop := s[1].Watch(func(id string) {
			task, err := s[1].Get(ctx, id) // not under the store's lock
			if err != nil {
				t.Error(err)
				return
			}
			seen <- id + " " + task.StatusMessage
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
