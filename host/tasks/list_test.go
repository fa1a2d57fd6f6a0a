package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/tasks"
)

// List gives every replica's tasks newest first, bounded by its limit,
// without their payloads, and leaves the expired ones out.
func TestStoreList(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, b backend) {
		s := b.open(t, "a", "b")
		ctx := context.Background()
		var want []*tasks.Task
		for i, id := range []string{"first", "second", "third"} {
			r := record(id)
			r.Created = r.Created.Add(time.Duration(i-3) * time.Minute)
			r.Caller = "alice"
			if err := s[i%2].Create(ctx, r); err != nil {
				t.Fatal(err)
			}
			want = append([]*tasks.Task{{ID: id, Status: r.Status, StatusMessage: r.StatusMessage, Created: r.Created,
				Updated: r.Updated, TTL: r.TTL, PollInterval: r.PollInterval, Owner: r.Owner, Tool: r.Tool, Caller: "alice"}}, want...)
		}
		old := record("expired")
		old.Created = old.Created.Add(-2 * time.Hour)
		if err := s[0].Create(ctx, old); err != nil {
			t.Fatal(err)
		}
		got, err := s[1].List(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("List(10) (-want +got):\n%s", diff)
		}
		if got, err := s[0].List(ctx, 2); err != nil || len(got) != 2 || got[0].ID != "third" || got[1].ID != "second" {
			t.Errorf("List(2) = %v, %v; want third and second", got, err)
		}
		if got, err := s[0].List(ctx, 0); err != nil || len(got) != 0 {
			t.Errorf("List(0) = %v, %v; want none", got, err)
		}
	})
}
