//go:build unix

package main

import "syscall"

// writeFD writes b to descriptor fd, which the SDK owns (an *os.File over
// it would close it when collected).
func writeFD(fd int, b []byte) error {
	_, err := syscall.Write(fd, b)
	return err
}
