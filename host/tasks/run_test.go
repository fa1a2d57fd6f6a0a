package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/host/tasks/redistore"
	"github.com/plughost/plughost/internal/redistest"
)

// Complete keeps the result; Fail, the JSON-RPC error; a result or an
// input round over MaxResultBytes, or a result that is not an object,
// fails the task saying why.
func TestRunOutcomes(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		a, bb := services(t, b, tasks.Options{MaxResultBytes: 1024})
		ctx := context.Background()
		big := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 2000) + `"}]}`)

		task, run := create(t, a)
		result := json.RawMessage(`{"content":[{"type":"text","text":"hi"}],"isError":false}`)
		if err := run.Complete(ctx, result); err != nil {
			t.Fatal(err)
		}
		if got := get(t, bb, task.ID); got.Status != tasks.Completed || string(got.Result) != string(result) {
			t.Errorf("after Complete: %s, result %s", got.Status, got.Result)
		}

		task, run = create(t, a)
		if err := run.Fail(ctx, -32000, "the backend is down"); err != nil {
			t.Fatal(err)
		}
		wantError(t, get(t, bb, task.ID), -32000, "the backend is down")

		task, run = create(t, a)
		if err := run.Complete(ctx, big); err != nil {
			t.Fatal(err)
		}
		wantError(t, get(t, bb, task.ID), -32603, "the result is "+strconv.Itoa(len(big))+" bytes", "bound of 1024")

		task, run = create(t, a)
		if err := run.Complete(ctx, json.RawMessage(`["not","an","object"]`)); err != nil {
			t.Fatal(err)
		}
		wantError(t, get(t, bb, task.ID), -32603, "not a JSON object")

		task, run = create(t, a)
		if err := run.NeedInput(ctx, big, "s"); err == nil {
			t.Error("NeedInput over the bound succeeded")
		}
		wantError(t, get(t, bb, task.ID), -32603, strconv.Itoa(len(big)+1)+" bytes", "bound of 1024")
		if _, _, err := run.WaitInput(ctx); !errors.Is(err, tasks.ErrTerminal) {
			t.Errorf("WaitInput after the task failed = %v, want ErrTerminal", err)
		}
	})
}

// A replica runs at most MaxRunning tasks: Run.Close frees the slot, and
// fails a task left without an outcome.
func TestMaxRunning(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		a, bb := services(t, b, tasks.Options{MaxRunning: 1})
		ctx := context.Background()
		task, run := create(t, a)
		if _, _, err := a.Create(ctx, tester, "echo"); !errors.Is(err, tasks.ErrTooMany) {
			t.Errorf("Create beyond MaxRunning = %v, want ErrTooMany", err)
		}
		create(t, bb) // the bound is each replica's
		run.Close()
		wantError(t, get(t, bb, task.ID), -32603, "the call ended without an outcome")
		done, run := create(t, a)
		if err := run.Complete(ctx, json.RawMessage(`{"content":[]}`)); err != nil {
			t.Fatal(err)
		}
		run.Close()
		if got := get(t, bb, done.ID); got.Status != tasks.Completed {
			t.Errorf("Close after Complete left the task %s, want completed", got.Status)
		}
	})
}

// Closing a Service fails the tasks it still runs, naming the replica,
// and closes their Cancelled; the finished ones keep their outcome.
func TestServiceClose(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		a, bb := services(t, b, tasks.Options{})
		ctx := context.Background()
		working, run1 := create(t, a)
		waiting, run2 := create(t, a)
		if err := run2.NeedInput(ctx, json.RawMessage(`{"k":{"method":"elicitation/create"}}`), ""); err != nil {
			t.Fatal(err)
		}
		done, run3 := create(t, a)
		if err := run3.Complete(ctx, json.RawMessage(`{"content":[]}`)); err != nil {
			t.Fatal(err)
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		for _, task := range []*tasks.Task{working, waiting} {
			wantError(t, get(t, bb, task.ID), -32603, "the replica a stopped")
		}
		closed(t, run1.Cancelled(), "Cancelled of a task running when the service closed")
		closed(t, run2.Cancelled(), "Cancelled of a task waiting when the service closed")
		if got := get(t, bb, done.ID); got.Status != tasks.Completed {
			t.Errorf("a completed task is %s after its service closed", got.Status)
		}
		if _, _, err := a.Create(ctx, tester, "echo"); err == nil {
			t.Error("Create on a closed service succeeded")
		}
	})
}

