package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Report is what a Roll saw.
type Report struct {
	Counts
	// Retries and Redispatches are HAProxy's (wretr, wredis): requests
	// it sent again, to another replica.
	Retries, Redispatches int
	// Drains are the replicas' stops, in order.
	Drains []Drain
	// Tasks counts the tasks run by a replica as it stopped, and
	// TasksCompleted those that completed; TaskErrors says how the
	// others ended.
	Tasks, TasksCompleted int
	TaskErrors            []string
	// Steady is the stateless requests' latency before the roll, Roll
	// while the replicas restart.
	Steady, Roll Latency
}

// Latency is a phase's stateless request latency.
type Latency struct {
	P50, P99 time.Duration
	N        int
}

// String is the report in one line.
func (r Report) String() string {
	return fmt.Sprintf("stateless requests %d, failed %d; HAProxy retries %d, redispatches %d; session calls %d, failed %d, "+
		"re-initialized after 404 %d; tasks completed %d of %d; latency steady p50 %v p99 %v (%d), during the roll p50 %v p99 %v (%d)",
		r.Requests, r.Failures, r.Retries, r.Redispatches, r.SessionCalls, r.SessionFailures, r.Reinitialized,
		r.TasksCompleted, r.Tasks, r.Steady.P50, r.Steady.P99, r.Steady.N, r.Roll.P50, r.Roll.P99, r.Roll.N)
}

// Roll is the rolling upgrade under load: the load of lo through the
// balancer, warm calls of each kind first (the steady phase), then each
// replica in turn: a task created on it (askplugin's "build", which waits
// for its user), SIGTERM, the task answered through the balancer once the
// replica's drain delay is over (so another replica takes the answer and
// the stopping one, within its grace period, finishes the task), the
// replica started again on next, whose serverInfo.version must be
// version, and the task awaited; then warm calls more, so that every
// session that lost its replica has initialized again. Its error is the
// scenario's failing to run (a replica that does not restart, a version
// that is not the new one); what the clients saw is in the Report.
func Roll(ctx context.Context, f *Fleet, next, version string, lo LoadOptions, warm int) (Report, error) {
	var rep Report
	load := StartLoad(ctx, f.URL, lo)
	defer load.Stop()
	if err := load.Await(ctx, warm); err != nil {
		return rep, err
	}
	load.Phase("roll")
	for i, r := range f.Replicas {
		id, key, err := waitingTask(ctx, f, r)
		if err != nil {
			return rep, err
		}
		d, err := f.Restart(ctx, i, next, func() error {
			return UpdateTask(ctx, f.URL, id, key, `{"action":"accept"}`)
		})
		rep.Drains = append(rep.Drains, d)
		if err != nil {
			return rep, err
		}
		if v, err := f.Version(ctx, i); err != nil || v != version {
			return rep, fmt.Errorf("replica %s after its restart: serverInfo.version %q (%v), want %q", r.Name, v, err, version)
		}
		task, err := AwaitTask(ctx, f.URL, id, func(t *Task) bool { return t.Status != "working" && t.Status != "input_required" })
		if err != nil {
			return rep, err
		}
		rep.Tasks++
		if task.Status == "completed" && strings.Contains(string(task.Result), "built after accept") {
			rep.TasksCompleted++
		} else {
			rep.TaskErrors = append(rep.TaskErrors, fmt.Sprintf("the task of replica %s: %s %q %s %s",
				r.Name, task.Status, task.StatusMessage, task.Result, task.Error))
		}
	}
	load.Phase("after")
	if err := load.Await(ctx, warm); err != nil {
		return rep, err
	}
	rep.Counts = load.Stop()
	for phase, l := range map[string]*Latency{"steady": &rep.Steady, "roll": &rep.Roll} {
		l.P50, l.P99, l.N = load.Latency(phase)
	}
	stats, err := f.Stats(ctx)
	if err != nil {
		return rep, err
	}
	rep.Retries, rep.Redispatches = stats.Retries, stats.Redispatches
	return rep, nil
}

// waitingTask creates a "build" task on replica r directly and waits,
// through the balancer, until it asks its user; it returns the task's id
// and the key of its question.
func waitingTask(ctx context.Context, f *Fleet, r *Replica) (id, key string, err error) {
	if id, err = CreateTask(ctx, r.URL, "build", `{}`); err != nil {
		return "", "", err
	}
	task, err := AwaitTask(ctx, f.URL, id, func(t *Task) bool { return t.Status == "input_required" })
	if err != nil {
		return "", "", err
	}
	var asked map[string]json.RawMessage
	if err := json.Unmarshal(task.InputRequests, &asked); err != nil || len(asked) != 1 {
		return "", "", fmt.Errorf("task %s asks %s, want one question", id, task.InputRequests)
	}
	for k := range asked {
		key = k
	}
	return id, key, nil
}
