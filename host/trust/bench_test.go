package trust_test

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/host/trust"
)

// BenchmarkVerify20MB verifies the signature of a 20 MB file (a large Go
// plugin binary), and, for comparison in the same run, computes its
// digest alone (what mode pinned costs when the catalog cache's stat
// match does not spare it):
//
//	go test ./host/trust -run '^$' -bench Verify20MB
func BenchmarkVerify20MB(b *testing.B) {
	dir := b.TempDir()
	key := filepath.Join(dir, "k")
	sshKeygen(b, "-q", "-t", "ed25519", "-N", "", "-f", key)
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		b.Fatal(err)
	}
	plugin := filepath.Join(dir, "plugin")
	data := make([]byte, 20<<20)
	_, _ = rand.Read(data)
	if err := os.WriteFile(plugin, data, 0o755); err != nil {
		b.Fatal(err)
	}
	sshKeygen(b, "-Y", "sign", "-f", key, "-n", trust.Namespace, plugin)
	signers, err := trust.ParseSigners(strings.NewReader("a@example.com " + string(pub)))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("verify", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, _, err := signers.Verify(plugin, plugin+trust.SigSuffix, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("digest", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := trust.Digest(plugin); err != nil {
				b.Fatal(err)
			}
		}
	})
}
