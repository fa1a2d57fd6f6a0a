package device

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingListener records, for every connection it accepts, how many
// bytes the server has read from it, and signals each accept.
type countingListener struct {
	net.Listener
	accepted chan struct{}

	mu    sync.Mutex
	conns []*countingConn
}

type countingConn struct {
	net.Conn
	read atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func newCountingListener(t *testing.T) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &countingListener{Listener: ln, accepted: make(chan struct{}, 1<<14)}
}

func (l *countingListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c := &countingConn{Conn: nc}
	l.mu.Lock()
	l.conns = append(l.conns, c)
	l.mu.Unlock()
	l.accepted <- struct{}{}
	return c, nil
}

// awaitAccepts waits until the server has accepted n more connections.
func (l *countingListener) awaitAccepts(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(waitLong)
	for range n {
		select {
		case <-l.accepted:
		case <-timeout:
			t.Fatalf("the server did not accept %d connections in time", n)
		}
	}
}

// TestBeforeAuthFramesAreSmall (issue 31, attack 16): with tokens, a
// connection that has not authenticated may send a frame of a few KiB
// only. 1,000 connections each sending a 1 MiB frame before AUTH make the
// server read no more than its small limit (plus one read) from each —
// what it reads is all it can hold — and each is closed.
func TestBeforeAuthFramesAreSmall(t *testing.T) {
	t.Parallel()
	ln := newCountingListener(t)
	b := startBridgeOn(t, &Options{Tokens: []Token{{Secret: "s3cret"}}}, ln)

	t.Run("refused at the limit", func(t *testing.T) {
		d := dial(t, b.addr)
		d.sendFrame(TypeAuth, SystemTask, 0, "s3cret##voiceid:"+strings.Repeat("x", DefaultMaxFrameBeforeAuth))
		d.expect(TypeStatus, "##ERROR:frame too large: the limit before AUTH is 4096 bytes of payload; closing")
		d.expectClosed()
	})
	t.Run("after AUTH the frame limit is MaxFrame", func(t *testing.T) {
		d := dial(t, b.addr)
		d.sendFrame(TypeAuth, SystemTask, 0, "s3cret##voiceid:big")
		d.expect(TypeStatus, "##INFO:AUTH_OK")
		d.sendFrame(TypeStatus, SystemTask, 0, "##PING"+strings.Repeat(" ", 64<<10))
		d.expect(TypeStatus, "##INFO:PONG")
	})
	ln.mu.Lock()
	first := len(ln.conns)
	ln.mu.Unlock()
	t.Run("1000 connections of 1 MiB", func(t *testing.T) {
		const conns = 1000
		frame := append([]byte("##START\x01"+SystemTask+"0000"), bytes.Repeat([]byte("x"), 1<<20)...)
		frame = append(frame, endMarker...)
		var wg sync.WaitGroup
		for range conns {
			wg.Go(func() {
				nc, err := net.Dial("tcp", b.addr)
				if err != nil {
					t.Error(err)
					return
				}
				defer nc.Close()
				nc.SetDeadline(time.Now().Add(waitLong))
				nc.Write(frame) // fails once the server hangs up
				_, err = io.Copy(io.Discard, nc)
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Error("the server did not close a connection that sent 1 MiB before AUTH")
				}
			})
		}
		wg.Wait()
	})

	// The most the decoder holds under the small limit: a header, the
	// limit, "##END" and one read.
	const bound = headerLen + 2 + DefaultMaxFrameBeforeAuth + len(endMarker) + readSize
	ln.mu.Lock()
	defer ln.mu.Unlock()
	var total, most int64
	flood := ln.conns[first:]
	for _, c := range flood {
		n := c.read.Load()
		total += n
		most = max(most, n)
	}
	t.Logf("%d connections sent 1 MiB each before AUTH; the server read %d KiB in all, at most %d bytes from one", len(flood), total>>10, most)
	if most > int64(bound) {
		t.Errorf("the server read %d bytes from one connection before AUTH, want at most %d", most, bound)
	}
}

// dialFrom dials addr from a local address of the test's choosing, so
// that connections come from "another address" on one machine.
func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dialing from %s: %v", local, err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// TestIdleFloodDoesNotLockOut (issue 31, attack 16): 1,024 connections that
// never authenticate, from another address or from the device's own, do
// not keep a real device out: it connects, authenticates and registers.
func TestIdleFloodDoesNotLockOut(t *testing.T) {
	t.Parallel()
	probe, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("this system has no second loopback address (127.0.0.2) to flood from: %v", err)
	}
	probe.Close()
	for _, tc := range []struct {
		name   string
		tokens []Token
		from   string
	}{
		{"without tokens, flood from another address", nil, "127.0.0.2"},
		{"with tokens, flood from another address", []Token{{Secret: "s3cret"}}, "127.0.0.2"},
		{"with tokens, flood from the device's address", []Token{{Secret: "s3cret"}}, "127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const flood = 1024
			ln := newCountingListener(t)
			b := startBridgeOn(t, &Options{Tokens: tc.tokens}, ln)
			for range flood {
				dialFrom(t, tc.from, b.addr)
			}
			ln.awaitAccepts(t, flood)

			d := dial(t, b.addr)
			if tc.tokens != nil {
				d.sendFrame(TypeAuth, SystemTask, 0, "s3cret##voiceid:hall")
				d.expect(TypeStatus, "##INFO:AUTH_OK")
			}
			d.register("light")
			b.waitTools("light")
		})
	}
}

