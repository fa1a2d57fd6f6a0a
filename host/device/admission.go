package device

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"time"
)

// Admission: what a connection may cost before it has proved anything.
//
// A new connection waits to be admitted: with tokens, until its AUTH is
// accepted; without, until its first AUTH, register or TEXT frame. While
// it waits it may send frames of at most Options.MaxFrameBeforeAuth bytes
// (with tokens) and must be admitted within Options.AuthTimeout of
// connecting. The waiting are capped per address and in all; a newcomer
// over a cap evicts a waiting connection rather than being refused: the
// oldest of its own address, or over the cap in all the oldest of the
// address holding the most. A flood of idle connections thus pushes out
// its own first, and a device that authenticates promptly gets in however
// many idle connections are open: to push it out, a cap's worth of newer
// connections must arrive while its AUTH is on the way. Admitted
// connections are capped by
// Options.MaxConns.

// waitingRoom holds the connections not yet admitted, oldest first. The
// server's mutex guards it and the conns' waiting and evicted fields.
type waitingRoom struct {
	queue []*conn
	from  map[string]int // waiting connections by address (addrKey)
}

// eviction is a waiting connection pushed out to make room, and why.
type eviction struct {
	conn *conn
	why  string
}

// enter adds c to the room. When c's address already has perAddress
// connections waiting, the oldest of them is evicted; else when limit are
// waiting, the oldest of the address with the most waiting is. The
// evicted connection is returned for the caller to close outside the
// server's lock.
func (w *waitingRoom) enter(c *conn, limit, perAddress int) *eviction {
	if w.from == nil {
		w.from = map[string]int{}
	}
	var ev *eviction
	switch {
	case w.from[c.addr] >= perAddress:
		i := slices.IndexFunc(w.queue, func(o *conn) bool { return o.addr == c.addr })
		ev = &eviction{w.queue[i], fmt.Sprintf("too many connections from your address waiting to authenticate (the limit is %d); closing the oldest", perAddress)}
	case len(w.queue) >= limit:
		most := 0
		for _, n := range w.from {
			most = max(most, n)
		}
		i := slices.IndexFunc(w.queue, func(o *conn) bool { return w.from[o.addr] == most })
		ev = &eviction{w.queue[i], fmt.Sprintf("too many connections waiting to authenticate (the limit is %d); closing the oldest of the address with the most", limit)}
	}
	if ev != nil {
		w.leave(ev.conn)
		ev.conn.evicted = true
	}
	w.queue = append(w.queue, c)
	w.from[c.addr]++
	c.waiting = true
	return ev
}

// leave takes c out of the room, if it is there.
func (w *waitingRoom) leave(c *conn) {
	if !c.waiting {
		return
	}
	c.waiting = false
	if i := slices.Index(w.queue, c); i >= 0 {
		w.queue = slices.Delete(w.queue, i, i+1)
	}
	if w.from[c.addr]--; w.from[c.addr] <= 0 {
		delete(w.from, c.addr)
	}
}

// addrKey is the address whose connections share the per-address cap: the
// IP of an IPv4 peer, the /64 of an IPv6 one (a single host commonly holds
// a whole /64).
func addrKey(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if ip4 := tcp.IP.To4(); ip4 != nil {
		return ip4.String()
	}
	return tcp.IP.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// admit moves c from the waiting room to the admitted connections. It
// returns why c must close instead: the admitted are at MaxConns, or c
// was evicted meanwhile.
func (s *Server) admit(c *conn) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.evicted {
		return "evicted while waiting to authenticate; closing"
	}
	if s.admitted >= s.opts.MaxConns {
		s.log.Warn("refusing a device: too many devices connected", "remote", c.nc.RemoteAddr().String(), "max", s.opts.MaxConns)
		s.limitHit(LimitDevices)
		return fmt.Sprintf("too many devices connected (the limit is %d); closing", s.opts.MaxConns)
	}
	s.waiting.leave(c)
	s.admitted++
	c.counted = true
	c.admitted.Store(true)
	return ""
}

// evict makes c's read loop end with why: its pending read times out at
// once, and every later one (frameReader checks under the same lock).
func (c *conn) evict(why string) {
	c.s.noteEviction(c, why)
	c.dlmu.Lock()
	defer c.dlmu.Unlock()
	c.evictedWhy = why
	c.nc.SetReadDeadline(time.Unix(1, 0))
}

// evictionWarnEvery spaces the warnings about evicted connections: a flood
// evicts one connection per connection it opens.
const evictionWarnEvery = time.Minute

// noteEviction logs an eviction: each at debug, and at warn the first of
// a minute with how many there were since the last warning.
func (s *Server) noteEviction(c *conn, why string) {
	c.log().Debug("evicting a device connection", "reason", why)
	s.limitHit(LimitDevicesWaiting)
	s.mu.Lock()
	s.evictions++
	n, warn := s.evictions, time.Since(s.evictionWarned) >= evictionWarnEvery
	if warn {
		s.evictions, s.evictionWarned = 0, time.Now()
	}
	s.mu.Unlock()
	if warn {
		s.log.Warn("evicting device connections that did not authenticate", "evicted", n, "latest", c.nc.RemoteAddr().String(), "reason", why)
	}
}

