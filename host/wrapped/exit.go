package wrapped

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/plughost/plughost/host/wrapped/wire"
)

// ServerExitedError is Start's error when a stdio server's process ended
// before it answered initialize: a server that gives up at start (a
// directory it cannot read, a variable it lacks) says why on its stderr,
// which the host shows with the exit. The wrapper exits with ExitCode, so
// that the host reports the server's own status.
type ServerExitedError struct {
	// State is the server process's end.
	State *os.ProcessState
}

func (e *ServerExitedError) Error() string {
	return "the server exited before answering initialize: " + e.State.String()
}

// ExitCode is the server's exit status, or 1 when a signal ended it.
func (e *ServerExitedError) ExitCode() int {
	if c := e.State.ExitCode(); c > 0 {
		return c
	}
	return 1
}

// connectError explains why the connection to the server (within timeout
// under ctx) failed with err: the server's process exited, or did not
// answer in time, or err itself.
func connectError(ctx context.Context, timeout time.Duration, err error) error {
	var ee *wire.ExitError
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("the server did not answer initialize within %v: %w", timeout, err)
	case errors.As(err, &ee):
		return &ServerExitedError{State: ee.State}
	}
	return fmt.Errorf("connect to the server: %w", err)
}