// TestTokenNamesVoiceIDs (issue 31, attack 17): a device token names the
// voice ids it may register. A holder of the hall's token cannot appear
// as the kitchen.
func TestTokenNamesVoiceIDs(t *testing.T) {
	t.Parallel()
	b := startBridge(t, &Options{Tokens: []Token{
		{Secret: "kitchen-secret", IDs: []string{"kitchen"}},
		{Secret: "hall-secret", IDs: []string{"hall-*", "porch"}},
		{Secret: "any-secret"},
	}})
	refused := func(t *testing.T, auth, want string) {
		t.Helper()
		d := dial(t, b.addr)
		d.sendFrame(TypeAuth, SystemTask, 0, auth)
		d.expect(TypeStatus, want)
		d.expectClosed()
	}
	accepted := func(t *testing.T, auth, tool, provider string) {
		t.Helper()
		d := dial(t, b.addr)
		d.sendFrame(TypeAuth, SystemTask, 0, auth)
		d.expect(TypeStatus, "##INFO:AUTH_OK")
		d.register(tool)
		b.waitTools(tool)
		if got := b.cat.Providers(); len(got) != 1 || got[0] != provider {
			t.Errorf("providers %v, want [%s]", got, provider)
		}
		d.nc.Close()
		b.waitTools()
	}

	t.Run("the hall's token cannot register kitchen", func(t *testing.T) {
		refused(t, "hall-secret##voiceid:kitchen##lang:en##format:pcm",
			`##ERROR:authentication failed: this token may not register voice id "kitchen"; closing`)
		if got := b.cat.Providers(); len(got) != 0 {
			t.Errorf("providers %v after a refused AUTH", got)
		}
	})
	t.Run("a token with ids needs a voice id", func(t *testing.T) {
		refused(t, "hall-secret##lang:en",
			"##ERROR:authentication failed: this token names the voice ids it may register: give one (##voiceid:…); closing")
	})
	t.Run("a pattern is not a prefix", func(t *testing.T) {
		refused(t, "hall-secret##voiceid:hallway", `##ERROR:authentication failed: this token may not register voice id "hallway"`)
	})
	t.Run("each token its own ids", func(t *testing.T) {
		accepted(t, "kitchen-secret##voiceid:kitchen", "kettle", "device-kitchen")
		accepted(t, "hall-secret##voiceid:hall-2", "lamp", "device-hall-2")
		accepted(t, "hall-secret##voiceid:porch", "bell", "device-porch")
	})
	t.Run("a token without ids registers any", func(t *testing.T) {
		accepted(t, "any-secret##voiceid:kitchen", "kettle", "device-kitchen")
	})
}

// TestFrameTrickleCut (issue 31, item 6): a frame that trickles in, a byte
// at a time, is cut at the frame deadline, and before AUTH at the AUTH
// deadline, however often bytes come.
func TestFrameTrickleCut(t *testing.T) {
	t.Parallel()
	trickle := func(d *device, head string) (stop func()) {
		done := make(chan struct{})
		go func() {
			d.nc.Write([]byte(head))
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					if _, err := d.nc.Write([]byte("x")); err != nil {
						return
					}
				}
			}
		}()
		return func() { close(done) }
	}
	t.Run("after register", func(t *testing.T) {
		t.Parallel()
		b := startBridge(t, &Options{FrameTimeout: 300 * time.Millisecond, IdleTimeout: waitLong})
		d := dial(t, b.addr)
		d.register("svc")
		b.waitTools("svc")
		start := time.Now()
		defer trickle(d, "##START\x04task12340000")()
		d.expect(TypeStatus, "##ERROR:a frame took more than 300ms to arrive; closing")
		d.expectClosed()
		if el := time.Since(start); el < 300*time.Millisecond {
			t.Errorf("cut after %v, before the frame deadline", el)
		}
	})
	t.Run("before AUTH", func(t *testing.T) {
		t.Parallel()
		b := startBridge(t, &Options{Tokens: []Token{{Secret: "s3cret"}}, AuthTimeout: 300 * time.Millisecond})
		d := dial(t, b.addr)
		defer trickle(d, "##START\x01000000000000s3cret##voiceid:")()
		d.expect(TypeStatus, "##ERROR:no AUTH within 300ms; closing")
		d.expectClosed()
	})
}