// Watch on a peer delivers the changes of the watched task, to its
// terminal state with the result, and nothing of other tasks.
func TestServiceWatch(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		a, bb := services(t, b, tasks.Options{PollInterval: 100 * time.Millisecond})
		ctx := context.Background()
		task, run := create(t, a)
		other, otherRun := create(t, a)
		got := make(chan *tasks.Task, 100)
		stop := bb.Watch([]string{task.ID}, func(t *tasks.Task) { got <- t })
		defer stop()
		if err := otherRun.Complete(ctx, json.RawMessage(`{"content":[]}`)); err != nil {
			t.Fatal(err)
		}
		run.Progress("half way")
		if err := run.Complete(ctx, json.RawMessage(`{"content":[{"type":"text","text":"done"}]}`)); err != nil {
			t.Fatal(err)
		}
		for {
			var d *tasks.Task
			select {
			case d = <-got:
			case <-time.After(waitFor):
				t.Fatal("Watch did not deliver the terminal state")
			}
			if d.ID == other.ID {
				t.Fatalf("Watch delivered task %s, not watched", other.ID)
			}
			if d.Status.Terminal() {
				if d.Status != tasks.Completed || !strings.Contains(string(d.Result), "done") {
					t.Errorf("Watch delivered %s with result %s, want completed with the result", d.Status, d.Result)
				}
				return
			}
		}
	})
}

// spy counts a store's updates, and can hold one until released.
type spy struct {
	tasks.Store
	updates atomic.Int32
	mu      sync.Mutex
	next    *hold
}

// hold is one update held: held closes when it starts, release lets it go
// on, returned closes when the store answered it.
type hold struct{ held, release, returned chan struct{} }

// holdNext holds the next update.
func (s *spy) holdNext() *hold {
	h := &hold{make(chan struct{}), make(chan struct{}), make(chan struct{})}
	s.mu.Lock()
	s.next = h
	s.mu.Unlock()
	return h
}

func (s *spy) Update(ctx context.Context, id string, change func(*tasks.Task) error) (*tasks.Task, error) {
	s.updates.Add(1)
	s.mu.Lock()
	h := s.next
	s.next = nil
	s.mu.Unlock()
	if h != nil {
		close(h.held)
		<-h.release
		defer close(h.returned)
	}
	return s.Store.Update(ctx, id, change)
}

// Progress is written at most every PollInterval/2, and the last message
// lands.
func TestProgressCoalesced(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		stores := b.open(t, "a")
		s := &spy{Store: stores[0]}
		const poll = 200 * time.Millisecond
		a := tasks.New(tasks.Options{Store: s, Replica: "a", PollInterval: poll})
		t.Cleanup(func() { a.Close() })
		task, run := create(t, a)
		landed := make(chan struct{})
		var once sync.Once
		stop := a.Watch([]string{task.ID}, func(t *tasks.Task) {
			if t.StatusMessage == "200 of 200" {
				once.Do(func() { close(landed) })
			}
		})
		defer stop()
		before, start := s.updates.Load(), time.Now()
		for i := 1; i <= 200; i++ {
			run.Progress(strconv.Itoa(i) + " of 200")
		}
		closed(t, landed, "the last progress message")
		writes, bound := s.updates.Load()-before, 2+int32(time.Since(start)/(poll/2))
		if writes < 1 || writes > bound {
			t.Errorf("200 messages in %v took %d writes, want 1 to %d (one every %v)", time.Since(start), writes, bound, poll/2)
		}
	})
}

