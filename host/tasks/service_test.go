package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/tasks"
)

// services returns the Services of replicas a and b, sharing their tasks
// through the backend's stores, closed when the test ends.
func services(t *testing.T, b backend, opts tasks.Options) (a, bb *tasks.Service) {
	t.Helper()
	stores := b.open(t, "a", "b")
	for i, name := range []string{"a", "b"} {
		o := opts
		o.Store, o.Replica = stores[i], name
		s := tasks.New(o)
		t.Cleanup(func() { s.Close() })
		if i == 0 {
			a = s
		} else {
			bb = s
		}
	}
	return a, bb
}

// create creates a task on s, closing its Run when the test ends.
func create(t *testing.T, s *tasks.Service) (*tasks.Task, *tasks.Run) {
	t.Helper()
	task, run, err := s.Create(context.Background(), tester, "echo")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run.Close)
	return task, run
}

// get reads a task through s.
func get(t *testing.T, s *tasks.Service, id string) *tasks.Task {
	t.Helper()
	task, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return task
}

// wantError fails the test unless task failed with the JSON-RPC error of
// code whose message holds each of parts (as its statusMessage does).
func wantError(t *testing.T, task *tasks.Task, code int, parts ...string) {
	t.Helper()
	var e struct {
		Code    int
		Message string
	}
	if task.Status != tasks.Failed || json.Unmarshal(task.Error, &e) != nil || e.Code != code || e.Message != task.StatusMessage {
		t.Fatalf("task is %s, error %s, statusMessage %q; want failed with code %d and the message as statusMessage",
			task.Status, task.Error, task.StatusMessage, code)
	}
	for _, p := range parts {
		if !strings.Contains(e.Message, p) {
			t.Errorf("error message %q does not say %q", e.Message, p)
		}
	}
}

// A task is created working, owned by its replica, with the options' TTL
// and poll interval and an unguessable ID, and reads the same on a peer.
func TestServiceCreate(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		a, bb := services(t, b, tasks.Options{TTL: 2 * time.Minute, PollInterval: 250 * time.Millisecond})
		task, run := create(t, a)
		if task.Status != tasks.Working || task.Owner != "a" || task.TTL != 2*time.Minute || task.PollInterval != 250*time.Millisecond ||
			!task.Created.Equal(task.Updated) || task.Tool != "echo" || run.ID() != task.ID {
			t.Errorf("created task %+v (run %s)", task, run.ID())
		}
		if len(task.ID) < 26 {
			t.Errorf("ID %q holds fewer than 128 random bits", task.ID)
		}
		other, _ := create(t, a)
		if other.ID == task.ID {
			t.Errorf("two tasks share ID %s", task.ID)
		}
		if diff := cmp.Diff(task, get(t, bb, task.ID)); diff != "" {
			t.Errorf("the peer reads (-created +read):\n%s", diff)
		}
		_, err := bb.Get(context.Background(), "unknown")
		isNotFound(t, "Get of an unknown task", err)
	})
}

// tasks/cancel on a peer cancels the task at once and closes the owner's
// Cancelled; it is idempotent, and the outcome the owner writes later is
// dropped.
func TestServiceCancelAcrossReplicas(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		a, bb := services(t, b, tasks.Options{})
		ctx := context.Background()
		task, run := create(t, a)
		if err := bb.CancelAs(ctx, tester, task.ID); err != nil {
			t.Fatal(err)
		}
		if got := get(t, bb, task.ID); got.Status != tasks.Cancelled || got.StatusMessage != "cancelled by the client" {
			t.Errorf("after Cancel: %s %q, want cancelled by the client", got.Status, got.StatusMessage)
		}
		closed(t, run.Cancelled(), "the owner's Cancelled")
		if err := bb.CancelAs(ctx, tester, task.ID); err != nil {
			t.Errorf("Cancel of a cancelled task = %v, want nil", err)
		}
		if err := run.Complete(ctx, json.RawMessage(`{"content":[]}`)); err != nil {
			t.Errorf("Complete of a cancelled task = %v, want nil", err)
		}
		if got := get(t, a, task.ID); got.Status != tasks.Cancelled || got.Result != nil {
			t.Errorf("after Complete of a cancelled task: %s, result %s; want cancelled, none", got.Status, got.Result)
		}
		isNotFound(t, "Cancel of an unknown task", bb.CancelAs(ctx, tester, "unknown"))
	})
}

