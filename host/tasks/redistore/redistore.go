// Package redistore keeps task records in Redis, for plughost replicas
// behind a load balancer: any replica answers tasks/get, tasks/update and
// tasks/cancel for a task another one runs.
//
// The keys, under Options.KeyPrefix ("plughost:" by default):
//
//	plughost:task:<id>        the task's record (JSON, sealed: seal.go), expiring at its Created+TTL
//	plughost:replica:<name>   a replica's heartbeat, "1", expiring ReplicaTimeout after its last
//	                          beat; "stopped" for ReplicaTimeout once its store closed
//	plughost:tasks            the channel announcing the ID of each task created or updated
//
// An update reads the record, changes it and writes it back in one
// optimistic transaction (WATCH, MULTI, EXEC), retried when another writer
// got there first, so two replicas updating one task never lose a change;
// the write publishes the ID in the same transaction. Each store follows
// the channel with one subscription (go-redis subscribes again after a
// reconnection; a notice missed meanwhile is made up by the Service's
// polling) and hands the IDs to its watchers.
//
// A store beats for its replica every ReplicaTimeout/4, again at once on
// every new connection (after the server restarted, say), and every
// ReplicaTimeout/20 while beats fail; on Close it marks its heartbeat
// "stopped", so its peers see it gone at once.
//
// A missing heartbeat is not enough to call a replica dead: a server that
// restarts without its data, or stalls past ReplicaTimeout (every key
// expires as it wakes), would have every replica fail every peer's tasks.
// A store calls a replica dead when its key is missing on two looks at
// least ReplicaTimeout/3 apart with none finding it between: its own
// beats come every ReplicaTimeout/4, so a replica alive sets its key
// again before the second look. A replica that dies silently is so seen
// dead at the first look ReplicaTimeout/3 after one that found its key
// expired: ReplicaTimeout×4/3 after its death at most, when its peers
// are asked about its tasks all along.
package redistore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"

	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/host/tasks/internal/fanout"
)

// Defaults of Options.
const (
	DefaultKeyPrefix      = "plughost:"
	DefaultReplicaTimeout = 5 * time.Second
)

// connectTimeout bounds New's first exchange with the server.
const connectTimeout = 5 * time.Second

// The values of a heartbeat key.
const (
	beating = "1"
	stopped = "stopped"
)

// forgetMissing is how long a store looks again at a replica whose key it
// found missing: a peer asks about a dead replica's tasks for as long as a
// client polls them, an hour being far beyond any poll interval; a look
// after that starts over (the verdict then takes ReplicaTimeout/3 more).
const forgetMissing = time.Hour

// maxAttempts bounds the retries of an update losing its race: each loss
// is another writer's success, so this many in a row means a storm.
const maxAttempts = 50

// Options configure a Store. Zero fields take the defaults.
type Options struct {
	// Address is the server's "host:port", or the path of its unix
	// socket (starting with /).
	Address  string
	Username string
	Password string
	DB       int
	// KeyPrefix starts every key and the channel (DefaultKeyPrefix).
	KeyPrefix string
	// ReplicaTimeout is how long a replica may stay silent before it is
	// dead (DefaultReplicaTimeout).
	ReplicaTimeout time.Duration
	// Replica is the replica this store beats for; "" for none (a store
	// that only reads).
	Replica string
	// Secret is the secret every replica shares (serve gives the state
	// key): each record is sealed with a MAC under a key derived from it
	// (seal.go). Required, at least MinSecret bytes.
	Secret []byte
	// Logger logs the records refused for failing their MAC; nil logs
	// nothing.
	Logger hclog.Logger
}

// Store is a tasks.Store on Redis.
type Store struct {
	client  *redis.Client
	pubsub  *redis.PubSub
	prefix  string
	channel string
	timeout time.Duration
	replica string
	key     []byte // the MAC key of the records (seal.go)
	log     hclog.Logger
	hub     fanout.Hub
	quit    chan struct{} // closed by Close: the heartbeat and the feed stop
	done    sync.WaitGroup
	once    sync.Once

	// reasserting guards stopping: a beat on a new connection never lands
	// after Close marked the replica stopped.
	reasserting sync.RWMutex
	stopping    bool

	mu      sync.Mutex
	missing map[string]time.Time // replica → when its key was first found missing, and at every look since
}

var _ tasks.Store = (*Store)(nil)

