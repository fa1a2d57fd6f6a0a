package tasks

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Defaults of Options.
const (
	DefaultTTL            = time.Hour
	DefaultPollInterval   = 500 * time.Millisecond
	DefaultMaxRunning     = 256
	DefaultMaxResultBytes = 4 << 20
)

// codeInternal is JSON-RPC's Internal error, the code of every failure the
// Service itself records.
const codeInternal = -32603

// safetyPoll is how often a Service re-reads the tasks it runs (and Watch
// the tasks it watches): the store's change feed is best effort, so a
// lost notice delays a cancel or an answer by this much at most.
const safetyPoll = 3 * time.Second

// storeTimeout bounds a store operation no caller's context bounds (a
// progress write, a re-read on a notice, the failing of tasks on Close).
const storeTimeout = 10 * time.Second

// errUnchanged aborts an update that has nothing to change: no write, no
// notice.
var errUnchanged = errors.New("unchanged")

// Options configure a Service. Zero fields take the defaults.
type Options struct {
	// Store keeps the records; nil means NewMemory(MemoryOptions{}).
	Store Store
	// Replica names this process among the replicas sharing Store
	// (random when empty).
	Replica string
	// TTL is how long a task is kept after its creation (DefaultTTL).
	TTL time.Duration
	// PollInterval is the pollIntervalMs suggested to clients.
	PollInterval time.Duration
	// MaxRunning bounds the tasks this replica runs at once (from Create
	// to Run.Close); Create answers ErrTooMany beyond it.
	MaxRunning int
	// MaxResultBytes bounds a result (or an input request set) kept in a
	// task; a larger one fails the task, naming the size. It bounds the
	// client's answers to one round too (Service.Update).
	MaxResultBytes int
	// Logger logs the tasks failed for a stopped replica and the store's
	// failures nobody waits for; nil logs nothing.
	Logger hclog.Logger
}

// Service creates, runs and answers tasks on one replica.
//
// The Service follows the store's change feed (Store.Watch) for the tasks
// it runs: on a notice it re-reads the record, and closes the Run's
// Cancelled when the task ended elsewhere (tasks/cancel on any replica), or
// wakes the Run's WaitInput when input arrived. It re-reads them all every
// few seconds too, since the feed may lose a notice.
type Service struct {
	store      Store
	replica    string
	ttl, poll  time.Duration
	maxRunning int
	maxResult  int
	log        hclog.Logger
	quit       chan struct{} // closed by Close
	stopFeed   func()

	mu     sync.Mutex
	runs   map[string]*Run // the tasks run here, until Run.Close and their outcome written
	closed bool
	idle   chan struct{} // closed, then nil, when runs becomes empty while Drain waits
}

// New returns a Service over opts.Store. Close it.
func New(opts Options) *Service {
	s := &Service{store: opts.Store, replica: opts.Replica, ttl: opts.TTL, poll: opts.PollInterval,
		maxRunning: opts.MaxRunning, maxResult: opts.MaxResultBytes, log: opts.Logger,
		quit: make(chan struct{}), runs: map[string]*Run{}}
	if s.store == nil {
		s.store = NewMemory(MemoryOptions{})
	}
	if s.replica == "" {
		s.replica = "replica-" + strings.ToLower(rand.Text()[:8])
	}
	if s.ttl <= 0 {
		s.ttl = DefaultTTL
	}
	if s.poll <= 0 {
		s.poll = DefaultPollInterval
	}
	if s.maxRunning <= 0 {
		s.maxRunning = DefaultMaxRunning
	}
	if s.maxResult <= 0 {
		s.maxResult = DefaultMaxResultBytes
	}
	if s.log == nil {
		s.log = hclog.NewNullLogger()
	}
	s.stopFeed = s.store.Watch(s.check)
	go s.pollRuns()
	return s
}

// Replica is this replica's name.
func (s *Service) Replica() string { return s.replica }

