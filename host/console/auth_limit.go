package console

import (
	"sync"
	"time"
)

// The failed sign-ins (a wrong token or login key) a process lets
// through: a burst of failedBurst, then one more per failedEvery. The
// limit is the process's, not a client address's (behind a proxy every
// browser has one address, and an attacker has many): once it is spent,
// every token and key sign-in is answered 429 without being checked, so
// guessing gets no answer at all, at the cost that the attacker also
// keeps the right token out meanwhile. An OAuth sign-in is not counted:
// the authorization server checks that credential.
const (
	failedBurst = 10
	failedEvery = 30 * time.Second
)

// failureLimit is a token bucket of failed sign-ins.
type failureLimit struct {
	mu     sync.Mutex
	now    func() time.Time
	left   float64   // failures that may happen now
	filled time.Time // when left was last brought up to date
}

func newFailureLimit(now func() time.Time) *failureLimit {
	return &failureLimit{now: now, left: failedBurst, filled: now()}
}

// wait is how long sign-ins must wait before another may fail; zero when
// one may be tried now.
func (f *failureLimit) wait() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refill()
	if f.left >= 1 {
		return 0
	}
	return time.Duration((1 - f.left) * float64(failedEvery))
}

// failed counts a failed sign-in.
func (f *failureLimit) failed() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refill()
	f.left = max(f.left-1, 0)
}

// refill adds what the time since the last refill earned. Called with mu
// held.
func (f *failureLimit) refill() {
	now := f.now()
	if d := now.Sub(f.filled); d > 0 {
		f.left = min(f.left+float64(d)/float64(failedEvery), failedBurst)
	}
	f.filled = now
}
