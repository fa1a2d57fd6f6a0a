package redistore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"

	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/host/tasks/redistore"
	"github.com/plughost/plughost/internal/redistest"
)

// testSecret is the replicas' shared secret in these tests.
var testSecret = []byte("0123456789abcdef0123456789abcdef")

// recordOf returns the JSON record of a sealed value ("m1.<mac>.<json>").
func recordOf(value []byte) []byte {
	parts := bytes.SplitN(value, []byte{'.'}, 3)
	if len(parts) != 3 {
		return value
	}
	return parts[2]
}

// lockedBuffer is a log output safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Attack 19 of issue 31: whoever can write to redis but lacks the
// replicas' secret edits a task's record (a forged result, a forged
// elicitation, a false taskId, a record copied under another id, one
// sealed with another secret, one without a seal): every replica refuses
// it as no task (ErrNotFound), logs why at ERROR, and does not change it.
func TestForgedRecordRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := context.Background()
	var logs lockedBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	open := func(replica string, secret []byte) *redistore.Store {
		s, err := redistore.New(redistore.Options{Address: srv.Socket, Replica: replica, Secret: secret, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open("a", testSecret), open("b", testSecret)
	other := open("other", []byte("another secret of thirty-two bytes at least"))
	raw := redis.NewClient(&redis.Options{Network: "unix", Addr: srv.Socket})
	defer raw.Close()

	created := time.Now().UTC().Truncate(time.Millisecond)
	record := func(id string) *tasks.Task {
		return &tasks.Task{ID: id, Status: tasks.Working, Created: created, Updated: created, TTL: time.Hour,
			PollInterval: time.Second, Owner: "a", Tool: "files", Caller: "alice"}
	}
	for _, id := range []string{"T1", "T2"} {
		if err := a.Create(ctx, record(id)); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := b.Get(ctx, "T1"); err != nil || got.Caller != "alice" {
		t.Fatalf("a peer with the secret reads %+v, %v; want the record", got, err)
	}
	sealedT1, _ := raw.Get(ctx, "plughost:task:T1").Bytes()
	if !bytes.HasPrefix(sealedT1, []byte("m1.")) {
		t.Fatalf("the record %s is not sealed", sealedT1)
	}
	prefix := sealedT1[:len(sealedT1)-len(recordOf(sealedT1))] // "m1.<mac>." of T1's record
	edit := func(change func(*tasks.Task)) []byte {
		task := record("T1")
		change(task)
		data, _ := json.Marshal(task)
		return append(bytes.Clone(prefix), data...)
	}
	cases := map[string][]byte{
		"a forged result": edit(func(t *tasks.Task) {
			t.Status, t.Result = tasks.Completed, json.RawMessage(`{"content":[{"type":"text","text":"forged"}]}`)
		}),
		"a forged elicitation": edit(func(t *tasks.Task) {
			t.Status = tasks.InputRequired
			t.InputRequests = json.RawMessage(`{"1/pw":{"method":"elicitation/create","params":{"message":"enter your password"}}}`)
		}),
		"a false taskId":                 edit(func(t *tasks.Task) { t.ID = "T9" }),
		"another caller":                 edit(func(t *tasks.Task) { t.Caller = "mallory" }),
		"the record of another task":     mustGet(t, raw, "plughost:task:T2"),
		"the plain JSON of before seals": recordOf(sealedT1),
		"garbage":                        []byte("m1.!!!.{"),
	}
	for name, value := range cases {
		t.Run(name, func(t *testing.T) {
			if err := raw.Set(ctx, "plughost:task:T1", value, time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			for _, s := range []*redistore.Store{a, b} {
				if got, err := s.Get(ctx, "T1"); !errors.Is(err, tasks.ErrNotFound) {
					t.Errorf("Get = %+v, %v; want ErrNotFound", got, err)
				}
				if _, err := s.Update(ctx, "T1", func(t *tasks.Task) error { t.StatusMessage = "x"; return nil }); !errors.Is(err, tasks.ErrNotFound) {
					t.Errorf("Update = %v; want ErrNotFound", err)
				}
			}
			if now, _ := raw.Get(ctx, "plughost:task:T1").Bytes(); !bytes.Equal(now, value) {
				t.Errorf("the refused record was rewritten: %s", now)
			}
		})
	}
	if err := raw.Set(ctx, "plughost:task:T1", sealedT1, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Get(ctx, "T1"); !errors.Is(err, tasks.ErrNotFound) {
		t.Errorf("a replica with another secret reads the record: %v; want ErrNotFound", err)
	}
	if got, err := b.Get(ctx, "T1"); err != nil || got.Status != tasks.Working {
		t.Errorf("the record put back: %+v, %v; want it read again", got, err)
	}
	out := logs.String()
	if !strings.Contains(out, "[ERROR]") || !strings.Contains(out, "refused a task record") || !strings.Contains(out, "T1") ||
		!strings.Contains(out, "fails its MAC") {
		t.Errorf("log %q does not tell of the refused record", out)
	}
}

// New refuses a secret shorter than MinSecret, naming the length.
func TestNewShortSecret(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, secret := range [][]byte{nil, []byte("short")} {
		s, err := redistore.New(redistore.Options{Address: srv.Socket, Secret: secret})
		if err == nil {
			s.Close()
			t.Fatalf("New with a %d-byte secret succeeded", len(secret))
		}
		if !strings.Contains(err.Error(), "at least 32") {
			t.Errorf("New with a %d-byte secret: %v, want the minimum named", len(secret), err)
		}
	}
}

func mustGet(t *testing.T, raw *redis.Client, key string) []byte {
	t.Helper()
	v, err := raw.Get(context.Background(), key).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return v
}