// TestFrameDeadlineIsPerFrame: a device that streams frames back to back,
// so that each read ends inside the next frame, is never cut: each frame
// has its own deadline, though one frame or another is always arriving.
func TestFrameDeadlineIsPerFrame(t *testing.T) {
	t.Parallel()
	// Each frame spends 20 ms in flight, the writer's pause: the answers
	// are read only once the stream has ended, so no round trip (and no
	// reader's turn on a loaded machine) counts against a frame. The
	// deadline is 100 times that, and the stream lasts three deadlines.
	const frameTimeout = 2 * time.Second
	b := startBridge(t, &Options{FrameTimeout: frameTimeout, IdleTimeout: waitLong})
	d := dial(t, b.addr)
	d.register("svc")
	b.waitTools("svc")
	const ping = "##START\x05000000000000##PING##END"
	d.send(ping[:20])
	frames := 0
	for start := time.Now(); ; {
		time.Sleep(20 * time.Millisecond) // the pace of a streaming device, not synchronization
		last := time.Since(start) > 3*frameTimeout
		rest := ping[20:]
		if !last {
			rest += ping[:20] // the next frame begins in the same write
		}
		d.send(rest)
		frames++
		if last {
			break
		}
	}
	for range frames {
		d.expect(TypeStatus, "##INFO:PONG")
	}
}

// TestWaitingRoom: over the per-address cap the newcomer's own address
// loses its oldest; over the cap in all, the address with the most.
func TestWaitingRoom(t *testing.T) {
	t.Parallel()
	var w waitingRoom
	c := func(addr string) *conn { return &conn{addr: addr} }
	a1, a2, a3, b1 := c("a"), c("a"), c("a"), c("b")
	for _, x := range []*conn{a1, a2, b1} {
		if ev := w.enter(x, 4, 2); ev != nil {
			t.Fatalf("evicted %v with room to spare", ev.conn.addr)
		}
	}
	if ev := w.enter(a3, 4, 2); ev == nil || ev.conn != a1 || !a1.evicted {
		t.Fatalf("a third from a: want a's oldest evicted, got %+v", ev)
	}
	c1, d1 := c("c"), c("d")
	if ev := w.enter(c1, 4, 2); ev != nil {
		t.Fatalf("evicted %v with room to spare", ev.conn.addr)
	}
	if ev := w.enter(d1, 4, 2); ev == nil || ev.conn != a2 {
		t.Fatalf("full: want the oldest of a (which holds most) evicted, got %+v", ev)
	}
	w.leave(b1)
	w.leave(b1)
	if len(w.queue) != 3 || w.from["b"] != 0 || w.from["a"] != 1 {
		t.Errorf("after leaving: queue %d, from %v", len(w.queue), w.from)
	}
}

// limitLog is an Options.OnLimit that counts each limit.
type limitLog struct {
	mu   sync.Mutex
	hits map[string]int
}

func (l *limitLog) onLimit(limit string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hits == nil {
		l.hits = map[string]int{}
	}
	l.hits[limit]++
}

func (l *limitLog) count(limit string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hits[limit]
}

// TestLimitsCounted: each connection the listener closes at a limit is
// counted once under the limit's name (the host's
// plughost_limit_hits_total), so an operator sees a flood in the metrics,
// not only in the log; a device that merely goes idle is not a limit.
func TestLimitsCounted(t *testing.T) {
	t.Parallel()
	var l limitLog
	tokens := []Token{{Secret: "s3cret"}}
	b := startBridge(t, &Options{Tokens: tokens, OnLimit: l.onLimit, AuthTimeout: time.Second, IdleTimeout: waitLong})
	big := dial(t, b.addr)
	big.sendFrame(TypeAuth, SystemTask, 0, "s3cret##voiceid:"+strings.Repeat("x", DefaultMaxFrameBeforeAuth))
	big.expect(TypeStatus, "##ERROR:frame too large: the limit before AUTH is 4096 bytes of payload; closing")
	big.expectClosed()

	slow := dial(t, b.addr)
	slow.expect(TypeStatus, "##ERROR:no AUTH within 1s; closing")
	slow.expectClosed()

	// The listener admits one device, and one connection of an address
	// waits at a time (accepted in order: the second evicts the first).
	b = startBridge(t, &Options{Tokens: tokens, OnLimit: l.onLimit, MaxConns: 1, MaxWaitingPerAddress: 1})
	first := dial(t, b.addr)
	second := dial(t, b.addr)
	first.expect(TypeStatus, "##ERROR:too many connections from your address waiting to authenticate (the limit is 1); closing the oldest")
	first.expectClosed()

	second.sendFrame(TypeAuth, SystemTask, 0, "s3cret##voiceid:one")
	second.expect(TypeStatus, "##INFO:AUTH_OK")
	third := dial(t, b.addr)
	third.sendFrame(TypeAuth, SystemTask, 0, "s3cret##voiceid:two")
	third.expect(TypeStatus, "##ERROR:too many devices connected (the limit is 1); closing")
	third.expectClosed()

	for limit, want := range map[string]int{LimitDeviceFrameSize: 1, LimitDeviceTimeout: 1, LimitDevicesWaiting: 1, LimitDevices: 1} {
		if got := l.count(limit); got != want {
			t.Errorf("limit %s counted %d times, want %d (all: %v)", limit, got, want, l.hits)
		}
	}
}
