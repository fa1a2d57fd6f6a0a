//go:build unix

package serve

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// fakeDir is a directory's attributes, as os.Stat would return them.
type fakeDir struct {
	mode     os.FileMode
	uid, gid uint32
}

func (f fakeDir) Name() string       { return "d" }
func (f fakeDir) Size() int64        { return 0 }
func (f fakeDir) Mode() os.FileMode  { return f.mode | os.ModeDir }
func (f fakeDir) ModTime() time.Time { return time.Time{} }
func (f fakeDir) IsDir() bool        { return true }
func (f fakeDir) Sys() any           { return &syscall.Stat_t{Uid: f.uid, Gid: f.gid} }

// TestWritableBy: the owner's, the group's or the others' write bit
// decides, whichever class uid/gid falls in; root writes everywhere.
func TestWritableBy(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		dir      fakeDir
		uid, gid int
		want     bool
	}{
		"owner may write":        {fakeDir{0o755, 1000, 1000}, 1000, 1000, true},
		"owner may not":          {fakeDir{0o555, 1000, 1000}, 1000, 1000, false},
		"group may write":        {fakeDir{0o775, 1000, 2000}, 3000, 2000, true},
		"group may not":          {fakeDir{0o755, 1000, 2000}, 3000, 2000, false},
		"others may write":       {fakeDir{0o777, 1000, 1000}, 65534, 65534, true},
		"others may not":         {fakeDir{0o775, 1000, 1000}, 65534, 65534, false},
		"owner's bit, not other": {fakeDir{0o507, 1000, 1000}, 1000, 1000, false},
		"root":                   {fakeDir{0o500, 1000, 1000}, 0, 0, true},
	}
	for name, tc := range tests {
		if got := writableBy(tc.dir, tc.uid, tc.gid); got != tc.want {
			t.Errorf("%s: writableBy = %v, want %v", name, got, tc.want)
		}
	}
}