// New connects to the server, subscribes to the channel and beats once for
// opts.Replica; an error naming the address when the server does not
// answer within a few seconds, one naming the secret's length when it is
// too short.
func New(opts Options) (*Store, error) {
	key, err := recordKey(opts.Secret)
	if err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = DefaultKeyPrefix
	}
	if opts.ReplicaTimeout <= 0 {
		opts.ReplicaTimeout = DefaultReplicaTimeout
	}
	network := "tcp"
	if strings.HasPrefix(opts.Address, "/") {
		network = "unix"
	}
	s := &Store{prefix: opts.KeyPrefix, channel: opts.KeyPrefix + "tasks", timeout: opts.ReplicaTimeout,
		replica: opts.Replica, key: key, log: opts.Logger, quit: make(chan struct{}), missing: map[string]time.Time{}}
	ro := &redis.Options{Network: network, Addr: opts.Address, Username: opts.Username, Password: opts.Password,
		DB: opts.DB, DialTimeout: connectTimeout, DisableIdentity: true,
		// The contexts bound every exchange: a beat on a server that
		// stalls gives up in time to be tried again.
		ContextTimeoutEnabled: true}
	if s.replica != "" {
		ro.OnConnect = s.reassert
	}
	client := redis.NewClient(ro)
	s.client = client
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		client.Close()
		return nil, fmt.Errorf("redis at %s: %w", opts.Address, err)
	}
	s.pubsub = client.Subscribe(ctx, s.channel)
	if _, err := s.pubsub.Receive(ctx); err != nil { // the subscription is active once confirmed
		s.pubsub.Close()
		client.Close()
		return nil, fmt.Errorf("redis at %s: subscribing to %s: %w", opts.Address, s.channel, err)
	}
	if s.replica != "" {
		if err := s.beat(ctx); err != nil {
			s.pubsub.Close()
			client.Close()
			return nil, fmt.Errorf("redis at %s: %w", opts.Address, err)
		}
	}
	s.done.Add(2)
	go s.heartbeat()
	go s.feed()
	return s, nil
}

func (s *Store) taskKey(id string) string         { return s.prefix + "task:" + id }
func (s *Store) replicaKey(replica string) string { return s.prefix + "replica:" + replica }

// Create stores t, expiring at t.Created+t.TTL, and announces it.
func (s *Store) Create(ctx context.Context, t *tasks.Task) error {
	data, err := json.Marshal(t)
	if err != nil {
		return err
	}
	var set *redis.StatusCmd
	_, err = s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		set = p.SetArgs(ctx, s.taskKey(t.ID), s.seal(t.ID, data), redis.SetArgs{Mode: "NX", ExpireAt: t.Created.Add(t.TTL)})
		p.Publish(ctx, s.channel, t.ID)
		return nil
	})
	switch {
	case errors.Is(set.Err(), redis.Nil):
		return fmt.Errorf("task %s exists already", t.ID)
	case err != nil:
		return fmt.Errorf("redis: creating task %s: %w", t.ID, err)
	}
	return nil
}

// Get reads the task.
func (s *Store) Get(ctx context.Context, id string) (*tasks.Task, error) {
	data, err := s.client.Get(ctx, s.taskKey(id)).Bytes()
	if err != nil {
		return nil, s.readErr(id, err)
	}
	return s.decode(id, data)
}

// Update changes the task in an optimistic transaction, retried when
// another writer changed it meanwhile; the change keeps the record's
// expiry and is announced.
func (s *Store) Update(ctx context.Context, id string, change func(*tasks.Task) error) (*tasks.Task, error) {
	key := s.taskKey(id)
	var out *tasks.Task
	update := func(tx *redis.Tx) error {
		data, err := tx.Get(ctx, key).Bytes()
		if err != nil {
			return s.readErr(id, err)
		}
		t, err := s.decode(id, data)
		if err != nil {
			return err
		}
		if t.Status.Terminal() {
			return fmt.Errorf("%w: %s is %s", tasks.ErrTerminal, id, t.Status)
		}
		if err := change(t); err != nil {
			return err
		}
		t.ID = id
		if data, err = json.Marshal(t); err != nil {
			return err
		}
		var set *redis.StatusCmd
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			// XX: a record that expired meanwhile is not made again (KEEPTTL
			// would make it immortal).
			set = p.SetArgs(ctx, key, s.seal(id, data), redis.SetArgs{Mode: "XX", KeepTTL: true})
			p.Publish(ctx, s.channel, id)
			return nil
		})
		switch {
		case errors.Is(set.Err(), redis.Nil):
			return fmt.Errorf("%w: %s", tasks.ErrNotFound, id)
		case err == nil:
			out = t
		}
		return err
	}
	for range maxAttempts {
		err := s.client.Watch(ctx, update, key)
		if !errors.Is(err, redis.TxFailedErr) {
			return out, err
		}
	}
	return nil, fmt.Errorf("redis: task %s: %d updates in a row lost to concurrent ones", id, maxAttempts)
}

// readErr turns a missing key into ErrNotFound and names other errors.
func (s *Store) readErr(id string, err error) error {
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("%w: %s", tasks.ErrNotFound, id)
	}
	return fmt.Errorf("redis: reading task %s: %w", id, err)
}

// decode opens the sealed value of task id and decodes its record. A
// value that fails its MAC is refused as no record (ErrNotFound), logged:
// nobody is served what the replicas did not write.
func (s *Store) decode(id string, value []byte) (*tasks.Task, error) {
	data, err := s.open(id, value)
	if err != nil {
		s.log.Error("refused a task record in redis", "task", id, "key", s.taskKey(id), "why", err)
		return nil, fmt.Errorf("%w: %s: %w", tasks.ErrNotFound, id, err)
	}
	var t tasks.Task
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("redis: task %s: a broken record: %w", id, err)
	}
	if t.ID != id {
		return nil, fmt.Errorf("redis: task %s: its record names task %q", id, t.ID)
	}
	return &t, nil
}

