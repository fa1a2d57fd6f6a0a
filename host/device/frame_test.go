package device

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// chunkReader returns its data n bytes per Read.
type chunkReader struct {
	data []byte
	n    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	k := min(r.n, len(p), len(r.data))
	copy(p, r.data[:k])
	r.data = r.data[k:]
	return k, nil
}

// decodeAll decodes every frame of in, read chunk bytes at a time, and
// returns the frames and the error strings in order ("EOF" last when the
// stream ended cleanly).
func decodeAll(in string, chunk, limit int) (frames []Frame, errs []string) {
	d := NewDecoder(&chunkReader{[]byte(in), chunk}, limit)
	for range 1000 {
		f, err := d.Next()
		if err != nil {
			errs = append(errs, err.Error())
			if errors.Is(err, ErrMalformedFrame) {
				continue
			}
			return frames, errs
		}
		frames = append(frames, f)
	}
	panic("decoder loops")
}

func TestDecoder(t *testing.T) {
	t.Parallel()
	text := Frame{Type: TypeText, Task: "task1234", Seq: 0, Payload: []byte("What time is it?")}
	end := Frame{Type: TypeEnd, Task: "task1234", Seq: 1, Payload: []byte{}}
	tests := map[string]struct {
		in     string
		limit  int
		frames []Frame
		errs   []string
	}{
		"seed text task": {
			in:     "##START\x04task12340000What time is it?##END##START\x03task12340001##END",
			frames: []Frame{text, end},
			errs:   []string{"EOF"},
		},
		"bracketed sequence": {
			in:     "##START\x04task1234[0000]What time is it?##END##START\x03task1234[0001]##END",
			frames: []Frame{text, end},
			errs:   []string{"EOF"},
		},
		"bytes before ##START are skipped": {
			in:     "garbage\r\n#####START\x04task12340000What time is it?##END\n\n",
			frames: []Frame{text},
			errs:   []string{"EOF"},
		},
		"a payload ends at the first ##END": {
			in:     "##START\x04task12340000a##END##END",
			frames: []Frame{{Type: TypeText, Task: "task1234", Payload: []byte("a")}},
			errs:   []string{"EOF"},
		},
		"payload may hold # and ##STAR": {
			in:     "##START\x06mcp000019999{\"a\":\"#x##EN\"}##END",
			frames: []Frame{{Type: TypeMCP, Task: "mcp00001", Seq: 9999, Payload: []byte(`{"a":"#x##EN"}`)}},
			errs:   []string{"EOF"},
		},
		"unknown type bytes are frames too": {
			in:     "##START\x09000000000000x##END",
			frames: []Frame{{Type: 9, Task: SystemTask, Payload: []byte("x")}},
			errs:   []string{"EOF"},
		},
		"malformed sequence is skipped, the next frame is read": {
			in:     "##START\x03task1234##END##START\x03task12340001##END",
			frames: []Frame{end},
			errs:   []string{`malformed frame: sequence number "##EN" is not 4 digits`, "EOF"},
		},
		"unclosed bracket": {
			in:   "##START\x03task1234[0001)##END",
			errs: []string{`malformed frame: sequence number "[0001)" is not 4 digits`, "EOF"},
		},
		"ends inside a frame": {
			in:   "##START\x04task12340000What time",
			errs: []string{"unexpected EOF"},
		},
		"ends inside ##START": {
			in:   "##STA",
			errs: []string{"unexpected EOF"},
		},
		"payload at the limit": {
			in:     "##START\x04task12340000" + strings.Repeat("x", 64) + "##END",
			limit:  64,
			frames: []Frame{{Type: TypeText, Task: "task1234", Payload: bytes.Repeat([]byte("x"), 64)}},
			errs:   []string{"EOF"},
		},
		"payload over the limit": {
			in:    "##START\x04task12340000" + strings.Repeat("x", 65) + "##END",
			limit: 64,
			errs:  []string{"frame too large: payload longer than 64 bytes"},
		},
		"endless payload is refused without waiting for ##END": {
			in:    "##START\x04task12340000" + strings.Repeat("x", 100000),
			limit: 64,
			errs:  []string{"frame too large: payload longer than 64 bytes"},
		},
	}
	for name, tt := range tests {
		for _, chunk := range []int{1, 3, 7, 1 << 20} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				frames, errs := decodeAll(tt.in, chunk, tt.limit)
				if diff := cmp.Diff(tt.frames, frames); diff != "" {
					t.Errorf("chunk %d: frames (-want +got):\n%s", chunk, diff)
				}
				if diff := cmp.Diff(tt.errs, errs); diff != "" {
					t.Errorf("chunk %d: errors (-want +got):\n%s", chunk, diff)
				}
			})
		}
	}
}

