//go:build unix

package preflight

import "syscall"

// canWrite reports why this process may not write the file at path
// (access(2), W_OK), nil when it may.
func canWrite(path string) error { return syscall.Access(path, 2 /* W_OK */) }

// canCreateIn reports why this process may not create a file in the
// directory dir (W_OK|X_OK), nil when it may.
func canCreateIn(dir string) error { return syscall.Access(dir, 2|1 /* W_OK|X_OK */) }
