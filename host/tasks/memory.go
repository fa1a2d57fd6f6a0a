package tasks

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/plughost/plughost/host/tasks/internal/fanout"
)

// DefaultMaxTasks is how many tasks a memory store keeps by default.
const DefaultMaxTasks = 10000

// MemoryOptions configure NewMemory. Zero fields take the defaults.
type MemoryOptions struct {
	// MaxTasks bounds the tasks kept, expired ones aside
	// (DefaultMaxTasks). A store holding that many makes room for a new
	// task by forgetting the oldest terminal one; when none is terminal,
	// Create answers an error wrapping ErrTooMany.
	MaxTasks int
}

// sweepEvery is how often Create looks for expired tasks to drop: Get and
// Update never answer one, whether dropped or not, so the sweep only
// bounds the memory they hold.
const sweepEvery = time.Minute

// Memory is the Store of a single plughost: the records live in this
// process, and die with it (as do the calls that run the tasks).
type Memory struct {
	max int
	hub fanout.Hub

	mu        sync.Mutex
	tasks     map[string]*Task
	owners    map[string]bool // the replicas that created a task here
	nextSweep time.Time
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty store in process.
func NewMemory(opts MemoryOptions) *Memory {
	if opts.MaxTasks <= 0 {
		opts.MaxTasks = DefaultMaxTasks
	}
	return &Memory{max: opts.MaxTasks, tasks: map[string]*Task{}, owners: map[string]bool{}}
}

// Create stores a copy of t.
func (m *Memory) Create(_ context.Context, t *Task) error {
	m.mu.Lock()
	now := time.Now()
	if now.After(m.nextSweep) || len(m.tasks) >= m.max {
		m.sweep(now)
	}
	if len(m.tasks) >= m.max && !m.evict() {
		m.mu.Unlock()
		return fmt.Errorf("%w: the store holds %d tasks, none finished", ErrTooMany, m.max)
	}
	if _, dup := m.tasks[t.ID]; dup {
		m.mu.Unlock()
		return fmt.Errorf("task %s exists already", t.ID)
	}
	m.tasks[t.ID] = t.clone()
	m.owners[t.Owner] = true
	m.mu.Unlock()
	m.hub.Notify(t.ID)
	return nil
}

// sweep drops the expired tasks.
func (m *Memory) sweep(now time.Time) {
	for id, t := range m.tasks {
		if expired(t, now) {
			delete(m.tasks, id)
		}
	}
	m.nextSweep = now.Add(sweepEvery)
}

// evict drops the terminal task created first, reporting whether there
// was one.
func (m *Memory) evict() bool {
	var oldest *Task
	for _, t := range m.tasks {
		if t.Status.Terminal() && (oldest == nil || t.Created.Before(oldest.Created)) {
			oldest = t
		}
	}
	if oldest == nil {
		return false
	}
	delete(m.tasks, oldest.ID)
	return true
}

// Get returns a copy of the task.
func (m *Memory) Get(_ context.Context, id string) (*Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.live(id)
	if err != nil {
		return nil, err
	}
	return t.clone(), nil
}

// live returns the stored task, dropping it when expired.
func (m *Memory) live(id string) (*Task, error) {
	t, ok := m.tasks[id]
	if ok && expired(t, time.Now()) {
		delete(m.tasks, id)
		ok = false
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return t, nil
}

// Update applies change to a copy of the task, and keeps the copy when
// change succeeds.
func (m *Memory) Update(_ context.Context, id string, change func(*Task) error) (*Task, error) {
	m.mu.Lock()
	t, err := m.live(id)
	if err == nil && t.Status.Terminal() {
		err = fmt.Errorf("%w: %s is %s", ErrTerminal, id, t.Status)
	}
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	next := t.clone()
	if err := change(next); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	next.ID = id
	m.tasks[id] = next
	out := next.clone()
	m.mu.Unlock()
	m.hub.Notify(id)
	return out, nil
}

// Watch calls changed with the ID of every task created or updated.
func (m *Memory) Watch(changed func(id string)) (stop func()) { return m.hub.Watch(changed) }

// Alive reports whether replica created a task in this store.
func (m *Memory) Alive(_ context.Context, replica string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owners[replica], nil
}

// Close stops the watchers. The records stay readable.
func (m *Memory) Close() error {
	m.hub.Close()
	return nil
}

func expired(t *Task, now time.Time) bool { return !now.Before(t.Created.Add(t.TTL)) }

// clone returns a deep copy of t: a store never shares a record's slices
// with a caller.
func (t *Task) clone() *Task {
	c := *t
	c.InputRequests = bytes.Clone(t.InputRequests)
	c.Answers = bytes.Clone(t.Answers)
	c.Asked = slices.Clone(t.Asked)
	c.Result = bytes.Clone(t.Result)
	c.Error = bytes.Clone(t.Error)
	return &c
}