// Create creates a task, run by this replica, for who's call of the
// exposed tool toolName, and returns it with the Run that drives it.
// ErrTooMany when MaxRunning tasks run already (or the store has no room).
// The task is durable when Create returns. Its ID is 128 random bits and
// more; only who may ask about it (the *As methods).
func (s *Service) Create(ctx context.Context, who Caller, toolName string) (*Task, *Run, error) {
	if who.Key == "" {
		return nil, nil, errors.New("a task needs its caller's key")
	}
	at := now()
	t := &Task{ID: rand.Text(), Status: Working, Created: at, Updated: at, TTL: s.ttl, PollInterval: s.poll,
		Owner: s.replica, Tool: toolName, Caller: who.Key}
	r := &Run{s: s, id: t.ID, expires: t.Created.Add(t.TTL), interval: s.poll / 2, cancelled: make(chan struct{}), wake: make(chan struct{}, 1)}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return nil, nil, errors.New("the task service is closed")
	case len(s.runs) >= s.maxRunning:
		s.mu.Unlock()
		return nil, nil, fmt.Errorf("%w: this replica runs %d tasks, its bound", ErrTooMany, s.maxRunning)
	}
	s.runs[t.ID] = r
	s.mu.Unlock()
	if err := s.store.Create(ctx, t); err != nil {
		s.release(t.ID)
		return nil, nil, err
	}
	// Only now may a re-read (the feed's, or pollRuns' for every Run in
	// s.runs) take a missing record for a task that ended: one made while
	// the record was on its way found nothing, and stopped a Run whose
	// task stayed working (seen in CI, under load).
	r.mu.Lock()
	r.created = true
	r.mu.Unlock()
	return t, r, nil
}

// GetAs returns the task for who (tasks/get): ErrNotFound, as for an
// unknown or expired ID, when it is not who's task (Caller.owns). A task
// not yet terminal whose owner no longer beats is failed first (-32603,
// naming the replica).
func (s *Service) GetAs(ctx context.Context, who Caller, id string) (*Task, error) {
	t, err := s.store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !who.owns(t) {
		return nil, notFound(id)
	}
	return s.settle(ctx, id, t)
}

// Get returns the task as the host sees it, whoever created it, failed
// first as GetAs does when its owner no longer beats. It is the host's
// own view (tests, tools of the operator): a client's request goes
// through GetAs.
func (s *Service) Get(ctx context.Context, id string) (*Task, error) {
	t, err := s.store.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.settle(ctx, id, t)
}

// notFound is the error of a task who may not see: the one of a task
// nobody knows.
func notFound(id string) error { return fmt.Errorf("%w: %s", ErrNotFound, id) }

// settle returns t, failed first when it is not terminal and its owner no
// longer beats.
func (s *Service) settle(ctx context.Context, id string, t *Task) (*Task, error) {
	if t.Status.Terminal() || t.Owner == s.replica {
		return t, nil
	}
	alive, err := s.store.Alive(ctx, t.Owner)
	if err != nil {
		s.log.Debug("cannot tell whether a task's replica is alive", "task", id, "replica", t.Owner, "error", err)
		return t, nil
	}
	if alive {
		return t, nil
	}
	msg := "the replica " + t.Owner + " running the task stopped"
	failed, err := s.store.Update(ctx, id, func(t *Task) error { fail(t, codeInternal, msg); return nil })
	if errors.Is(err, ErrTerminal) { // it ended meanwhile
		return s.store.Get(ctx, id)
	}
	if err == nil {
		s.log.Warn("task failed: its replica stopped", "task", id, "replica", t.Owner, "tool", t.Tool)
	}
	return failed, err
}

// UpdateAs delivers the client's responses (tasks/update's inputResponses, a
// JSON object key → result) to the task: responses to keys it has not
// asked, or asked and got already, are ignored; the answered keys leave
// InputRequests; once none is left the task is working again and its
// owner resumes it. A task that is not input_required ignores them.
// ErrNotFound for an unknown ID, or a task that is not who's; an error
// when responses is not a JSON object; one wrapping ErrTooLarge, naming
// the size and the bound, when the task's answers would pass
// MaxResultBytes (the task is left as it was).
func (s *Service) UpdateAs(ctx context.Context, who Caller, id string, responses json.RawMessage) error {
	got, ok := members(responses)
	if !ok || responses == nil {
		return errors.New("inputResponses must be a JSON object")
	}
	if err := s.mayChange(ctx, who, id); err != nil {
		return err
	}
	_, err := s.store.Update(ctx, id, func(t *Task) error {
		if !who.owns(t) {
			return notFound(id)
		}
		return answer(t, got, s.maxResult)
	})
	if errors.Is(err, errUnchanged) || errors.Is(err, ErrTerminal) {
		return nil
	}
	return err
}

// mayChange reads the task before who changes it: ErrNotFound when it is
// not who's. A store refuses to change a terminal task before the change
// sees the record (ErrTerminal, which tasks/update and tasks/cancel
// acknowledge): without this look, that answer would tell anyone that a
// finished task exists. The change checks again (the record may have
// been replaced meanwhile).
func (s *Service) mayChange(ctx context.Context, who Caller, id string) error {
	t, err := s.store.Get(ctx, id)
	switch {
	case err != nil:
		return err
	case !who.owns(t):
		return notFound(id)
	}
	return nil
}