// A progress write under way when the task asks for input, or that takes
// a whole input round, does not overwrite what the task says since.
func TestProgressNeverStale(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		stores := b.open(t, "a")
		s := &spy{Store: stores[0]}
		a := tasks.New(tasks.Options{Store: s, Replica: "a", PollInterval: 100 * time.Millisecond})
		t.Cleanup(func() { a.Close() })
		ctx := context.Background()
		task, run := create(t, a)
		round := func(key string) {
			t.Helper()
			if err := run.NeedInput(ctx, json.RawMessage(`{"`+key+`":{"method":"elicitation/create"}}`), ""); err != nil {
				t.Fatal(err)
			}
		}

		h := s.holdNext()
		run.Progress("stale 1")
		closed(t, h.held, "the progress write")
		round("k1")
		close(h.release)
		closed(t, h.returned, "the progress write's end")
		if got := get(t, a, task.ID).StatusMessage; got != "waiting for the client's input: elicitation/create" {
			t.Errorf("a progress write under way when the task asked for input made its message %q", got)
		}

		if err := a.UpdateAs(ctx, tester, task.ID, json.RawMessage(`{"k1":{}}`)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := run.WaitInput(ctx); err != nil {
			t.Fatal(err)
		}
		h = s.holdNext()
		run.Progress("stale 2")
		closed(t, h.held, "the progress write")
		round("k2")
		if err := a.UpdateAs(ctx, tester, task.ID, json.RawMessage(`{"k2":{}}`)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := run.WaitInput(ctx); err != nil {
			t.Fatal(err)
		}
		close(h.release)
		closed(t, h.returned, "the progress write's end")
		if got := get(t, a, task.ID); got.Status != tasks.Working || got.StatusMessage != "" {
			t.Errorf("a progress write that took an input round made the task %s %q, want working without a message", got.Status, got.StatusMessage)
		}
	})
}

// A replica that vanishes without closing (killed, cut off) is seen dead
// by its peer within the replica timeout: the peer's Get fails its task,
// naming it.
func TestDeadOwner(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	proxied, cut := srv.Proxy(t)
	a := tasks.New(tasks.Options{Store: openRedis(t, proxied, "a"), Replica: "a"})
	t.Cleanup(func() { a.Close() })
	bb := tasks.New(tasks.Options{Store: openRedis(t, srv.Socket, "b"), Replica: "b"})
	t.Cleanup(func() { bb.Close() })
	task, _ := create(t, a)
	if got := get(t, bb, task.ID); got.Status != tasks.Working {
		t.Fatalf("the task of a live replica is %s, want working", got.Status)
	}
	cut()
	var got *tasks.Task
	eventually(t, "the peer fails the task of the vanished replica", func() bool {
		got = get(t, bb, task.ID)
		return got.Status != tasks.Working
	})
	wantError(t, got, -32603, "the replica a running the task stopped")
}

