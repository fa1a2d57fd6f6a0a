package jsonrpc

import "testing"

// benchMsg is a typical tools/call.
var benchMsg = []byte(`{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{"name":"echo","arguments":{"text":"0123456789012345678901234567890123456789012345678901234567890123"},"_meta":{"progressToken":"t-12345"}}}`)

// BenchmarkDecode is what the host does to every incoming message: Check,
// then Decode.
func BenchmarkDecode(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchMsg)))
	for b.Loop() {
		if Check(benchMsg) != nil {
			b.Fatal("invalid")
		}
		m, err := Decode(benchMsg)
		if err != nil || m.Kind != Request {
			b.Fatal(err)
		}
	}
}