// Watch calls changed with the ID of every task created or updated by any
// replica.
func (s *Store) Watch(changed func(id string)) (stop func()) { return s.hub.Watch(changed) }

// feed hands the channel's messages to the watchers until Close.
func (s *Store) feed() {
	defer s.done.Done()
	msgs := s.pubsub.Channel()
	for {
		select {
		case <-s.quit:
			return
		case m, ok := <-msgs:
			if !ok {
				return
			}
			s.hub.Notify(m.Payload)
		}
	}
}

// Alive reports whether the replica still beats. It is false when the
// replica's store closed, or when its key is missing now and was missing
// at a look ReplicaTimeout/3 ago or more, no look having found it since
// (Alive's own, and the heartbeat's looks again at the replicas found
// missing).
func (s *Store) Alive(ctx context.Context, replica string) (bool, error) {
	v, err := s.client.Get(ctx, s.replicaKey(replica)).Result()
	switch {
	case err == nil:
		s.found(replica)
		return v != stopped, nil
	case !errors.Is(err, redis.Nil):
		return false, fmt.Errorf("redis: replica %s: %w", replica, err)
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	first, ok := s.missing[replica]
	if !ok {
		s.missing[replica] = now
		return true, nil
	}
	return now.Sub(first) < s.timeout/3, nil
}

// found forgets that the replica's key was missing: it is back.
func (s *Store) found(replica string) {
	s.mu.Lock()
	delete(s.missing, replica)
	s.mu.Unlock()
}

// lookAgain looks at the keys of the replicas found missing, forgetting
// those back (and those missing for forgetMissing): a replica whose key
// was lost and set again meanwhile is not dead at a later loss.
func (s *Store) lookAgain(ctx context.Context) {
	now := time.Now()
	s.mu.Lock()
	replicas := make([]string, 0, len(s.missing))
	for r, first := range s.missing {
		if now.Sub(first) > forgetMissing {
			delete(s.missing, r)
			continue
		}
		replicas = append(replicas, r)
	}
	s.mu.Unlock()
	if len(replicas) == 0 {
		return
	}
	exists := make([]*redis.IntCmd, len(replicas))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range replicas {
			exists[i] = p.Exists(ctx, s.replicaKey(r))
		}
		return nil
	})
	if err != nil {
		return // no look: the next tick tries again
	}
	for i, r := range replicas {
		if exists[i].Val() == 1 {
			s.found(r)
		}
	}
}

// beat sets the replica's heartbeat key for another ReplicaTimeout.
func (s *Store) beat(ctx context.Context) error {
	if err := s.client.Set(ctx, s.replicaKey(s.replica), beating, s.timeout).Err(); err != nil {
		return fmt.Errorf("beating for replica %s: %w", s.replica, err)
	}
	return nil
}

// reassert beats on a new connection (go-redis's OnConnect), before it
// serves anything: after a reconnection, to a server that restarted
// without its data say, the replica is alive again at once, not a beat
// later. It never fails the connection: a beat that fails is the
// heartbeat's to try again.
func (s *Store) reassert(ctx context.Context, cn *redis.Conn) error {
	s.reasserting.RLock()
	defer s.reasserting.RUnlock()
	if s.stopping {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout/4)
	defer cancel()
	_ = cn.Set(ctx, s.replicaKey(s.replica), beating, s.timeout).Err()
	return nil
}

// heartbeat beats every ReplicaTimeout/4 until Close, every
// ReplicaTimeout/20 after a beat failed, and looks again at the replicas
// found missing each time.
func (s *Store) heartbeat() {
	defer s.done.Done()
	every, retry := s.timeout/4, s.timeout/20
	timer := time.NewTimer(every)
	defer timer.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-timer.C:
		}
		next := every
		ctx, cancel := context.WithTimeout(context.Background(), every)
		if s.replica != "" && s.beat(ctx) != nil {
			next = retry
		}
		s.lookAgain(ctx)
		cancel()
		timer.Reset(next)
	}
}

// Close stops the heartbeat and marks its key stopped, stops the watchers
// and closes the connections.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		close(s.quit)
		s.done.Wait()
		s.reasserting.Lock()
		s.stopping = true
		s.reasserting.Unlock()
		s.hub.Close()
		if s.replica != "" {
			ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
			err = s.client.Set(ctx, s.replicaKey(s.replica), stopped, s.timeout).Err()
			cancel()
		}
		err = errors.Join(err, s.pubsub.Close(), s.client.Close())
	})
	return err
}

// LogTo sends the log lines of go-redis, the client under every Store
// (failed dials, mostly), to log at WARN rather than to the standard
// logger. It is process-wide, as go-redis's logger is.
func LogTo(log hclog.Logger) { redis.SetLogger(redisLog{log}) }

type redisLog struct{ log hclog.Logger }

func (l redisLog) Printf(_ context.Context, format string, v ...any) {
	l.log.Warn(fmt.Sprintf(format, v...))
}
