package tasks

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// Listing the tasks kept, for an operator (the console's sessions page):
// their records without what may be large or private (results, input
// requests, answers, request state), newest first, bounded.

// MaxList bounds List's limit: a page shows no more.
const MaxList = 1000

// Summary is t without its payload: no result, error, input requests,
// answers, request state nor keys asked (what a listing of many tasks
// must not hold, and what only the task's caller may read).
func (t *Task) Summary() *Task {
	return &Task{ID: t.ID, Status: t.Status, StatusMessage: t.StatusMessage, Created: t.Created, Updated: t.Updated,
		TTL: t.TTL, PollInterval: t.PollInterval, Owner: t.Owner, Tool: t.Tool, Caller: t.Caller}
}

// NewestFirst sorts ts by creation, newest first (then by ID, so that an
// order is stable), and keeps at most limit of them, clamped to MaxList.
// Stores' List use it.
func NewestFirst(ts []*Task, limit int) []*Task {
	slices.SortFunc(ts, func(a, b *Task) int { return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(a.ID, b.ID)) })
	return ts[:min(len(ts), ListLimit(limit))]
}

// ListLimit is limit clamped to [0, MaxList].
func ListLimit(limit int) int { return max(0, min(limit, MaxList)) }

// List returns the tasks kept, newest first, at most limit (and at most
// MaxList), as Summary shows them; expired ones are left out.
func (m *Memory) List(_ context.Context, limit int) ([]*Task, error) {
	now := time.Now()
	m.mu.Lock()
	out := make([]*Task, 0, min(len(m.tasks), ListLimit(limit)))
	for _, t := range m.tasks {
		if !expired(t, now) {
			out = append(out, t.Summary())
		}
	}
	m.mu.Unlock()
	return NewestFirst(out, limit), nil
}

// List is the store's List: the tasks of every replica.
func (s *Service) List(ctx context.Context, limit int) ([]*Task, error) {
	return s.store.List(ctx, limit)
}
