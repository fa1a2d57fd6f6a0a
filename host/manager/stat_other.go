//go:build !linux

package manager

import "os"

// statOf has no portable ctime, inode and device here: it reports none,
// so that the binary is hashed on every lookup (correct, only slower).
func statOf(string) (statMark, bool) { return statMark{}, false }

// markOf reports none either (see statOf).
func markOf(os.FileInfo) (statMark, bool) { return statMark{}, false }
