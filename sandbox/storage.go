package sandbox

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"
)

// How a plugin's disk use is bounded.
//
// Its tmp is a tmpfs of Policy.TmpSize in its mount namespace (see
// writtenMounts): the kernel bounds it, and the host reads its use with
// statfs through /proc/PID/root.
//
// Its data directory lives on the host's disk, across restarts. Of the
// ways to bound a directory, a loop-mounted image and project quotas need
// root (and quotas a filesystem mounted with them), a tmpfs does not
// persist; so the host walks it, as du does, every
// Options.StorageCheckInterval while the plugin runs, and kills a plugin
// found over Policy.DataSize; Wrap refuses to start one whose directory
// is still over it. Measured (Linux 6.18, warm cache): 80 ms for a tree
// of 9,700 files (a node_modules), 250 ms for 26,500; the pause after
// each walk is at least 50 times the walk, so that the walks cost at most
// 2% of a core whatever the tree. What a plugin writes between two walks
// (the disk's speed times the interval) may pass the limit until the
// next. Each entry counts at least one 4 KiB block, so a million empty
// files (inodes, not blocks) count as 4 GiB.
//
// Without a mount namespace its tmp is a directory on the host's disk
// too, walked the same way against Policy.TmpSize.

// DefaultStorageCheckInterval is Options.StorageCheckInterval's default.
const DefaultStorageCheckInterval = 10 * time.Second

// Usage is what a running plugin holds of its storage limits, in bytes.
type Usage struct {
	Data      int64 `json:"data"`       // its data directory, as last walked
	DataLimit int64 `json:"data_limit"` // Policy.DataSize (or its default)
	Tmp       int64 `json:"tmp"`        // its tmp; -1 when it could not be measured
	TmpLimit  int64 `json:"tmp_limit"`  // Policy.TmpSize (or its default)
}

// minEntry is the least an entry of a walked tree counts for.
const minEntry = 4096

// treeSize returns the bytes the files under dir occupy (each entry at
// least minEntry), and how long the walk took.
func treeSize(dir string) (int64, time.Duration) {
	start := time.Now()
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone since listed, or unreadable: counted as nothing
		}
		n := int64(minEntry)
		if fi, err := d.Info(); err == nil {
			n = max(n, allocated(fi))
		}
		total += n
		return nil
	})
	return total, time.Since(start)
}

// checkDataSize refuses a start while the data directory at dir is over
// limit.
func checkDataSize(plugin, dir string, limit int64) error {
	if used, _ := treeSize(dir); used > limit {
		return fmt.Errorf("the data directory of %s (%s) holds %s, over its limit of %s: remove files there, or raise data_size in its sandbox block", plugin, dir, mib(used), mib(limit))
	}
	return nil
}

func mib(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// storageWatch bounds the disk use of one running plugin process: it walks
// what the kernel does not bound, and kills the process over a limit.
type storageWatch struct {
	data, tmp           string
	dataLimit, tmpLimit int64
	interval            time.Duration
	stop                chan struct{} // closed by end
	done                chan struct{} // closed when run returns
	first               chan struct{} // closed once the first check is done

	mu      sync.Mutex
	started bool
	pid     int
	tmpfs   bool   // tmp is a tmpfs in the plugin's mount namespace
	kill    func() // kills the process
	usage   Usage
	why     string // why the watch killed the process; "" if it did not
}

func newStorageWatch(data, tmp string, dataLimit, tmpLimit int64, interval time.Duration) *storageWatch {
	return &storageWatch{data: data, tmp: tmp, dataLimit: dataLimit, tmpLimit: tmpLimit, interval: interval,
		stop: make(chan struct{}), done: make(chan struct{}), first: make(chan struct{}), usage: Usage{DataLimit: dataLimit, TmpLimit: tmpLimit}}
}

// start begins watching the process pid, whose tmp is a tmpfs or not;
// kill kills it. Once end has run, it does nothing.
func (w *storageWatch) start(pid int, tmpfs bool, kill func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case <-w.stop:
		return
	default:
	}
	w.started, w.pid, w.tmpfs, w.kill = true, pid, tmpfs, kill
	go w.run()
}

func (w *storageWatch) run() {
	defer close(w.done)
	for i := 0; ; i++ {
		took := w.check()
		if i == 0 {
			close(w.first)
		}
		if w.killed() {
			return
		}
		select {
		case <-w.stop:
			return
		case <-time.After(max(w.interval, 50*took)):
		}
	}
}

// check measures once and kills the process when it is over a limit; it
// returns how long the walks took.
func (w *storageWatch) check() time.Duration {
	w.mu.Lock()
	pid, tmpfs := w.pid, w.tmpfs
	w.mu.Unlock()
	data, took := treeSize(w.data)
	var tmp int64
	if tmpfs {
		var err error
		if tmp, err = mountUse(fmt.Sprintf("/proc/%d/root%s", pid, w.tmp)); err != nil {
			tmp = -1 // the kernel bounds it; its use is unknown
		}
	} else {
		var t time.Duration
		tmp, t = treeSize(w.tmp)
		took += t
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.usage.Data, w.usage.Tmp = data, tmp
	switch {
	case w.why != "":
	case data > w.dataLimit:
		w.why = fmt.Sprintf("killed: its data directory held %s, over its limit of %s (data_size)", mib(data), mib(w.dataLimit))
	case !tmpfs && tmp > w.tmpLimit:
		w.why = fmt.Sprintf("killed: its tmp directory held %s, over its limit of %s (tmp_size)", mib(tmp), mib(w.tmpLimit))
	default:
		return took
	}
	w.kill()
	return took
}

func (w *storageWatch) killed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.why != ""
}

// Usage returns what the plugin held at the last check, once the first
// one is done.
func (w *storageWatch) Usage() Usage {
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	if started {
		select {
		case <-w.first:
		case <-w.done:
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.usage
}

// end stops the watch once the process has exited, and says whether it
// killed it.
func (w *storageWatch) end() string {
	w.mu.Lock()
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	started := w.started
	w.mu.Unlock()
	if started {
		<-w.done
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.why
}