// Input requests asked on the owner are answered on a peer, one key at a
// time: the task stays input_required with the keys left, answers to keys
// not asked or answered already are ignored, and once all are answered the
// owner's WaitInput returns them all with the state.
func TestServiceInputAcrossReplicas(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		a, bb := services(t, b, tasks.Options{})
		ctx := context.Background()
		task, run := create(t, a)
		requests := `{"name":{"method":"elicitation/create","params":{}},"poem":{"method":"sampling/createMessage","params":{}}}`
		if err := run.NeedInput(ctx, json.RawMessage(requests), "round-1"); err != nil {
			t.Fatal(err)
		}
		got := get(t, bb, task.ID)
		if got.Status != tasks.InputRequired || string(got.InputRequests) != requests ||
			got.StatusMessage != "waiting for the client's input: elicitation/create, sampling/createMessage" {
			t.Fatalf("after NeedInput: %s %q %s", got.Status, got.StatusMessage, got.InputRequests)
		}
		type input struct {
			answers json.RawMessage
			state   string
			err     error
		}
		waited := make(chan input, 1)
		go func() {
			answers, state, err := run.WaitInput(ctx)
			waited <- input{answers, state, err}
		}()

		if err := bb.UpdateAs(ctx, tester, task.ID, json.RawMessage(`{"name":{"action":"accept"},"never-asked":{}}`)); err != nil {
			t.Fatal(err)
		}
		got = get(t, bb, task.ID)
		if got.Status != tasks.InputRequired || string(got.InputRequests) != `{"poem":{"method":"sampling/createMessage","params":{}}}` {
			t.Fatalf("after answering one of two: %s %s, want input_required with poem only", got.Status, got.InputRequests)
		}
		if err := bb.UpdateAs(ctx, tester, task.ID, json.RawMessage(`{"name":{"action":"decline"}}`)); err != nil {
			t.Fatal(err)
		}
		if err := bb.UpdateAs(ctx, tester, task.ID, json.RawMessage(`{"poem":{"role":"assistant"}}`)); err != nil {
			t.Fatal(err)
		}
		var in input
		select {
		case in = <-waited:
		case <-time.After(waitFor):
			t.Fatal("WaitInput did not return once every request was answered")
		}
		if in.err != nil || string(in.answers) != `{"name":{"action":"accept"},"poem":{"role":"assistant"}}` || in.state != "round-1" {
			t.Errorf("WaitInput = %s, %q, %v; want both first answers and round-1", in.answers, in.state, in.err)
		}
		got = get(t, bb, task.ID)
		if got.Status != tasks.Working || got.InputRequests != nil || got.Answers != nil || got.State != "" {
			t.Errorf("after WaitInput: %s, requests %s, answers %s, state %q; want working, all taken", got.Status, got.InputRequests, got.Answers, got.State)
		}
	})
}

// tasks/update ignores a task not waiting for input (working or
// terminal), refuses responses that are not an object, and answers
// ErrNotFound for an unknown task.
func TestServiceUpdateIgnores(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		a, bb := services(t, b, tasks.Options{})
		ctx := context.Background()
		task, run := create(t, a)
		before := get(t, bb, task.ID)
		if err := bb.UpdateAs(ctx, tester, task.ID, json.RawMessage(`{"x":{}}`)); err != nil {
			t.Errorf("Update of a working task = %v, want nil", err)
		}
		if diff := cmp.Diff(before, get(t, bb, task.ID)); diff != "" {
			t.Errorf("Update changed a working task (-before +after):\n%s", diff)
		}
		for _, bad := range []string{`[]`, `"x"`, `{`, ``} {
			if err := bb.UpdateAs(ctx, tester, task.ID, json.RawMessage(bad)); err == nil {
				t.Errorf("Update with responses %q succeeded", bad)
			}
		}
		isNotFound(t, "Update of an unknown task", bb.UpdateAs(ctx, tester, "unknown", json.RawMessage(`{}`)))
		if err := run.Fail(ctx, -32000, "boom"); err != nil {
			t.Fatal(err)
		}
		if err := bb.UpdateAs(ctx, tester, task.ID, json.RawMessage(`{"x":{}}`)); err != nil {
			t.Errorf("Update of a failed task = %v, want nil", err)
		}
	})
}