// answer moves the responses to keys t waits for from t's InputRequests
// to its Answers; errUnchanged when none is such, ErrTooLarge when the
// answers would pass bound bytes.
func answer(t *Task, responses []member, bound int) error {
	if t.Status != InputRequired {
		return errUnchanged
	}
	asked, ok := members(t.InputRequests)
	answers, ok2 := members(t.Answers)
	if !ok || !ok2 {
		return fmt.Errorf("task %s: its record holds no JSON object", t.ID)
	}
	open := map[string]bool{}
	for _, m := range asked {
		open[m.key] = true
	}
	n := len(answers)
	for _, m := range responses {
		if open[m.key] {
			answers = append(answers, m)
			delete(open, m.key) // a key repeated in responses counts once
		}
	}
	if len(answers) == n {
		return errUnchanged
	}
	merged := object(answers)
	if len(merged) > bound {
		return fmt.Errorf("%w: the answers of task %s would be %d bytes, over the bound of %d", ErrTooLarge, t.ID, len(merged), bound)
	}
	var left []member
	for _, m := range asked {
		if open[m.key] {
			left = append(left, m)
		}
	}
	t.Answers, t.InputRequests, t.Updated = merged, object(left), now()
	if len(left) == 0 {
		t.Status, t.StatusMessage = Working, ""
	}
	return nil
}

// CancelAs cancels the task for who (tasks/cancel): it is cancelled at
// once and its owner stops the call. A terminal task is left as it is
// (nil error). ErrNotFound for an unknown ID, or a task that is not
// who's.
func (s *Service) CancelAs(ctx context.Context, who Caller, id string) error {
	if err := s.mayChange(ctx, who, id); err != nil {
		return err
	}
	_, err := s.store.Update(ctx, id, func(t *Task) error {
		if !who.owns(t) {
			return notFound(id)
		}
		end(t, Cancelled, "cancelled by the client")
		return nil
	})
	if errors.Is(err, ErrTerminal) {
		return nil
	}
	if r := s.run(id); err == nil && r != nil {
		r.ended() // at once when the owner is here; through the feed otherwise
	}
	return err
}

// Watch calls changed with the task each time one of ids changes (for
// notifications/tasks on subscriptions/listen), until stop is called: on
// the store's notices, and on a poll every few seconds that makes up for a
// lost one. Watch reads the tasks before it returns: their state then is
// the one changes are told from. A task is delivered only when what the
// client sees of it changed, terminal state included, after which its ID
// is dropped (as is an expired one's). A watched task whose owner stopped
// is failed (as Get does) and delivered so. Calls of changed do not
// overlap; one under way may finish after stop returns. It is the host's
// own view, whoever created the tasks: a client's listen goes through
// WatchAs.
func (s *Service) Watch(ids []string, changed func(*Task)) (stop func()) {
	return s.watch(nil, ids, changed)
}

// WatchAs is Watch for who (a listen's taskIds): a task that is not who's
// (Caller.owns, asked again on every delivery) is dropped as an unknown
// one is, never delivered.
func (s *Service) WatchAs(who Caller, ids []string, changed func(*Task)) (stop func()) {
	return s.watch(&who, ids, changed)
}

// watch is Watch for who; nil who watches as the host.
func (s *Service) watch(who *Caller, ids []string, changed func(*Task)) (stop func()) {
	w := &watch{s: s, who: who, changed: changed, ids: map[string]bool{}, seen: map[string]uint64{}, quit: make(chan struct{})}
	for _, id := range ids {
		w.ids[id] = true
	}
	stopFeed := s.store.Watch(func(id string) {
		if w.watching(id) {
			w.deliver(id)
		}
	})
	w.start(ids)
	go w.poll()
	var once sync.Once
	return func() {
		once.Do(func() {
			stopFeed()
			close(w.quit)
		})
	}
}

// Close fails the tasks this replica still runs ("the replica stopped"),
// writes the outcomes still pending (one try), closes their Cancelled and
// closes the store.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	runs := make([]*Run, 0, len(s.runs))
	for _, r := range s.runs {
		runs = append(runs, r)
	}
	s.mu.Unlock()
	close(s.quit)
	s.stopFeed()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	for _, r := range runs {
		r.claim(func(t *Task) { fail(t, codeInternal, "the replica "+s.replica+" stopped") })
		if err := r.land(ctx); err != nil {
			s.log.Warn("cannot write the outcome of a task as the replica stops", "task", r.id, "error", err)
		}
		r.stop()
	}
	return s.store.Close()
}

