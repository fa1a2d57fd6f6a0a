package stdio

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/internal/jsonrpc"
)

func TestStdioRead(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("b", 100_000) // longer than the 64 KiB buffer
	const tooLarge = "<too large>"
	tests := map[string]struct {
		in    string
		limit int
		want  []string
	}{
		"lines":                  {"a\nb\n", 100, []string{"a", "b"}},
		"CRLF":                   {"a\r\nb\r\n", 100, []string{"a", "b"}},
		"blank lines skipped":    {"\n  \n\t\r\na\n\n", 100, []string{"a"}},
		"no final newline":       {"a\nb", 100, []string{"a", "b"}},
		"longer than the buffer": {big + "\nz\n", 200_000, []string{big, "z"}},
		"exactly the limit":      {"0123456789\nz\n", 10, []string{"0123456789", "z"}},
		"limit with CRLF":        {"0123456789\r\nz\n", 10, []string{"0123456789", "z"}},
		"one over the limit":     {"0123456789A\nz\n", 10, []string{tooLarge, "z"}},
		"far over the limit":     {big + "\nz\n", 1000, []string{tooLarge, "z"}},
		"over, buffer-sized":     {big + "\n" + big + "\nz\n", 99_999, []string{tooLarge, tooLarge, "z"}},
		"over the limit at EOF":  {"z\n" + big, 1000, []string{"z", tooLarge}},
		"tiny limit":             {"{}\n[1]\n", 2, []string{"{}", tooLarge}},
	}
	for name, tt := range tests {
		for _, half := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "", true: "/short reads"}[half], func(t *testing.T) {
				t.Parallel()
				var in io.Reader = strings.NewReader(tt.in)
				if half {
					in = iotest.HalfReader(in)
				}
				r := New(in, io.Discard, tt.limit)
				var got []string
				for {
					line, err := r.Read()
					if errors.Is(err, jsonrpc.ErrTooLarge) {
						got = append(got, tooLarge)
						continue
					}
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, string(line))
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("lines (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestStdioDiscardsWithoutBuffering: a huge line over the limit is skipped
// with memory bounded by the limit, not by the line.
func TestStdioDiscardsWithoutBuffering(t *testing.T) {
	t.Parallel()
	const limit = 100_000
	huge := io.MultiReader(strings.NewReader(`{"x":"`), io.LimitReader(repeatReader('x'), 64<<20), strings.NewReader("\"}\n{}\n"))
	r := New(huge, io.Discard, limit)
	if _, err := r.Read(); !errors.Is(err, jsonrpc.ErrTooLarge) {
		t.Fatalf("Read = %v, want jsonrpc.ErrTooLarge", err)
	}
	if c := cap(r.long); c > 4*limit {
		t.Errorf("kept a %d-byte buffer for a %d-byte limit", c, limit)
	}
	if line, err := r.Read(); err != nil || string(line) != "{}" {
		t.Errorf("next Read = %q, %v; want {}", line, err)
	}
}

type repeatReader byte

func (b repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// TestStdioWrite: one message per line, flushed at once.
func TestStdioWrite(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := New(strings.NewReader(""), &out, 100)
	for _, m := range []string{`{"a":1}`, `{"b":2}`} {
		if err := w.Write([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := out.String(), "{\"a\":1}\n{\"b\":2}\n"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}

// gate is a writer whose first Write waits until open is closed, and which
// records every Write it gets.
type gate struct {
	entered chan struct{} // closed when the first Write starts
	open    chan struct{}
	mu      sync.Mutex
	writes  []string
	err     error
}

func (g *gate) Write(p []byte) (int, error) {
	g.mu.Lock()
	first := len(g.writes) == 0
	g.writes = append(g.writes, string(p))
	err := g.err
	g.mu.Unlock()
	if first {
		close(g.entered)
		<-g.open
	}
	return len(p), err
}

// TestWriteCoalesces: messages written while a write is in progress go out
// together in one write, in order, and their writers do not wait for it.
func TestWriteCoalesces(t *testing.T) {
	t.Parallel()
	g := &gate{entered: make(chan struct{}), open: make(chan struct{})}
	w := New(strings.NewReader(""), g, 100)
	first := make(chan error, 1)
	go func() { first <- w.Write([]byte(`{"n":0}`)) }()
	<-g.entered
	for i := 1; i <= 3; i++ {
		if err := w.Write([]byte(`{"n":` + strconv.Itoa(i) + `}`)); err != nil {
			t.Fatal(err)
		}
	}
	close(g.open)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	want := []string{"{\"n\":0}\n", "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n"}
	if d := cmp.Diff(want, g.writes); d != "" {
		t.Errorf("writes (-want +got):\n%s", d)
	}
}

// TestWriteError: a failed write is reported, to its writer and to every
// later one.
func TestWriteError(t *testing.T) {
	t.Parallel()
	g := &gate{entered: make(chan struct{}), open: make(chan struct{}), err: errors.New("broken pipe")}
	close(g.open)
	w := New(strings.NewReader(""), g, 100)
	for range 2 {
		if err := w.Write([]byte(`{}`)); err == nil || err.Error() != "broken pipe" {
			t.Errorf("Write = %v, want broken pipe", err)
		}
	}
	if len(g.writes) != 1 {
		t.Errorf("%d writes after the first failed, want none", len(g.writes)-1)
	}
}

// TestWriteConcurrent: many writers, every message whole on its own line.
func TestWriteConcurrent(t *testing.T) {
	t.Parallel()
	var out lockedBuffer
	w := New(strings.NewReader(""), &out, 100)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				if err := w.Write([]byte(`{"g":` + strconv.Itoa(g) + `,"i":` + strconv.Itoa(i) + `}`)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 1600 {
		t.Fatalf("%d lines, want 1600", len(lines))
	}
	next := map[int]int{}
	for _, l := range lines {
		var m struct{ G, I int }
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if m.I != next[m.G] {
			t.Fatalf("writer %d: message %d after %d", m.G, m.I, next[m.G]-1)
		}
		next[m.G]++
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
