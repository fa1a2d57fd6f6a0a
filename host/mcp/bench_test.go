package mcp

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"testing"

	"github.com/plughost/plughost/host/mcp/internal/mcptest"
)

// benchTransport hands messages over channels; the client learns of each
// response by its length (a benchmark client does not parse).
type benchTransport struct {
	in   chan []byte
	out  chan int
	last []byte // the last response, kept by the first iteration's check
	keep bool
}

func (t *benchTransport) Read() ([]byte, error) {
	b, ok := <-t.in
	if !ok {
		return nil, io.EOF
	}
	return b, nil
}

func (t *benchTransport) Write(msg []byte) error {
	if t.keep {
		t.last = bytes.Clone(msg)
	}
	t.out <- len(msg)
	return nil
}

func startBench(b *testing.B) (*benchTransport, func()) {
	tr := &benchTransport{in: make(chan []byte), out: make(chan int, 64), keep: true}
	done := make(chan error, 1)
	go func() { done <- NewServer(mcptest.Echo{}, nil).Serve(context.Background(), tr) }()
	tr.in <- []byte(mcptest.InitMsg("2025-11-25"))
	<-tr.out
	tr.in <- []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	tr.in <- []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`)
	<-tr.out
	if want := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}`; string(tr.last) != want {
		b.Fatalf("response %s, want %s", tr.last, want)
	}
	tr.keep = false
	return tr, func() {
		close(tr.in)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallEcho is one tools/call round trip at a time through the
// in-memory transport: decode, dispatch, a goroutine for the call, the
// response built and written.
func BenchmarkCallEcho(b *testing.B) {
	tr, stop := startBench(b)
	defer stop()
	msg := []byte(`{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		tr.in <- msg
		<-tr.out
	}
}

// BenchmarkCallEcho16 keeps 16 calls in flight, as a busy client would.
func BenchmarkCallEcho16(b *testing.B) {
	tr, stop := startBench(b)
	defer stop()
	msgs := make([][]byte, 64)
	for i := range msgs {
		msgs[i] = []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`)
	}
	b.ReportAllocs()
	b.ResetTimer()
	inFlight := 0
	for i := 0; i < b.N; i++ {
		if inFlight == 16 {
			<-tr.out
			inFlight--
		}
		tr.in <- msgs[i%len(msgs)]
		inFlight++
	}
	for ; inFlight > 0; inFlight-- {
		<-tr.out
	}
}

// BenchmarkPing is the inline path: decode, answer, write.
func BenchmarkPing(b *testing.B) {
	tr, stop := startBench(b)
	defer stop()
	msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	b.ReportAllocs()
	for b.Loop() {
		tr.in <- msg
		<-tr.out
	}
}
