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

// Defaults of MemoryOptions.
const (
	DefaultMaxTasks = 10000
	DefaultMaxBytes = 256 << 20
)

// MemoryOptions configure NewMemory. Zero fields take the defaults.
type MemoryOptions struct {
	// MaxTasks bounds the tasks kept, expired ones aside
	// (DefaultMaxTasks). A store holding that many makes room for a new
	// task by forgetting the oldest terminal one; when none is terminal,
	// Create answers an error wrapping ErrTooMany.
	MaxTasks int
	// MaxBytes bounds the payloads the tasks kept hold, expired ones
	// aside (DefaultMaxBytes): their results, input requests, answers,
	// request states and the keys they asked. (The rest of a record is
	// small: its messages are at most 1 KiB each when a Run writes them.)
	// A Create or an Update that would pass it makes room by forgetting
	// the oldest terminal tasks; when that is not enough, Create answers
	// an error wrapping ErrTooMany, Update one wrapping ErrTooLarge, both
	// naming the budget, and nothing changes. An update that does not
	// grow a task's payload always fits: a task can always be failed or
	// cancelled (which drop it all but the keys asked).
	MaxBytes int
}

// sweepEvery is how often a write looks for expired tasks to drop: Get and
// Update never answer one, whether dropped or not, so the sweep only
// bounds the memory they hold.
const sweepEvery = time.Minute

// Memory is the Store of a single plughost: the records live in this
// process, and die with it (as do the calls that run the tasks).
type Memory struct {
	max      int
	maxBytes int
	hub      fanout.Hub

	mu        sync.Mutex
	tasks     map[string]*Task
	bytes     int             // the sum of the tasks' payloads
	owners    map[string]bool // the replicas that created a task here
	nextSweep time.Time
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty store in process.
func NewMemory(opts MemoryOptions) *Memory {
	if opts.MaxTasks <= 0 {
		opts.MaxTasks = DefaultMaxTasks
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	return &Memory{max: opts.MaxTasks, maxBytes: opts.MaxBytes, tasks: map[string]*Task{}, owners: map[string]bool{}}
}

// Create stores a copy of t.
func (m *Memory) Create(_ context.Context, t *Task) error {
	size := payload(t)
	m.mu.Lock()
	if _, dup := m.tasks[t.ID]; dup {
		m.mu.Unlock()
		return fmt.Errorf("task %s exists already", t.ID)
	}
	if !m.room(true, size) {
		err := fmt.Errorf("%w: no room for a task of %d bytes: the store holds %d tasks (its bound is %d) and %d bytes (its budget of %d bytes), and forgetting its finished tasks would not make enough",
			ErrTooMany, size, len(m.tasks), m.max, m.bytes, m.maxBytes)
		m.mu.Unlock()
		return err
	}
	m.tasks[t.ID] = t.clone()
	m.bytes += size
	m.owners[t.Owner] = true
	m.mu.Unlock()
	m.hub.Notify(t.ID)
	return nil
}

// room makes room for more bytes, and with task for one more task, within
// the bounds: it drops the expired tasks (also every sweepEvery whatever
// the need), then the terminal ones, oldest first. It reports whether
// there is room; when forgetting every terminal task would not make
// enough, it forgets none.
func (m *Memory) room(task bool, more int) bool {
	over := func() bool { return task && len(m.tasks) >= m.max || m.bytes+more > m.maxBytes }
	now := time.Now()
	if !now.Before(m.nextSweep) || over() {
		for id, t := range m.tasks {
			if expired(t, now) {
				m.drop(id)
			}
		}
		m.nextSweep = now.Add(sweepEvery)
	}
	if !over() {
		return true
	}
	var done []*Task
	freed := 0
	for _, t := range m.tasks {
		if t.Status.Terminal() {
			done = append(done, t)
			freed += payload(t)
		}
	}
	if task && len(m.tasks)-len(done) >= m.max || m.bytes-freed+more > m.maxBytes {
		return false
	}
	slices.SortFunc(done, func(a, b *Task) int { return a.Created.Compare(b.Created) })
	for _, t := range done {
		if !over() {
			break
		}
		m.drop(t.ID)
	}
	return true
}

// drop forgets a task.
func (m *Memory) drop(id string) {
	if t, ok := m.tasks[id]; ok {
		m.bytes -= payload(t)
		delete(m.tasks, id)
	}
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
		m.drop(id)
		ok = false
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return t, nil
}

// Update applies change to a copy of the task, and keeps the copy when
// change succeeds and the copy fits in the budget.
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
	grow := payload(next) - payload(t)
	if grow > 0 && !m.room(false, grow) {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: task %s would hold %d bytes more: the store holds %d bytes (its budget of %d bytes), and forgetting its finished tasks would not make enough", ErrTooLarge, id, grow, m.bytes, m.maxBytes)
	}
	if m.tasks[id] != t { // it expired as room was made
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	m.bytes += grow
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

// payload is the size of what a task holds that may be large: what
// MemoryOptions.MaxBytes bounds.
func payload(t *Task) int {
	n := len(t.Result) + len(t.InputRequests) + len(t.Answers) + len(t.State)
	for _, k := range t.Asked {
		n += len(k)
	}
	return n
}

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
