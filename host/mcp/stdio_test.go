package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
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
				r := newStdio(in, io.Discard, tt.limit)
				var got []string
				for {
					line, err := r.Read()
					if errors.Is(err, ErrMessageTooLarge) {
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
	r := newStdio(huge, io.Discard, limit)
	if _, err := r.Read(); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("Read = %v, want ErrMessageTooLarge", err)
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
	w := newStdio(strings.NewReader(""), &out, 100)
	for _, m := range []string{`{"a":1}`, `{"b":2}`} {
		if err := w.Write([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := out.String(), "{\"a\":1}\n{\"b\":2}\n"; got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}

// FuzzDispatch: whatever a client sends, the server writes only complete,
// valid, single-line JSON-RPC messages, and never panics.
func FuzzDispatch(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"echo","arguments":{"text":"a"},"_meta":{"progressToken":1}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]`,
		`{"jsonrpc":"2.0","\u0069d":"\ud83d\ude00","method":"p\u0069ng","params":{}}`,
		`{"jsonrpc":"2.0","id":-0,"method":"tools/list","params":{"cursor":"page-1"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"a":[{"b":"]}"}],"jsonrpc":"2.0","id":9,"method":"ping"}`,
		`[]`, `{}`, `"`, `[1,`, `{"jsonrpc":"2.0","id":1,"result":{}}`,
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, msg string, batch bool) {
		cat := newFakeCatalog()
		cat.noPark = true // Handle waits for calls: slow must not block
		out := newRecorder()
		s := NewServer(cat, nil).NewSession(out)
		defer s.Close()
		version := "2025-11-25"
		if batch {
			version = "2025-03-26"
		}
		s.Handle(t.Context(), []byte(initMsg(version)), out)
		s.Handle(t.Context(), []byte(msg), out)
		for _, m := range out.get() {
			if strings.ContainsAny(m, "\n\r") || !jsonValid(m) {
				t.Fatalf("for %q the server wrote %q", msg, m)
			}
		}
	})
}

func jsonValid(s string) bool { return json.Valid([]byte(s)) && utf8.ValidString(s) }
