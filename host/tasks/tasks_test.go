package tasks_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/plughost/plughost/host/tasks"
)

// AppendWire writes what MCP shows of a task for each status, the members
// each status carries when detailed, and never the record's own members.
func TestAppendWire(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 11, 23, 10, 30, 0, 123_456_789, time.FixedZone("CET", 3600))
	base := tasks.Task{
		ID: "T1", Created: created, Updated: created.Add(1500 * time.Millisecond), TTL: time.Hour, PollInterval: 500 * time.Millisecond,
		Answers: json.RawMessage(`{"old":{"action":"accept"}}`), State: "secret-state", Asked: []string{"old"},
		Owner: "replica-a", Tool: "echo",
	}
	for name, c := range map[string]struct {
		change   func(*tasks.Task)
		detailed bool
		want     string
	}{
		"working": {
			change: func(t *tasks.Task) { t.Status = tasks.Working },
			want:   `{"taskId":"T1","status":"working","createdAt":"2026-11-23T09:30:00.123Z","lastUpdatedAt":"2026-11-23T09:30:01.623Z","ttlMs":3600000,"pollIntervalMs":500}`,
		},
		"working with a message": {
			change:   func(t *tasks.Task) { t.Status, t.StatusMessage = tasks.Working, "3 of 10 \"files\"\n" },
			detailed: true,
			want:     `{"taskId":"T1","status":"working","statusMessage":"3 of 10 \"files\"\n","createdAt":"2026-11-23T09:30:00.123Z","lastUpdatedAt":"2026-11-23T09:30:01.623Z","ttlMs":3600000,"pollIntervalMs":500}`,
		},
		"input_required": {
			change: func(t *tasks.Task) {
				t.Status, t.StatusMessage = tasks.InputRequired, "waiting for the client's input: elicitation/create"
				t.InputRequests = json.RawMessage("{\"name\": {\"method\": \"elicitation/create\",\n \"params\": {}}}")
			},
			detailed: true,
			want:     `{"taskId":"T1","status":"input_required","statusMessage":"waiting for the client's input: elicitation/create","createdAt":"2026-11-23T09:30:00.123Z","lastUpdatedAt":"2026-11-23T09:30:01.623Z","ttlMs":3600000,"pollIntervalMs":500,"inputRequests":{"name":{"method":"elicitation/create","params":{}}}}`,
		},
		"input_required, not detailed": {
			change: func(t *tasks.Task) {
				t.Status, t.InputRequests = tasks.InputRequired, json.RawMessage(`{"name":{"method":"elicitation/create"}}`)
			},
			want: `{"taskId":"T1","status":"input_required","createdAt":"2026-11-23T09:30:00.123Z","lastUpdatedAt":"2026-11-23T09:30:01.623Z","ttlMs":3600000,"pollIntervalMs":500}`,
		},
		"completed": {
			change: func(t *tasks.Task) {
				t.Status, t.Result = tasks.Completed, json.RawMessage(`{"content":[],"isError":true}`)
			},
			detailed: true,
			want:     `{"taskId":"T1","status":"completed","createdAt":"2026-11-23T09:30:00.123Z","lastUpdatedAt":"2026-11-23T09:30:01.623Z","ttlMs":3600000,"pollIntervalMs":500,"result":{"content":[],"isError":true}}`,
		},
		"failed": {
			change: func(t *tasks.Task) {
				t.Status, t.StatusMessage, t.Error = tasks.Failed, "boom", json.RawMessage(`{"code":-32603,"message":"boom"}`)
			},
			detailed: true,
			want:     `{"taskId":"T1","status":"failed","statusMessage":"boom","createdAt":"2026-11-23T09:30:00.123Z","lastUpdatedAt":"2026-11-23T09:30:01.623Z","ttlMs":3600000,"pollIntervalMs":500,"error":{"code":-32603,"message":"boom"}}`,
		},
		"cancelled": {
			change:   func(t *tasks.Task) { t.Status, t.StatusMessage = tasks.Cancelled, "cancelled by the client" },
			detailed: true,
			want:     `{"taskId":"T1","status":"cancelled","statusMessage":"cancelled by the client","createdAt":"2026-11-23T09:30:00.123Z","lastUpdatedAt":"2026-11-23T09:30:01.623Z","ttlMs":3600000,"pollIntervalMs":500}`,
		},
		"whole milliseconds, at least one": {
			change: func(t *tasks.Task) {
				t.Status, t.TTL, t.PollInterval = tasks.Working, 1500*time.Microsecond, 10*time.Microsecond
			},
			detailed: true,
			want:     `{"taskId":"T1","status":"working","createdAt":"2026-11-23T09:30:00.123Z","lastUpdatedAt":"2026-11-23T09:30:01.623Z","ttlMs":1,"pollIntervalMs":1}`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			task := base
			c.change(&task)
			got := string(append(task.AppendWire([]byte("{"), c.detailed), '}'))
			if got != c.want {
				t.Errorf("AppendWire:\n got %s\nwant %s", got, c.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("AppendWire wrote invalid JSON: %s", got)
			}
		})
	}
}

// A caller that adds a member of its own writes it before, with the comma.
func TestAppendWireAfterResultType(t *testing.T) {
	t.Parallel()
	task := tasks.Task{ID: "T2", Status: tasks.Working, Created: time.Unix(0, 0), Updated: time.Unix(0, 0), TTL: time.Minute, PollInterval: time.Second}
	got := string(append(task.AppendWire([]byte(`{"resultType":"task",`), false), '}'))
	want := `{"resultType":"task","taskId":"T2","status":"working","createdAt":"1970-01-01T00:00:00.000Z","lastUpdatedAt":"1970-01-01T00:00:00.000Z","ttlMs":60000,"pollIntervalMs":1000}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
