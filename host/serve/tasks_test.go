package serve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/internal/redistest"
)

// redisSecret is the test server's password, easy to spot in a message.
const redisSecret = "r3d1s-do-not-print"

// testStateKey is the replicas' shared state key in these tests: it seals
// the task records in redis.
var testStateKey = []byte("0123456789abcdef0123456789abcdef")

// testCaller creates the tasks of these tests.
var testCaller = tasks.Caller{Key: "test"}

// Without a redis block, tasks stay in this process, with the block's
// settings; each service is a replica of its own name, logged.
func TestTaskServiceMemory(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	cfg := config.Tasks{TTL: 2 * time.Minute, PollInterval: time.Second, MaxRunning: 1}
	svc, err := taskService(cfg, nil, func(string) string { return "" }, log)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	task, run, err := svc.Create(context.Background(), testCaller, "echo")
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if task.TTL != cfg.TTL || task.PollInterval != cfg.PollInterval {
		t.Errorf("task TTL %v, poll interval %v; want the block's %v, %v", task.TTL, task.PollInterval, cfg.TTL, cfg.PollInterval)
	}
	if _, _, err := svc.Create(context.Background(), testCaller, "echo"); !errors.Is(err, tasks.ErrTooMany) {
		t.Errorf("a second task with max_running = 1: %v, want ErrTooMany", err)
	}
	host, _ := os.Hostname()
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(host) + `-[0-9a-f]{6}$`).MatchString(svc.Replica()) {
		t.Errorf("replica %q is not the host name %q and six hex digits", svc.Replica(), host)
	}
	other, err := taskService(cfg, nil, func(string) string { return "" }, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if other.Replica() == svc.Replica() {
		t.Errorf("two services share the replica name %s", svc.Replica())
	}
	for _, w := range []string{"[INFO]", "in this process", svc.Replica()} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("log %q does not say %q", logs.String(), w)
		}
	}
}

// The memory store holds 4×max_running tasks when that is more than its
// default bound: max_running never meets the store's bound first.
func TestTaskServiceMemoryHoldsMaxRunning(t *testing.T) {
	t.Parallel()
	const maxRunning = 3000 // 4× is over tasks.DefaultMaxTasks
	store, _, err := taskStore(config.Tasks{MaxRunning: maxRunning}, "r", nil, func(string) string { return "" }, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	at := time.Now()
	for i := range 4*maxRunning + 1 {
		err := store.Create(ctx, &tasks.Task{ID: strconv.Itoa(i), Status: tasks.Working, Created: at, Updated: at, TTL: time.Hour, Owner: "r"})
		switch {
		case i < 4*maxRunning && err != nil:
			t.Fatalf("task %d of a store for max_running = %d: %v", i+1, maxRunning, err)
		case i == 4*maxRunning && !errors.Is(err, tasks.ErrTooMany):
			t.Errorf("task %d, beyond 4×max_running: %v, want ErrTooMany", i+1, err)
		}
	}
}

// With a redis block, replicas share their tasks through it, logging in
// with the password from the environment (which wins), the block's file,
// or the file the environment names.
func TestTaskServiceRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--requirepass", redisSecret)
	good := writeKey(t, redisSecret+"\n", 0o600)
	wrong := writeKey(t, "not-the-password", 0o600)
	var owner *tasks.Service
	for name, c := range map[string]struct {
		file string
		env  map[string]string
	}{
		"env wins over the file":             {file: wrong, env: map[string]string{envRedisPassword: redisSecret, envRedisPasswordFile: wrong}},
		"block's file, newline trimmed":      {file: good, env: map[string]string{envRedisPasswordFile: wrong}},
		"env file when the block names none": {env: map[string]string{envRedisPasswordFile: good}},
	} {
		cfg := config.Tasks{Redis: &config.Redis{Address: srv.Socket, PasswordFile: c.file, ReplicaTimeout: time.Second}}
		svc, err := taskService(cfg, testStateKey, func(k string) string { return c.env[k] }, hclog.NewNullLogger())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer svc.Close()
		if owner == nil {
			owner = svc
			continue
		}
		task, run, err := owner.Create(context.Background(), testCaller, "echo")
		if err != nil {
			t.Fatal(err)
		}
		defer run.Close()
		if got, err := svc.Get(context.Background(), task.ID); err != nil || got.Owner != owner.Replica() {
			t.Errorf("%s: a peer reads %+v, %v; want the task of %s", name, got, err, owner.Replica())
		}
	}
}

// A redis that refuses the password, or a password that cannot be read,
// stops the start with an error naming where the password came from, and
// never showing it.
func TestTaskServiceRedisRefuses(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--requirepass", redisSecret)
	missing := filepath.Join(t.TempDir(), "none")
	for name, c := range map[string]struct {
		file string
		env  map[string]string
		want []string
	}{
		"wrong password":   {env: map[string]string{envRedisPassword: redisSecret + "-wrong"}, want: []string{srv.Socket, "WRONGPASS"}},
		"no password":      {want: []string{srv.Socket, "NOAUTH"}},
		"missing file":     {file: missing, want: []string{missing, "password_file", "does not exist"}},
		"missing env file": {env: map[string]string{envRedisPasswordFile: missing}, want: []string{missing, envRedisPasswordFile, "does not exist"}},
		"readable file":    {file: writeKey(t, redisSecret, 0o644), want: []string{"password_file", "group or others", "chmod 600"}},
		"empty file":       {file: writeKey(t, "\n", 0o600), want: []string{"password_file", "is empty"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := config.Tasks{Redis: &config.Redis{Address: srv.Socket, PasswordFile: c.file}}
			svc, err := taskService(cfg, testStateKey, func(k string) string { return c.env[k] }, hclog.NewNullLogger())
			if err == nil {
				svc.Close()
				t.Fatal("taskService succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), redisSecret) {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

// A redis block without the replicas' shared state key stops the start,
// saying why: each replica seals the records it writes with that key.
func TestTaskServiceRedisNeedsStateKey(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	cfg := config.Tasks{Redis: &config.Redis{Address: srv.Socket}}
	svc, err := taskService(cfg, nil, func(string) string { return "" }, hclog.NewNullLogger())
	if err == nil {
		svc.Close()
		t.Fatal("taskService succeeded without a state key")
	}
	for _, w := range []string{"state key", "state_key_file", envStateKey} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}
