//go:build !unix

package lane

import (
	"errors"
	"os"
)

// Pair is unsupported off Unix: calls keep gRPC.
func Pair() (host, plugin *os.File, err error) {
	return nil, nil, errors.New("the frame lane needs a Unix socketpair")
}

// FromEnv is nil off Unix: no host hands a lane there.
func FromEnv() (*os.File, error) { return nil, nil }
