package serve

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/internal/rundir"
)

// OpenRunDir sweeps the run directories of hosts that died (their plugins'
// sockets and tmp directories), then makes this process's own: every
// command that starts plugins runs them from it, and removes it when it
// stops (see package rundir).
func OpenRunDir(log hclog.Logger) (*rundir.Dir, error) {
	base := rundir.Base()
	if err := os.MkdirAll(base, 0o700); err != nil { // $XDG_RUNTIME_DIR may name one not made yet
		return nil, fmt.Errorf("run directory: %w", err)
	}
	swept, err := rundir.Sweep(base)
	for _, dir := range swept {
		log.Info("removed the run directory of a plughost that died", "dir", dir)
	}
	if err != nil {
		log.Warn("could not remove the run directory of a plughost that died", "error", err)
	}
	return rundir.Create(base)
}
