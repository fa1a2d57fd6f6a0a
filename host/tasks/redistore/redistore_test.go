package redistore_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/host/tasks/redistore"
	"github.com/plughost/plughost/internal/redistest"
)

// New fails at once, naming the address, when no server answers there.
func TestNewUnreachable(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"/nonexistent/redis.sock", "127.0.0.1:1"} {
		t.Run(addr, func(t *testing.T) {
			t.Parallel()
			s, err := redistore.New(redistore.Options{Address: addr, Replica: "a", Secret: testSecret})
			if err == nil {
				s.Close()
				t.Fatalf("New(%s) succeeded", addr)
			}
			if !strings.Contains(err.Error(), addr) {
				t.Errorf("New(%s) = %v, which does not name the address", addr, err)
			}
		})
	}
}

// The keys are the documented ones: the record under <prefix>task:<id>
// expiring at Created+TTL, the heartbeat under <prefix>replica:<name>
// expiring ReplicaTimeout after a beat and marked stopped on Close, and
// the IDs published on <prefix>tasks.
func TestKeyLayout(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	raw := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket})
	defer raw.Close()
	sub := raw.Subscribe(ctx, "custom:tasks")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := redistore.New(redistore.Options{Address: srv.Socket, KeyPrefix: "custom:", Replica: "r1", ReplicaTimeout: 3 * time.Second, Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	created := time.Now().UTC().Truncate(time.Millisecond)
	task := &tasks.Task{ID: "T1", Status: tasks.Working, Created: created, Updated: created, TTL: time.Hour, PollInterval: time.Second, Owner: "r1"}
	if err := s.Create(ctx, task); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "T1", func(t *tasks.Task) error { t.StatusMessage = "hi"; return nil }); err != nil {
		t.Fatal(err)
	}
	var rec tasks.Task
	if data, err := raw.Get(ctx, "custom:task:T1").Bytes(); err != nil || json.Unmarshal(recordOf(data), &rec) != nil || rec.StatusMessage != "hi" {
		t.Errorf("custom:task:T1 = %+v, %v; want the updated record", rec, err)
	}
	if at, err := raw.PExpireTime(ctx, "custom:task:T1").Result(); err != nil || at != time.Duration(created.Add(time.Hour).UnixMilli())*time.Millisecond {
		t.Errorf("custom:task:T1 expires at %v (%v), want %v: the update must keep the expiry", at, err, created.Add(time.Hour).UnixMilli())
	}
	if ttl, err := raw.PTTL(ctx, "custom:replica:r1").Result(); err != nil || ttl <= 0 || ttl > 3*time.Second {
		t.Errorf("custom:replica:r1 expires in %v (%v), want within the replica timeout", ttl, err)
	}
	for _, want := range []string{"T1", "T1"} { // created, then updated
		select {
		case m := <-sub.Channel():
			if m.Payload != want {
				t.Errorf("published %q, want %q", m.Payload, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("nothing published on custom:tasks")
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v, err := raw.Get(ctx, "custom:replica:r1").Result(); v != "stopped" || err != nil {
		t.Errorf("after Close the heartbeat key holds %q (%v), want stopped", v, err)
	}
	if ttl, err := raw.PTTL(ctx, "custom:replica:r1").Result(); err != nil || ttl <= 0 || ttl > 3*time.Second {
		t.Errorf("the stopped heartbeat key expires in %v (%v), want within the replica timeout", ttl, err)
	}
	if n, err := raw.Exists(ctx, "custom:task:T1").Result(); n != 1 || err != nil {
		t.Errorf("the task outlives Close: EXISTS = %d, %v; want 1", n, err)
	}
}

// Without a prefix the keys start with plughost:.
func TestDefaultPrefix(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s, err := redistore.New(redistore.Options{Address: srv.Socket, Replica: "r1", Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	raw := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket})
	defer raw.Close()
	if n, err := raw.Exists(context.Background(), "plughost:replica:r1").Result(); n != 1 || err != nil {
		t.Errorf("EXISTS plughost:replica:r1 = %d, %v; want 1", n, err)
	}
}

// A replica whose key is missing is dead only once it was missing on two
// looks ReplicaTimeout/3 apart or more, with none finding it between:
// neither Alive's own looks nor the store's looks again.
func TestAliveNeedsTwoLooks(t *testing.T) {
	t.Parallel()
	const timeout = 600 * time.Millisecond
	srv := redistest.Start(t)
	ctx := context.Background()
	raw := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket})
	defer raw.Close()
	s, err := redistore.New(redistore.Options{Address: srv.Socket, Replica: "peer", ReplicaTimeout: timeout, Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const key = "plughost:replica:ghost" // no store beats for ghost: the test sets and deletes its key
	// look asks Alive(ghost) and returns its answer with the time before
	// and after the call.
	look := func() (alive bool, before, after time.Time) {
		t.Helper()
		before = time.Now()
		alive, err := s.Alive(ctx, "ghost")
		if err != nil {
			t.Fatal(err)
		}
		return alive, before, time.Now()
	}
	// awaitDead looks until ghost is dead, failing the test if it is
	// before ReplicaTimeout/3 has passed since the first look (which
	// started at first).
	awaitDead := func(first time.Time) {
		t.Helper()
		deadline := first.Add(10 * time.Second)
		for {
			alive, _, after := look()
			if !alive {
				if after.Sub(first) < timeout/3 {
					t.Fatalf("ghost dead %v after its key was first missing, before ReplicaTimeout/3 (%v)", after.Sub(first), timeout/3)
				}
				return
			}
			if after.After(deadline) {
				t.Fatal("ghost, its key missing all along, is still alive after 10s")
			}
			<-time.After(10 * time.Millisecond) // the next look
		}
	}
	// awaitTime waits until d has passed since from: the rule is about time.
	awaitTime := func(from time.Time, d time.Duration) { <-time.After(time.Until(from.Add(d))) }

	if alive, first, _ := look(); !alive {
		t.Fatal("ghost is dead at the first look that misses its key")
	} else {
		awaitDead(first)
	}

	// A beat seen by Alive clears the first miss.
	raw.Set(ctx, key, "1", time.Minute)
	if alive, _, _ := look(); !alive {
		t.Fatal("ghost is dead with its key set")
	}
	raw.Del(ctx, key)
	alive, first, _ := look()
	if !alive {
		t.Fatal("ghost is dead at the first look missing its key since it beat again")
	}

	// A beat seen only by the store's looks again clears it too: the
	// store's EXISTS after the beat is the event to await.
	raw.Set(ctx, key, "1", time.Minute)
	looks := existsCalls(t, raw)
	for existsCalls(t, raw) == looks {
		<-time.After(10 * time.Millisecond) // the heartbeat looks every ReplicaTimeout/4
	}
	awaitTime(first, timeout/3)
	raw.Del(ctx, key)
	alive, first, _ = look()
	if !alive {
		t.Fatal("ghost is dead at a look missing its key, though the store found it back since the previous miss")
	}
	awaitDead(first)

	// A replica whose store closed is dead at once.
	raw.Set(ctx, key, "stopped", time.Minute)
	if alive, _, _ := look(); alive {
		t.Error("ghost, stopped, is alive")
	}
}

// existsCalls is how many EXISTS the server has run.
func existsCalls(t *testing.T, raw *redis.Client) int {
	t.Helper()
	info, err := raw.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(info, "cmdstat_exists:calls=")
	if !ok {
		return 0
	}
	n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
	return n
}

// A store beats again as soon as it reconnects, as after a server restart
// that lost the heartbeats: not a beat interval later.
func TestBeatOnReconnect(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	raw := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket})
	defer raw.Close()
	// Beats every 15 s: within the test, only a reconnection beats.
	s, err := redistore.New(redistore.Options{Address: srv.Socket, Replica: "r1", ReplicaTimeout: time.Minute, Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := raw.Del(ctx, "plughost:replica:r1").Err(); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"normal", "pubsub"} { // the restart: every connection drops
		if err := raw.ClientKillByFilter(ctx, "TYPE", kind, "SKIPME", "yes").Err(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for raw.Exists(ctx, "plughost:replica:r1").Val() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the store did not beat again within 10s of losing its connections")
		}
		<-time.After(10 * time.Millisecond) // polling: the key has no event
	}
}
