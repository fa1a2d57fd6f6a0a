package device

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzDecoder feeds arbitrary bytes, in reads of arbitrary sizes, to the
// decoder: it must not panic, must return only well-formed frames within
// the limit, must keep its buffer bounded, and every frame must survive
// encoding and decoding again. The seed corpus (testdata/fuzz/FuzzDecoder)
// holds the exchanges of seeds 000 and 001; CI runs it as a normal test.
func FuzzDecoder(f *testing.F) {
	f.Add([]byte("##START\x04task12340000What time is it?##END##START\x03task12340001##END"), uint8(5))
	f.Add([]byte("##START\x06mcp00001[0000]{\"type\":\"register\",\"data\":{\"services\":{}}}##END"), uint8(0))
	const limit = 256
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		d := NewDecoder(&chunkReader{data, int(chunk) + 1}, limit)
		for range len(data) + 2 {
			fr, err := d.Next()
			if errors.Is(err, ErrMalformedFrame) {
				continue
			}
			if err != nil {
				if err != io.EOF && err != io.ErrUnexpectedEOF && !errors.Is(err, ErrFrameTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				break
			}
			if len(fr.Payload) > limit || bytes.Contains(fr.Payload, []byte(endMarker)) || len(fr.Task) != taskLen || fr.Seq < 0 || fr.Seq > 9999 {
				t.Fatalf("bad frame %v", fr)
			}
			enc, err := AppendFrame(nil, fr)
			if err != nil {
				t.Fatalf("re-encoding %v: %v", fr, err)
			}
			back, err := NewDecoder(bytes.NewReader(enc), limit).Next()
			if err != nil || back.Type != fr.Type || back.Task != fr.Task || back.Seq != fr.Seq || !bytes.Equal(back.Payload, fr.Payload) {
				t.Fatalf("round trip of %v gave %v, %v", fr, back, err)
			}
		}
		if c := cap(d.buf); c > 2*(limit+headerLen+2+len(endMarker)+readSize) {
			t.Fatalf("buffer grew to %d bytes", c)
		}
	})
}
