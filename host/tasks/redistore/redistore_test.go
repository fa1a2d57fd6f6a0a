package redistore_test

import (
	"context"
	"encoding/json"
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
			s, err := redistore.New(redistore.Options{Address: addr, Replica: "a"})
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
// expiring ReplicaTimeout after a beat and deleted on Close, and the IDs
// published on <prefix>tasks.
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
	s, err := redistore.New(redistore.Options{Address: srv.Socket, KeyPrefix: "custom:", Replica: "r1", ReplicaTimeout: 3 * time.Second})
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
	if data, err := raw.Get(ctx, "custom:task:T1").Bytes(); err != nil || json.Unmarshal(data, &rec) != nil || rec.StatusMessage != "hi" {
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
	if n, err := raw.Exists(ctx, "custom:replica:r1").Result(); n != 0 || err != nil {
		t.Errorf("the heartbeat key outlives Close (%d, %v)", n, err)
	}
	if n, err := raw.Exists(ctx, "custom:task:T1").Result(); n != 1 || err != nil {
		t.Errorf("the task outlives Close: EXISTS = %d, %v; want 1", n, err)
	}
}

// Without a prefix the keys start with plughost:.
func TestDefaultPrefix(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	s, err := redistore.New(redistore.Options{Address: srv.Socket, Replica: "r1"})
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