// A key names one request over a task's life: asking it again in a later
// round is an error, and leaves the task working.
func TestNeedInputKeysUnique(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		a, _ := services(t, b, tasks.Options{})
		ctx := context.Background()
		task, run := create(t, a)
		ask := json.RawMessage(`{"k":{"method":"elicitation/create"}}`)
		if err := run.NeedInput(ctx, ask, ""); err != nil {
			t.Fatal(err)
		}
		if err := a.UpdateAs(ctx, tester, task.ID, json.RawMessage(`{"k":{"action":"accept"}}`)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := run.WaitInput(ctx); err != nil {
			t.Fatal(err)
		}
		if err := run.NeedInput(ctx, ask, ""); err == nil || !strings.Contains(err.Error(), `"k"`) {
			t.Errorf("NeedInput asking k again = %v, want an error naming it", err)
		}
		if got := get(t, a, task.ID); got.Status != tasks.Working {
			t.Errorf("after a refused NeedInput the task is %s, want working", got.Status)
		}
		for _, bad := range []string{`{"j":{"method":"x"},"j":{"method":"y"}}`, `{"j":{}}`, `{}`, `[]`} {
			if err := run.NeedInput(ctx, json.RawMessage(bad), ""); err == nil {
				t.Errorf("NeedInput(%s) succeeded", bad)
			}
		}
		if err := run.NeedInput(ctx, json.RawMessage(`{"j":{"method":"elicitation/create"}}`), ""); err != nil {
			t.Errorf("NeedInput with a new key: %v", err)
		}
	})
}

// WaitInput ends with its context, and with the task when a peer cancels
// it meanwhile.
func TestWaitInputEnds(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		a, bb := services(t, b, tasks.Options{})
		task, run := create(t, a)
		if err := run.NeedInput(context.Background(), json.RawMessage(`{"k":{"method":"elicitation/create"}}`), ""); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, _, err := run.WaitInput(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("WaitInput with a done context = %v, want context.Canceled", err)
		}
		waited := make(chan error, 1)
		go func() {
			_, _, err := run.WaitInput(context.Background())
			waited <- err
		}()
		if err := bb.CancelAs(context.Background(), tester, task.ID); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-waited:
			if !errors.Is(err, tasks.ErrTerminal) {
				t.Errorf("WaitInput of a cancelled task = %v, want ErrTerminal", err)
			}
		case <-time.After(waitFor):
			t.Fatal("WaitInput did not return when the task was cancelled")
		}
	})
}

// tasks/update keeps a task's answers within MaxResultBytes: responses
// that would pass it are refused (ErrTooLarge, naming the size and the
// bound) and change nothing.
func TestServiceUpdateBound(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		a, bb := services(t, b, tasks.Options{MaxResultBytes: 1024})
		ctx := context.Background()
		task, run := create(t, a)
		if err := run.NeedInput(ctx, json.RawMessage(`{"a":{"method":"elicitation/create"},"b":{"method":"elicitation/create"}}`), ""); err != nil {
			t.Fatal(err)
		}
		answer := func(key string) json.RawMessage {
			return json.RawMessage(`{"` + key + `":{"action":"accept","content":{"text":"` + strings.Repeat("x", 500) + `"}}}`)
		}
		if err := bb.UpdateAs(ctx, tester, task.ID, answer("a")); err != nil {
			t.Fatal(err)
		}
		before := get(t, bb, task.ID)
		err := bb.UpdateAs(ctx, tester, task.ID, answer("b"))
		size := strconv.Itoa(2*len(answer("a")) - 1) // {"a":…,"b":…}
		if !errors.Is(err, tasks.ErrTooLarge) || !strings.Contains(err.Error(), size+" bytes") || !strings.Contains(err.Error(), "bound of 1024") {
			t.Errorf("Update passing the bound = %v, want ErrTooLarge naming %s bytes and the bound of 1024", err, size)
		}
		if diff := cmp.Diff(before, get(t, bb, task.ID)); diff != "" {
			t.Errorf("a refused Update changed the task (-before +after):\n%s", diff)
		}
	})
}
