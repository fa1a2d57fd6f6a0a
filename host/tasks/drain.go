package tasks

import (
	"context"
	"fmt"
)

// Drain waits until this replica runs no task (each ended and its outcome
// written), or until ctx ends: its error then says how many still run. A replica
// that stops (a rolling upgrade's SIGTERM) calls it within its grace
// period, before Close: a task that ends in time completes as it would
// have, and only the ones still running when the grace ends are failed by
// Close ("the replica … stopped"), a record every other replica answers
// tasks/get with. While Drain waits, the tasks go on as before: tasks/update
// and tasks/cancel reach them through the store from any replica.
//
// Tasks created while Drain waits are waited for too; Drain does not
// refuse them (the HTTP server stops taking requests as its shutdown
// begins, which is what ends them).
func (s *Service) Drain(ctx context.Context) error {
	s.mu.Lock()
	if len(s.runs) == 0 {
		s.mu.Unlock()
		return nil
	}
	if s.idle == nil {
		s.idle = make(chan struct{})
	}
	idle, running := s.idle, len(s.runs)
	s.mu.Unlock()
	s.log.Info("waiting for the tasks running here to end before stopping", "tasks", running)
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		running = len(s.runs)
		s.mu.Unlock()
		return fmt.Errorf("tasks: %d still running here at the end of the grace period: %w", running, ctx.Err())
	}
}
