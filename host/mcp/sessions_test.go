package mcp

import (
	"testing"
)

// Sessions lists an open session with what its transport and client told:
// its id cut to IDPrefix, its caller, its client and protocol once
// initialized, and the calls it has in flight; a closed one is gone.
func TestSessionsSnapshot(t *testing.T) {
	t.Parallel()
	c := newClient(t, clientOptions{})
	c.await("the session to open", func() bool { return c.session.Load() != nil })
	s := c.session.Load()
	s.SetPeer(Peer{SessionID: "0123456789abcdef", Remote: "127.0.0.1:5000", Transport: "streamable-http", Caller: Caller{Subject: "alice"}})
	got := c.srv.Sessions()
	if len(got) != 1 || got[0].Client != "" || got[0].Protocol != "" || got[0].Opened.IsZero() {
		t.Fatalf("Sessions before initialize = %+v, want one without client and protocol, with its opening time", got)
	}
	c.initialize("2025-11-25")
	c.write(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`)
	c.await("the call to park", func() bool { return c.cat.LiveParked() == 1 })
	got = c.srv.Sessions()
	if len(got) != 1 {
		t.Fatalf("Sessions = %+v, want one", got)
	}
	g := got[0]
	if g.ID != "01234567" || g.Transport != "streamable-http" || g.Caller.Subject != "alice" || g.Client != "test/1" ||
		g.Protocol != "2025-11-25" || g.Remote != "127.0.0.1:5000" || g.InFlight != 1 {
		t.Errorf("Sessions()[0] = %+v, want id 01234567, streamable-http, alice, test/1, 2025-11-25, one call in flight", g)
	}
	c.cat.ReleaseOne()
	c.next()
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
	if got := c.srv.Sessions(); len(got) != 0 {
		t.Errorf("Sessions after the session closed = %+v, want none", got)
	}
}
