package lane

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/plughost/plughost/internal/pluginpb"
)

// gate is a writer whose first Write waits until released, counting the
// writes.
type gate struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	writes   int
	entered  chan struct{}
	released chan struct{}
}

func (g *gate) Write(p []byte) (int, error) {
	g.mu.Lock()
	g.writes++
	first := g.writes == 1
	g.mu.Unlock()
	if first {
		close(g.entered)
		<-g.released
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.Write(p)
}

func frame(id uint64) *pluginpb.HostFrame {
	return &pluginpb.HostFrame{CallId: id, Msg: &pluginpb.HostFrame_Start{Start: &pluginpb.CallStart{Tool: "echo", Arguments: []byte(`{"text":"hi"}`)}}}
}

// Frames sent while the socket is busy go together in one write, after
// the one in progress, in order.
func TestWriterBatchesWhatQueuesWhileItWrites(t *testing.T) {
	g := &gate{entered: make(chan struct{}), released: make(chan struct{})}
	w := NewWriter(g)
	first := make(chan error)
	go func() { first <- w.Write(KindCall, frame(1)) }()
	<-g.entered
	for id := uint64(2); id <= 11; id++ {
		if err := w.Write(KindCall, frame(id)); err != nil { // queued: the first sender writes it
			t.Fatal(err)
		}
	}
	close(g.released)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if g.writes != 2 {
		t.Errorf("%d writes for 11 frames, want 2 (the first, then the 10 queued meanwhile)", g.writes)
	}
	r := NewReader(&g.buf, 1<<20)
	for id := uint64(1); id <= 11; id++ {
		kind, msg, err := r.Next()
		if err != nil || kind != KindCall {
			t.Fatalf("frame %d: kind %d, %v", id, kind, err)
		}
		var f pluginpb.HostFrame
		if err := proto.Unmarshal(msg, &f); err != nil || !proto.Equal(&f, frame(id)) {
			t.Fatalf("frame %d = %v, %v", id, &f, err)
		}
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Errorf("after the frames: %v, want EOF", err)
	}
}

// A failed write fails that Write and every later one, naming the cause.
func TestWriterKeepsItsError(t *testing.T) {
	a, b := net.Pipe()
	b.Close()
	w := NewWriter(a)
	for range 2 {
		if err := w.Write(KindCall, frame(1)); !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("write on a closed lane: %v, want io.ErrClosedPipe", err)
		}
	}
}

func header(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

// Each way a peer breaks the framing is an error naming it.
func TestReaderRefusesBrokenFraming(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input []byte
		want  error
	}{
		{"oversized length", append(header(1<<20+1), 1), ErrTooLarge},
		{"truncated frame", append(header(10), 1, 2, 3), ErrBroken},
		{"truncated length", []byte{0, 0}, ErrBroken},
		{"empty frame", header(0), ErrBroken},
		{"huge frame cut short", append(header(200<<10), 1), ErrBroken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := NewReader(bytes.NewReader(tc.input), 1<<20).Next()
			if !errors.Is(err, tc.want) {
				t.Errorf("Next = %v, want %v", err, tc.want)
			}
		})
	}
}

// A frame too large for the read buffer is read whole; the kinds are
// passed on for the caller to skip those it does not know.
func TestReaderLargeFramesAndKinds(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	big := &pluginpb.PluginFrame{CallId: 7, Msg: &pluginpb.PluginFrame_Result{Result: bytes.Repeat([]byte("x"), 300<<10)}}
	if err := w.Write(9, &pluginpb.PluginFrame{CallId: 1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(KindCall, big); err != nil {
		t.Fatal(err)
	}
	r := NewReader(&buf, 1<<20)
	if kind, _, err := r.Next(); kind != 9 || err != nil {
		t.Fatalf("first frame: kind %d, %v", kind, err)
	}
	kind, msg, err := r.Next()
	var got pluginpb.PluginFrame
	if kind != KindCall || err != nil || proto.Unmarshal(msg, &got) != nil || !proto.Equal(&got, big) {
		t.Fatalf("large frame: kind %d, %v, equal %v", kind, err, proto.Equal(&got, big))
	}
}

// Index finds the lane a command's environment names among its files.
func TestIndex(t *testing.T) {
	for _, tc := range []struct {
		env   []string
		files int
		want  int
	}{
		{nil, 2, -1},
		{[]string{Env(4)}, 2, 1},
		{[]string{Env(4)}, 1, -1},
		{[]string{Env(3), Env(5)}, 3, 2}, // the last wins
		{[]string{EnvFD + "=x"}, 3, -1},
	} {
		if got := Index(tc.env, tc.files); got != tc.want {
			t.Errorf("Index(%q, %d) = %d, want %d", tc.env, tc.files, got, tc.want)
		}
	}
}

// FromEnv refuses a descriptor that is no stream socket, naming it, and
// unsets the variable either way.
func TestFromEnvRefusesWhatIsNoLane(t *testing.T) {
	for _, v := range []string{"x", "1", "0"} {
		t.Setenv(EnvFD, v)
		if f, err := FromEnv(); f != nil || err == nil || !strings.Contains(err.Error(), EnvFD) {
			t.Errorf("%s=%s: %v, %v; want an error naming it", EnvFD, v, f, err)
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	t.Setenv(EnvFD, strconv.Itoa(int(r.Fd())))
	if f, err := FromEnv(); f != nil || err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("a pipe: %v, %v; want refused as not a socket", f, err)
	}
	if _, ok := os.LookupEnv(EnvFD); ok {
		t.Errorf("%s still set after FromEnv", EnvFD)
	}
}

// TestWriterStalledPeer: a peer that reads nothing fails the write that
// waits for it once stallTimeout passes, with ErrStalled, and every
// sender queued behind it gets the same error instead of waiting for ever.
func TestWriterStalledPeer(t *testing.T) {
	defer func(d time.Duration) { stallTimeout = d }(stallTimeout)
	stallTimeout = 50 * time.Millisecond
	host, plugin, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	defer plugin.Close() // open, never read: the socket's buffer fills
	w := NewWriter(host)
	big := &pluginpb.HostFrame{CallId: 1, Msg: &pluginpb.HostFrame_Arguments{Arguments: &pluginpb.ArgumentsChunk{Data: make([]byte, 256<<10)}}}
	errs := make(chan error, 64)
	for range cap(errs) {
		go func() { errs <- w.Write(KindCall, big) }()
	}
	stalled := 0
	for range cap(errs) {
		if err := <-errs; err != nil {
			if !errors.Is(err, ErrStalled) {
				t.Fatalf("Write = %v, want ErrStalled", err)
			}
			stalled++
		}
	}
	// 16 MiB queued against a socket buffer of a few hundred KiB: most
	// senders find the lane stalled.
	if stalled == 0 {
		t.Fatal("no Write failed though the peer read nothing")
	}
	if err := w.Write(KindCall, big); !errors.Is(err, ErrStalled) {
		t.Errorf("a Write after the stall = %v, want ErrStalled kept", err)
	}
}
