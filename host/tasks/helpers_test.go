package tasks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/host/tasks/redistore"
	"github.com/plughost/plughost/internal/redistest"
)

// replicaTimeout is the redis stores' in these tests: a replica that stops
// beating is dead this long after.
const replicaTimeout = time.Second

// waitFor bounds every wait for an event in these tests.
const waitFor = 10 * time.Second

// backend makes stores of one kind for the suite every kind runs.
type backend struct {
	name string
	// open returns one store per replica named, all sharing their tasks,
	// closed when the test ends. A memory store is one process: its
	// replicas share one store.
	open func(t *testing.T, replicas ...string) []tasks.Store
}

var backends = []backend{
	{"memory", func(t *testing.T, replicas ...string) []tasks.Store {
		m := tasks.NewMemory(tasks.MemoryOptions{})
		t.Cleanup(func() { m.Close() })
		stores := make([]tasks.Store, len(replicas))
		for i := range stores {
			stores[i] = m
		}
		return stores
	}},
	{"redis", func(t *testing.T, replicas ...string) []tasks.Store {
		srv := redistest.Start(t)
		stores := make([]tasks.Store, len(replicas))
		for i, r := range replicas {
			stores[i] = openRedis(t, srv.Socket, r)
		}
		return stores
	}},
}

// openRedis opens a redis store at address for replica, closed when the
// test ends.
func openRedis(t *testing.T, address, replica string) tasks.Store {
	t.Helper()
	s, err := redistore.New(redistore.Options{Address: address, Replica: replica, ReplicaTimeout: replicaTimeout, Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// forEach runs test on every backend, in parallel.
func forEach(t *testing.T, test func(t *testing.T, b backend)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			test(t, b)
		})
	}
}

// eventually polls cond until it holds, failing the test after waitFor:
// for what has no event to await (a heartbeat expiring, a TTL lapsing).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, waitFor)
		}
		time.Sleep(20 * time.Millisecond) // polling: no event tells
	}
}

// closed waits for c to close.
func closed(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(waitFor):
		t.Fatalf("%s: not within %v", what, waitFor)
	}
}

// mustGet reads a task from store.
func mustGet(t *testing.T, s tasks.Store, id string) *tasks.Task {
	t.Helper()
	task, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return task
}

// isNotFound fails the test unless err wraps ErrNotFound.
func isNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("%s = %v, want ErrNotFound", what, err)
	}
}

// tester is the caller of the tasks these tests create.
var tester = tasks.Caller{Key: "tester"}

// testSecret is the replicas' shared secret of the redis stores: it seals
// their records.
var testSecret = []byte("0123456789abcdef0123456789abcdef")
