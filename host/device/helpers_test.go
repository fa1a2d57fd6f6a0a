package device

import (
	"context"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/catalog"
	"github.com/plughost/plughost/host/tool"
)

// waitLong bounds every wait for an event in these tests: long enough for
// a loaded machine, short enough to fail rather than hang.
const waitLong = 30 * time.Second

// bridge is a device server on a real TCP socket publishing into a real
// catalog.
type bridge struct {
	t    *testing.T
	srv  *Server
	cat  *catalog.Catalog
	addr string
}

// startBridge serves devices on 127.0.0.1:0 until the test ends, then
// checks that Serve returned.
func startBridge(t *testing.T, opts *Options) *bridge {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startBridgeOn(t, opts, ln)
}

// startBridgeOn is startBridge on a listener of the test's.
func startBridgeOn(t *testing.T, opts *Options, ln net.Listener) *bridge {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	// A test that needs the catalog's timing of its own passes its catalog
	// as the Publisher; the bridge then reads that one.
	cat, own := o.Publisher.(*catalog.Catalog)
	if !own {
		cat = catalog.New(&catalog.Options{Logger: hclog.NewNullLogger()})
		t.Cleanup(cat.Close)
	}
	if o.Publisher == nil {
		o.Publisher = cat
	}
	if testing.Verbose() && o.Logger == nil {
		o.Logger = hclog.New(&hclog.LoggerOptions{Name: "device", Level: hclog.Debug})
	}
	srv, err := NewServer(&o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve = %v, want nil after the context ended", err)
			}
		case <-time.After(waitLong):
			t.Error("Serve did not return after the context ended")
		}
	})
	return &bridge{t: t, srv: srv, cat: cat, addr: ln.Addr().String()}
}

// waitTools waits until the catalog exposes exactly the given names.
func (b *bridge) waitTools(want ...string) {
	b.t.Helper()
	slices.Sort(want)
	deadline := time.Now().Add(waitLong)
	changed := make(chan struct{}, 1)
	cancel := b.cat.Subscribe(func(tool.Change) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	defer cancel()
	for {
		var got []string
		for _, e := range b.cat.Exposed() {
			got = append(got, e.ExposedName)
		}
		if slices.Equal(got, want) {
			return
		}
		select {
		case <-changed:
		case <-time.After(time.Until(deadline)):
			b.t.Fatalf("exposed tools %v, want %v", got, want)
		}
	}
}

// device is a scripted device: a real TCP connection and a decoder.
type device struct {
	t   *testing.T
	nc  net.Conn
	dec *Decoder
}

func dial(t *testing.T, addr string) *device {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &device{t: t, nc: nc, dec: NewDecoder(nc, 0)}
}

// send writes raw bytes. When the server has closed the connection, the
// failure says what the server wrote last (its STATUS error says why).
func (d *device) send(raw string) {
	d.t.Helper()
	if _, err := d.nc.Write([]byte(raw)); err != nil {
		d.t.Fatalf("%v; the server's last frame: %s", err, d.lastFrame())
	}
}

// lastFrame reads what the server wrote before closing, for a failure's
// message.
func (d *device) lastFrame() string {
	d.nc.SetReadDeadline(time.Now().Add(time.Second))
	last := "none"
	for {
		f, err := d.dec.Next()
		if err != nil {
			return last
		}
		last = f.String()
	}
}

// sendFrame encodes and writes a frame.
func (d *device) sendFrame(typ Type, task string, seq int, payload string) {
	d.t.Helper()
	b, err := AppendFrame(nil, Frame{Type: typ, Task: task, Seq: seq, Payload: []byte(payload)})
	if err != nil {
		d.t.Fatal(err)
	}
	d.send(string(b))
}

// next reads the next frame from the server.
func (d *device) next() Frame {
	d.t.Helper()
	d.nc.SetReadDeadline(time.Now().Add(waitLong))
	f, err := d.dec.Next()
	if err != nil {
		d.t.Fatalf("reading a frame from the server: %v", err)
	}
	return f
}

// expect reads the next frame and checks its type and payload prefix.
func (d *device) expect(typ Type, payloadPrefix string) Frame {
	d.t.Helper()
	f := d.next()
	if f.Type != typ || !strings.HasPrefix(string(f.Payload), payloadPrefix) {
		d.t.Fatalf("got frame %v, want a %v frame starting %q", f, typ, payloadPrefix)
	}
	return f
}

// expectClosed waits for the server to close the connection.
func (d *device) expectClosed() {
	d.t.Helper()
	d.nc.SetReadDeadline(time.Now().Add(waitLong))
	f, err := d.dec.Next()
	if err == nil {
		d.t.Fatalf("got frame %v, want the connection closed", f)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		d.t.Fatal("the server did not close the connection")
	}
}

// register sends a register frame for the named services, each with a
// string parameter "x".
func (d *device) register(names ...string) {
	d.t.Helper()
	svcs := map[string]any{}
	for _, n := range names {
		svcs[n] = map[string]any{
			"description": "service " + n,
			"parameters": map[string]any{
				"type":       "object",
				"properties": map[string]any{"x": map[string]any{"type": "string"}},
			},
		}
	}
	b, _ := json.Marshal(map[string]any{"type": "register", "data": map[string]any{"services": svcs}})
	d.sendFrame(TypeMCP, "mcp00001", 0, string(b))
}

// serveCalls answers every call frame with success and data produced by
// answer, until the connection closes. It returns when it does.
func (d *device) serveCalls(answer func(method string, params json.RawMessage) string) {
	for {
		f, err := d.dec.Next()
		if err != nil {
			return
		}
		if f.Type != TypeMCP {
			continue
		}
		var m struct {
			Data callPayload `json:"data"`
		}
		if json.Unmarshal(f.Payload, &m) != nil {
			continue
		}
		res, _ := json.Marshal(map[string]any{"type": "result", "data": map[string]any{
			"call_id": m.Data.CallID,
			"result":  map[string]any{"success": true, "data": answer(m.Data.Method, m.Data.Params)},
		}})
		b, _ := AppendFrame(nil, Frame{Type: TypeMCP, Task: f.Task, Payload: res})
		if _, err := d.nc.Write(b); err != nil {
			return
		}
	}
}
