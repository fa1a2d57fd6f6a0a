package mcp

import (
	"strings"
	"testing"
	"time"
)

// TestListsWaitForTheFirstLoad: a list request that comes before the
// catalog's first load is over is answered once it is, while every other
// request is served meanwhile.
func TestListsWaitForTheFirstLoad(t *testing.T) {
	t.Parallel()
	for _, stdio := range []bool{false, true} {
		ready := make(chan struct{})
		c := newClient(t, clientOptions{server: Options{Ready: ready, ReadyWait: time.Hour}, stdio: stdio})
		c.initialize("2025-11-25")
		c.write(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
		c.write(`{"jsonrpc":"2.0","id":"r","method":"resources/list"}`)
		c.write(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
		if got := c.next(); !strings.Contains(got, `"id":"p"`) {
			t.Fatalf("while the lists wait, the first answer is %s; want ping's", got)
		}
		close(ready)
		got := strings.Join([]string{c.next(), c.next()}, "\n")
		if !strings.Contains(got, `"id":"l","result":{"tools":[`) || !strings.Contains(got, `"id":"r","result":{"resources":[`) {
			t.Errorf("after the first load (stdio %v): %s; want both lists answered", stdio, got)
		}
		// Once ready, lists are answered at once.
		if got := c.roundtrip(`{"jsonrpc":"2.0","id":"l2","method":"tools/list"}`); len(got) != 1 || !strings.Contains(got[0], `"id":"l2","result"`) {
			t.Errorf("a list after the first load got %q", got)
		}
	}
}

// TestListsWaitAtMostReadyWait: a first load that never ends holds a list
// for ReadyWait at most; it is then answered with what the catalog holds.
func TestListsWaitAtMostReadyWait(t *testing.T) {
	t.Parallel()
	c := newClient(t, clientOptions{server: Options{Ready: make(chan struct{}), ReadyWait: 20 * time.Millisecond}})
	c.initialize("2025-11-25")
	c.write(`{"jsonrpc":"2.0","id":"l","method":"prompts/list"}`)
	if got := c.next(); !strings.Contains(got, `"id":"l","result":{"prompts":[`) {
		t.Errorf("at the bound: %s; want the list as the catalog holds it", got)
	}
}

// TestListWaitingForTheFirstLoadIsCancellable: a client may cancel a list
// that waits; it then gets no answer.
func TestListWaitingForTheFirstLoadIsCancellable(t *testing.T) {
	t.Parallel()
	ready := make(chan struct{})
	c := newClient(t, clientOptions{server: Options{Ready: ready, ReadyWait: time.Hour}})
	c.initialize("2025-11-25")
	c.write(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
	c.write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"l"}}`)
	c.settle()
	close(ready)
	if got := c.roundtrip(`{"jsonrpc":"2.0","id":"p","method":"ping"}`); len(got) != 1 || !strings.Contains(got[0], `"id":"p"`) {
		t.Errorf("after cancelling the waiting list: %q; want only ping's answer", got)
	}
}
