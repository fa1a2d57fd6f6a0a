package lane

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"google.golang.org/protobuf/types/known/emptypb"
)

// FuzzLaneReader feeds the reader any bytes a plugin could write: it
// never panics, never returns a frame over its bound, and ends with EOF
// only at a frame's boundary; any other end is ErrBroken or ErrTooLarge.
// Whatever frames it read, written again by a Writer, read back the same.
func FuzzLaneReader(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 1, 8, 1})
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Add([]byte{0, 0, 0, 9, 1, 8})
	f.Add([]byte{0, 0})
	const max = 1 << 16
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), max)
		type got struct {
			kind byte
			msg  []byte
		}
		var frames []got
		for {
			kind, msg, err := r.Next()
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrBroken) && !errors.Is(err, ErrTooLarge) {
					t.Fatalf("Next: %v, want EOF, ErrBroken or ErrTooLarge", err)
				}
				break
			}
			if len(msg)+1 > max {
				t.Fatalf("a frame of %d bytes, over the bound %d", len(msg)+1, max)
			}
			frames = append(frames, got{kind, bytes.Clone(msg)})
		}
		var buf bytes.Buffer
		w := NewWriter(&buf)
		for _, fr := range frames {
			if err := w.Write(fr.kind, rawMessage(fr.msg)); err != nil {
				t.Fatal(err)
			}
		}
		r = NewReader(&buf, max)
		for i, fr := range frames {
			kind, msg, err := r.Next()
			if err != nil || kind != fr.kind || !bytes.Equal(msg, fr.msg) {
				t.Fatalf("frame %d read back as kind %d %q (%v), want kind %d %q", i, kind, msg, err, fr.kind, fr.msg)
			}
		}
	})
}

// rawMessage is a message that marshals to b, whatever b is: its unknown
// fields.
func rawMessage(b []byte) *emptypb.Empty {
	m := &emptypb.Empty{}
	m.ProtoReflect().SetUnknown(b)
	return m
}