// TestDecoderStickyErrors: after a frame too large or a read error, every
// call returns the error again.
func TestDecoderStickyErrors(t *testing.T) {
	t.Parallel()
	d := NewDecoder(strings.NewReader("##START\x04task12340000"+strings.Repeat("x", 200)+"##END##START\x03task12340001##END"), 100)
	for range 2 {
		if _, err := d.Next(); !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("Next = %v, want ErrFrameTooLarge", err)
		}
	}
	boom := errors.New("boom")
	d = NewDecoder(iotest.ErrReader(boom), 0)
	for range 2 {
		if _, err := d.Next(); err != boom {
			t.Fatalf("Next = %v, want %v", err, boom)
		}
	}
}

// TestDecoderMemory: neither endless garbage nor an endless frame makes
// the decoder hold more than about the limit.
func TestDecoderMemory(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]io.Reader{
		"garbage": io.LimitReader(repeatReader('#'), 10<<20),
		"frame":   io.MultiReader(strings.NewReader("##START\x04task12340000"), io.LimitReader(repeatReader('x'), 10<<20)),
	} {
		d := NewDecoder(in, 64<<10)
		_, err := d.Next()
		if err == nil {
			t.Fatalf("%s: got a frame", name)
		}
		if c := cap(d.buf); c > 64<<10+2*readSize {
			t.Errorf("%s: buffer grew to %d bytes for a 64 KiB limit", name, c)
		}
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

func TestAppendFrame(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		f    Frame
		want string
		err  string
	}{
		"bare sequence": {
			f:    Frame{Type: TypeText, Task: "task1234", Seq: 0, Payload: []byte("It is 14:30:25 on 22 Jan 2025")},
			want: "##START\x04task12340000It is 14:30:25 on 22 Jan 2025##END",
		},
		"empty payload":      {f: Frame{Type: TypeEnd, Task: "task1234", Seq: 1}, want: "##START\x03task12340001##END"},
		"max sequence":       {f: Frame{Type: TypeStatus, Task: SystemTask, Seq: 9999}, want: "##START\x05000000009999##END"},
		"short task":         {f: Frame{Type: TypeEnd, Task: "t"}, err: `task id "t": want exactly 8 bytes`},
		"sequence 10000":     {f: Frame{Type: TypeEnd, Task: SystemTask, Seq: 10000}, err: "sequence number 10000: want 0 to 9999"},
		"payload with ##END": {f: Frame{Type: TypeText, Task: SystemTask, Payload: []byte("a##ENDb")}, err: `payload contains "##END"`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := AppendFrame(nil, tt.f)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			back, errs := decodeAll(string(got), 1, 0)
			if len(back) != 1 || !bytes.Equal(back[0].Payload, tt.f.Payload) || back[0].Seq != tt.f.Seq || len(errs) != 1 {
				t.Errorf("round trip: %v %v", back, errs)
			}
		})
	}
}

// TestDecoderRaisedLimit: the limit set by SetMaxPayload applies to the
// frames not yet returned, even when their bytes came in the same read as
// the last one returned under the old limit (an AUTH and the register
// after it).
func TestDecoderRaisedLimit(t *testing.T) {
	t.Parallel()
	in := "##START\x01000000000000tok##END##START\x06mcp000010000" + strings.Repeat("x", 101) + "##END"
	d := NewDecoder(strings.NewReader(in), 10)
	if f, err := d.Next(); err != nil || string(f.Payload) != "tok" {
		t.Fatalf("first frame %v, %v", f, err)
	}
	d.SetMaxPayload(1000)
	if f, err := d.Next(); err != nil || len(f.Payload) != 101 {
		t.Fatalf("second frame %v, %v; want its 101 bytes under the raised limit", f, err)
	}
}

// TestDecoderPartial: Partial is true while a frame has begun and not
// ended, false between frames and amid garbage.
func TestDecoderPartial(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	d := NewDecoder(pr, 0)
	next := make(chan error, 1)
	go func() {
		for {
			if _, err := d.Next(); err != nil {
				next <- err
				return
			}
			next <- nil
		}
	}()
	// Each write returns once the decoder has read it; the decoder then
	// parses, finds no frame yet, and blocks on its next read: Partial is
	// read on the pipe's next write, after that parse.
	steps := []struct {
		write   string
		partial bool
	}{
		{"garbage ##ST", false},
		{"ART\x04task1", true},
		{"2340000hello", true},
	}
	for _, s := range steps {
		pw.Write([]byte(s.write))
		pw.Write(nil) // returns after the decoder's next Read began: parse is done
		if got := d.Partial(); got != s.partial {
			t.Errorf("after %q: Partial() = %v, want %v", s.write, got, s.partial)
		}
	}
	pw.Write([]byte("##END"))
	if err := <-next; err != nil {
		t.Fatal(err)
	}
	pw.Write(nil)
	if d.Partial() {
		t.Error("Partial() after the frame ended")
	}
	pw.Close()
}