// An outcome the store fails to take stays pending: Close tries it again,
// then the service's poll, until it lands, the task ends otherwise, or
// its TTL passes; the Run keeps its slot among MaxRunning until then.
func TestOutcomeRetried(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		ttl time.Duration
		// then acts on the store while the outcome is pending.
		then func(t *testing.T, store *flaky, id string)
		// want is the task's status in the end; "" when it is gone.
		want tasks.Status
	}{
		"the store is back": {
			then: func(t *testing.T, store *flaky, id string) { store.failing.Store(false) },
			want: tasks.Completed,
		},
		"a peer cancelled the task meanwhile": {
			then: func(t *testing.T, store *flaky, id string) {
				if _, err := store.Memory.Update(context.Background(), id, func(t *tasks.Task) error { t.Status = tasks.Cancelled; return nil }); err != nil {
					t.Fatal(err)
				}
				store.failing.Store(false)
			},
			want: tasks.Cancelled,
		},
		"the store fails until the task expires": {
			ttl:  500 * time.Millisecond,
			then: func(*testing.T, *flaky, string) {},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := &flaky{Memory: tasks.NewMemory(tasks.MemoryOptions{})}
			svc := tasks.New(tasks.Options{Store: store, MaxRunning: 1, TTL: c.ttl})
			t.Cleanup(func() { svc.Close() })
			ctx := context.Background()
			task, run := create(t, svc)
			store.failing.Store(true)
			if err := run.Complete(ctx, json.RawMessage(`{"content":[]}`)); err == nil {
				t.Fatal("Complete succeeded on a failing store")
			}
			run.Close()
			if _, _, err := svc.Create(ctx, tester, "echo"); !errors.Is(err, tasks.ErrTooMany) {
				t.Fatalf("Create while the only slot's outcome is pending = %v, want ErrTooMany", err)
			}
			if got := mustGet(t, store, task.ID); got.Status != tasks.Working {
				t.Fatalf("with the store failing, the task is %s, want working", got.Status)
			}
			c.then(t, store, task.ID)
			eventually(t, "the slot is free again", func() bool {
				_, run, err := svc.Create(ctx, tester, "echo")
				if err == nil {
					t.Cleanup(run.Close)
				}
				return err == nil
			})
			got, err := store.Get(ctx, task.ID)
			switch {
			case c.want == "":
				isNotFound(t, "Get of the expired task", err)
			case err != nil:
				t.Fatal(err)
			case got.Status != c.want:
				t.Errorf("the task is %s, want %s", got.Status, c.want)
			}
		})
	}
}

// lostReply is a memory store that, while lost is set, makes its updates
// but answers an error (the reply lost on the way back).
type lostReply struct {
	*tasks.Memory
	lost atomic.Bool
}

func (l *lostReply) Update(ctx context.Context, id string, change func(*tasks.Task) error) (*tasks.Task, error) {
	t, err := l.Memory.Update(ctx, id, change)
	if err == nil && l.lost.Load() {
		return nil, errors.New("redis: i/o timeout")
	}
	return t, err
}

// A NeedInput the store fails leaves the Run not waiting and without an
// outcome, so the caller's Fail ends the task, whether the write was lost
// (the task still working) or made unseen (the task input_required).
func TestNeedInputFails(t *testing.T) {
	t.Parallel()
	ask := json.RawMessage(`{"k":{"method":"elicitation/create"}}`)
	for name, c := range map[string]struct {
		store  func() tasks.Store
		fail   func(tasks.Store, bool)
		before tasks.Status // the task's status after the failed NeedInput
	}{
		"lost": {
			store:  func() tasks.Store { return &flaky{Memory: tasks.NewMemory(tasks.MemoryOptions{})} },
			fail:   func(s tasks.Store, on bool) { s.(*flaky).failing.Store(on) },
			before: tasks.Working,
		},
		"made unseen": {
			store:  func() tasks.Store { return &lostReply{Memory: tasks.NewMemory(tasks.MemoryOptions{})} },
			fail:   func(s tasks.Store, on bool) { s.(*lostReply).lost.Store(on) },
			before: tasks.InputRequired,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			store := c.store()
			svc := tasks.New(tasks.Options{Store: store})
			t.Cleanup(func() { svc.Close() })
			ctx := context.Background()
			task, run := create(t, svc)
			c.fail(store, true)
			if err := run.NeedInput(ctx, ask, "s"); err == nil {
				t.Fatal("NeedInput succeeded on a failing store")
			}
			c.fail(store, false)
			if got := mustGet(t, store, task.ID).Status; got != c.before {
				t.Fatalf("after the failed NeedInput the task is %s, want %s", got, c.before)
			}
			if _, _, err := run.WaitInput(ctx); err == nil || errors.Is(err, tasks.ErrTerminal) {
				t.Errorf("WaitInput after a failed NeedInput = %v, want an error saying no input was asked", err)
			}
			if err := run.Fail(ctx, -32603, "cannot ask for input"); err != nil {
				t.Fatal(err)
			}
			wantError(t, mustGet(t, store, task.ID), -32603, "cannot ask for input")
		})
	}
}