// run returns the Run of a task this replica runs, or nil.
func (s *Service) run(id string) *Run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[id]
}

// release frees the slot of a task among MaxRunning, and wakes Drain
// when it was the last.
func (s *Service) release(id string) {
	s.mu.Lock()
	delete(s.runs, id)
	if len(s.runs) == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
	s.mu.Unlock()
}

// check re-reads a task on a notice: a Run whose task ended elsewhere
// stops, one that waits for input looks again. Other tasks, Runs finished
// already and Runs whose Create has not written the task yet are ignored.
func (s *Service) check(id string) {
	r := s.run(id)
	if r == nil || !r.watched() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	t, err := s.store.Get(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound) || err == nil && t.Status.Terminal():
		r.ended()
	case err != nil:
		s.log.Debug("cannot re-read a task", "task", id, "error", err)
	default:
		r.poke()
	}
}

// pollRuns checks every task run here every safetyPoll, until Close, and
// tries again to write the outcomes the store failed to take: one after
// the other until one fails again (the store is still down: the others
// wait for the next round rather than for a timeout each).
func (s *Service) pollRuns() {
	tick := time.NewTicker(safetyPoll)
	defer tick.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		runs := make([]*Run, 0, len(s.runs))
		for _, r := range s.runs {
			runs = append(runs, r)
		}
		s.mu.Unlock()
		landing := true
		for _, r := range runs {
			switch {
			case !r.unwritten():
				s.check(r.id)
			case landing:
				ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
				if err := r.land(ctx); err != nil && r.unwritten() {
					s.log.Debug("cannot write a task's outcome yet", "task", r.id, "error", err)
					landing = false
				}
				cancel()
			}
		}
	}
}

// watch is one Service.Watch.
type watch struct {
	s       *Service
	who     *Caller // nil: the host, who sees every task
	changed func(*Task)
	quit    chan struct{}

	// delivering serializes deliveries, each from its read on: a slow read
	// never delivers an older state after a newer one.
	delivering sync.Mutex
	seen       map[string]uint64 // ID → hash of what was last delivered (or read at the start)

	mu  sync.Mutex // guards ids, which the feed's filter reads
	ids map[string]bool
}

func (w *watch) watching(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ids[id]
}

// deliver re-reads the task and delivers it if what the client sees of it
// changed.
func (w *watch) deliver(id string) {
	w.delivering.Lock()
	defer w.delivering.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	t, err := w.get(ctx, id)
	select {
	case <-w.quit:
		return
	default:
	}
	switch {
	case errors.Is(err, ErrNotFound):
		w.drop(id)
		return
	case err != nil || !w.watching(id):
		return
	}
	sum := fingerprint(t)
	if w.seen[id] == sum {
		return
	}
	w.seen[id] = sum
	if t.Status.Terminal() {
		w.drop(id)
	}
	w.changed(t)
}

// get reads the task as the watch's caller may.
func (w *watch) get(ctx context.Context, id string) (*Task, error) {
	if w.who == nil {
		return w.s.Get(ctx, id)
	}
	return w.s.GetAs(ctx, *w.who, id)
}

func (w *watch) drop(id string) {
	w.mu.Lock()
	delete(w.ids, id)
	w.mu.Unlock()
}

// start notes what each task looks like as the watch starts.
func (w *watch) start(ids []string) {
	w.delivering.Lock()
	defer w.delivering.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	for _, id := range ids {
		t, err := w.s.store.Get(ctx, id)
		switch {
		case err == nil && w.who != nil && !w.who.owns(t):
			w.drop(id) // another's: as if unknown
		case err == nil:
			w.seen[id] = fingerprint(t)
		}
	}
}

// poll delivers what changed every safetyPoll.
func (w *watch) poll() {
	tick := time.NewTicker(safetyPoll)
	defer tick.Stop()
	for {
		select {
		case <-w.quit:
			return
		case <-w.s.quit:
			return
		case <-tick.C:
		}
		for _, id := range w.watchedIDs() {
			w.deliver(id)
		}
	}
}

func (w *watch) watchedIDs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := make([]string, 0, len(w.ids))
	for id := range w.ids {
		ids = append(ids, id)
	}
	return ids
}

// fingerprint hashes what the client sees of t.
func fingerprint(t *Task) uint64 {
	h := fnv.New64a()
	h.Write(t.AppendWire(nil, true))
	return h.Sum64()
}
