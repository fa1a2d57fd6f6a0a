package pluginproto

import (
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// frameOf is a test frame: its name, and the size the batcher sees.
type frameOf struct {
	name string
	size int
}

// gatedBatcher returns a batcher whose Sends record their frames' names and
// wait for a value on gate before returning it (nil: success).
func gatedBatcher() (*batcher[frameOf], chan error, func() [][]string) {
	gate := make(chan error)
	var mu sync.Mutex
	var sent [][]string
	b := newBatcher(func(frames []*frameOf) error {
		var names []string
		for _, f := range frames {
			names = append(names, f.name)
		}
		mu.Lock()
		sent = append(sent, names)
		mu.Unlock()
		return <-gate
	}, func(f *frameOf) int { return f.size })
	return b, gate, func() [][]string {
		mu.Lock()
		defer mu.Unlock()
		return sent
	}
}

// inSend waits until the Send in progress carries the named frame (the
// batcher's state, not time, tells).
func inSend(b *batcher[frameOf], name string) {
	for {
		b.mu.Lock()
		found := slices.ContainsFunc(b.inflight, func(k keyed[frameOf]) bool { return k.f.name == name })
		b.mu.Unlock()
		if found {
			return
		}
		runtime.Gosched()
	}
}

// Frames pushed while a Send is in progress go out together in the next
// one; a long sequence gives one frame per message, after the queued ones,
// and is not held up by, nor holds up, anything else; release withdraws a
// call's queued frames; a failed Send fails later pushes.
func TestBatcher(t *testing.T) {
	t.Parallel()
	b, gate, sent := gatedBatcher()
	done := make(chan error, 1)
	go func() {
		done <- b.pushSeq(1, []*frameOf{{"big0", 10}, {"big1", 10}, {"big2", 10}, {"big3", 10}})
	}()
	inSend(b, "big0") // what comes now is queued
	for _, f := range []*frameOf{{"a", 1}, {"b", 1}, {"x", 1}} {
		key := uint64(2)
		if f.name == "x" {
			key = 3
		}
		if err := b.push(key, f); err != nil {
			t.Fatal(err)
		}
	}
	go b.release(3) // withdraws x
	for {
		b.mu.Lock()
		withdrawn := len(b.queue) == 2
		b.mu.Unlock()
		if withdrawn {
			break
		}
		runtime.Gosched()
	}
	gate <- nil // [big0]
	inSend(b, "a")
	if err := b.push(4, &frameOf{"c", 1}); err != nil {
		t.Fatal(err)
	}
	gate <- nil // [a b big1]
	gate <- nil // [c big2]
	gate <- nil // [big3]
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"big0"}, {"a", "b", "big1"}, {"c", "big2"}, {"big3"}}
	if diff := cmp.Diff(want, sent()); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}

	go func() { done <- b.push(5, &frameOf{"d", 1}) }()
	inSend(b, "d")
	broken := errors.New("broken")
	gate <- broken
	if err := <-done; err != broken {
		t.Errorf("push during the failed Send = %v, want %v", err, broken)
	}
	if err := b.push(6, &frameOf{"e", 1}); err != broken {
		t.Errorf("push after the failed Send = %v, want %v", err, broken)
	}
}

// A message holds frames up to maxMessage bytes; a larger frame goes alone.
func TestBatcherBoundsMessages(t *testing.T) {
	t.Parallel()
	b, gate, sent := gatedBatcher()
	done := make(chan error, 1)
	go func() { done <- b.push(1, &frameOf{"first", 1}) }()
	inSend(b, "first")
	for i, f := range []*frameOf{{"half", maxMessage / 2}, {"half", maxMessage / 2}, {"one", 1}, {"huge", 2 * maxMessage}, {"tail", 1}} {
		if err := b.push(uint64(i+2), f); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		gate <- nil
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"first"}, {"half", "half"}, {"one"}, {"huge"}, {"tail"}}
	if diff := cmp.Diff(want, sent()); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}