// A status message a Run writes, of progress or of a failure, is at most
// 1 KiB: a longer one is cut at a UTF-8 boundary and ends with "…".
func TestMessagesClipped(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ message, want string }{
		"1 KiB, kept":                {strings.Repeat("x", 1024), strings.Repeat("x", 1024)},
		"a byte more, cut":           {strings.Repeat("x", 1025), strings.Repeat("x", 1021) + "…"},
		"cut at a rune's start":      {"x" + strings.Repeat("€", 400), "x" + strings.Repeat("€", 340) + "…"}, // 1 + 3×340 = 1021 bytes
		"cut back to a rune's start": {strings.Repeat("€", 400), strings.Repeat("€", 340) + "…"},             // 1021 would split the 341st
		"short, kept verbatim":       {"3 of 10", "3 of 10"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			svc := tasks.New(tasks.Options{PollInterval: 100 * time.Millisecond})
			t.Cleanup(func() { svc.Close() })
			task, run := create(t, svc)
			run.Progress(c.message)
			eventually(t, "the progress message lands", func() bool { return get(t, svc, task.ID).StatusMessage != "" })
			if got := get(t, svc, task.ID).StatusMessage; got != c.want {
				t.Errorf("progress stored as %d bytes %q…, want %d bytes", len(got), got[:min(len(got), 10)], len(c.want))
			}
			if err := run.Fail(context.Background(), -32000, c.message); err != nil {
				t.Fatal(err)
			}
			wantError(t, get(t, svc, task.ID), -32000, c.want)
			if got := get(t, svc, task.ID).StatusMessage; got != c.want {
				t.Errorf("failure stored as %d bytes, want %d", len(got), len(c.want))
			}
		})
	}
}

// Redis trouble that makes every heartbeat vanish, a restart that lost
// them or a stall past the replica timeout, fails no live replica's task:
// a peer asked about it all along sees it working.
func TestRedisTroubleFailsNoTask(t *testing.T) {
	t.Parallel()
	const timeout = 1500 * time.Millisecond
	for name, trouble := range map[string]func(ctx context.Context, raw *redis.Client) error{
		"a restart that lost the heartbeats": func(ctx context.Context, raw *redis.Client) error {
			if err := raw.Del(ctx, "plughost:replica:a", "plughost:replica:b").Err(); err != nil {
				return err
			}
			for _, kind := range []string{"normal", "pubsub"} {
				if err := raw.ClientKillByFilter(ctx, "TYPE", kind, "SKIPME", "yes").Err(); err != nil {
					return err
				}
			}
			return nil
		},
		"a stall past the replica timeout": func(ctx context.Context, raw *redis.Client) error {
			return raw.Do(ctx, "DEBUG", "SLEEP", (timeout + 500*time.Millisecond).Seconds()).Err()
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t, "--enable-debug-command", "local")
			raw := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket, ReadTimeout: -1})
			t.Cleanup(func() { raw.Close() })
			var svcs [2]*tasks.Service
			for i, r := range []string{"a", "b"} {
				store, err := redistore.New(redistore.Options{Address: srv.Socket, Replica: r, ReplicaTimeout: timeout, Secret: testSecret})
				if err != nil {
					t.Fatal(err)
				}
				svcs[i] = tasks.New(tasks.Options{Store: store, Replica: r})
				t.Cleanup(func() { svcs[i].Close() })
			}
			task, _ := create(t, svcs[0])
			ctx := context.Background()
			if err := trouble(ctx, raw); err != nil {
				t.Fatal(err)
			}
			// Asked as a client polls, through three times the verdict's
			// window (ReplicaTimeout/3 from the first look).
			for end := time.Now().Add(timeout); time.Now().Before(end); <-time.After(20 * time.Millisecond) {
				if got := get(t, svcs[1], task.ID); got.Status != tasks.Working {
					t.Fatalf("after %s the peer made the task %s (%s), want it working", name, got.Status, got.StatusMessage)
				}
			}
		})
	}
}