// admits reports whether, without tokens, a frame of type t admits its
// connection: the frames that begin a device's work. STATUS (a ping) does
// not, so an idle connection cannot keep its place by pinging.
func admits(t Type) bool { return t == TypeAuth || t == TypeMCP || t == TypeText }

// auth handles AUTH: TOKEN##voiceid:…##lang:…##format:pcm. With tokens the
// token must be one of them and name the voice id (Token.Allows).
func (c *conn) auth(f Frame) string {
	parts := strings.Split(string(f.Payload), "##")
	secret, voice := parts[0], ""
	for _, p := range parts[1:] {
		if v, ok := strings.CutPrefix(p, "voiceid:"); ok {
			voice = v
		}
	}
	if len(c.s.opts.Tokens) > 0 {
		if c.authed.Load() {
			c.statusError(f.Task, f.Seq, "already authenticated")
			return ""
		}
		tok := matchToken(c.s.opts.Tokens, secret)
		if tok == nil {
			c.log().Info("refusing a device: unknown token")
			c.statusError(f.Task, f.Seq, "authentication failed: unknown token; closing")
			return "authentication failed"
		}
		if !tok.Allows(voice) {
			msg := fmt.Sprintf("authentication failed: this token may not register voice id %q; closing", voice)
			if voice == "" {
				msg = "authentication failed: this token names the voice ids it may register: give one (##voiceid:…); closing"
			}
			c.log().Warn("refusing a device: its token does not name this voice id", "voiceid", voice)
			c.statusError(f.Task, f.Seq, msg)
			return "authentication failed: voice id not named by the token"
		}
		if reason := c.s.admit(c); reason != "" {
			c.statusError(f.Task, f.Seq, reason)
			return reason
		}
	}
	c.mu.Lock()
	registered := c.name != ""
	if !registered {
		c.voice = voice
	}
	c.mu.Unlock()
	if registered {
		c.statusError(f.Task, f.Seq, "AUTH after register: the voice id is ignored")
		return ""
	}
	c.authed.Store(true)
	c.log().Debug("device authenticated", "voiceid", voice)
	c.status0(f.Task, f.Seq, "##INFO:AUTH_OK")
	return ""
}

// deadline is what a read of the connection waits for at most.
type deadline int

const (
	deadlineAdmission deadline = iota // Options.AuthTimeout from the start
	deadlineFrame                     // Options.FrameTimeout from a frame's start
	deadlineIdle                      // Options.IdleTimeout from the last read
)

// frameReader reads the connection for its decoder, setting the read
// deadline before every read: until the device is admitted, the admission
// deadline (counted from the connection's start, or the idle timeout when
// that is sooner); in the middle of a
// frame, the frame deadline (counted from when its first bytes came);
// between frames, the idle timeout. It remembers which one it set, for
// the read loop to say which passed.
type frameReader struct {
	c          *conn
	dec        *Decoder
	frameSince time.Time // when the frame being read began; zero between frames
	last       deadline
}

func (r *frameReader) Read(p []byte) (int, error) {
	c, o := r.c, &r.c.s.opts
	var at time.Time
	switch {
	case !c.admitted.Load():
		r.last, at = deadlineAdmission, c.born.Add(o.AuthTimeout)
		if idle := time.Now().Add(o.IdleTimeout); idle.Before(at) {
			r.last, at = deadlineIdle, idle
		}
	case r.dec.Partial():
		if r.frameSince.IsZero() {
			r.frameSince = time.Now()
		}
		r.last, at = deadlineFrame, r.frameSince.Add(o.FrameTimeout)
	default:
		r.frameSince = time.Time{}
		r.last, at = deadlineIdle, time.Now().Add(o.IdleTimeout)
	}
	c.dlmu.Lock()
	if c.evictedWhy == "" {
		c.nc.SetReadDeadline(at)
	}
	c.dlmu.Unlock()
	return c.nc.Read(p)
}

// timedOut is the STATUS error of a read that passed r's last deadline.
func (r *frameReader) timedOut() string {
	o := &r.c.s.opts
	switch r.last {
	case deadlineAdmission:
		if len(o.Tokens) == 0 {
			return fmt.Sprintf("no AUTH or register within %v; closing", o.AuthTimeout)
		}
		return fmt.Sprintf("no AUTH within %v; closing", o.AuthTimeout)
	case deadlineFrame:
		return fmt.Sprintf("a frame took more than %v to arrive; closing", o.FrameTimeout)
	}
	return fmt.Sprintf("idle for %v; closing", o.IdleTimeout)
}
