package manager

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/plughost/plughost/host/trust"
)

// swapDuringCheck is a Trust that, on its first Check, renames a signed
// file (and its signature) over the plugin's path before the checker
// reads it: the moment between the manager hashing the file it opened and
// the checker verifying the signature of the file at the path.
type swapDuringCheck struct {
	Trust
	once sync.Once
	swap func()
}

func (s *swapDuringCheck) Check(name, path, digest string) trust.Verdict {
	s.once.Do(s.swap)
	return s.Trust.Check(name, path, digest)
}

// TestSignedPluginSwappedDuringItsCheckNeverRuns: in mode signed, an
// unsigned binary whose path gets a validly signed file between the
// manager opening it and the checker verifying the signature (issue 31,
// what the exec fix left open: the signature was verified over the path,
// the opened file would run) is refused, naming both digests; the signed
// file then runs, found by its own change.
func TestSignedPluginSwappedDuringItsCheckNeverRuns(t *testing.T) {
	t.Parallel()
	dir, keys := t.TempDir(), t.TempDir()
	key, signers := newSigner(t, keys)
	path := filepath.Join(dir, "tp")
	copyFile(t, pluginV1, path, 0o755) // unsigned
	staged := filepath.Join(keys, "tp")
	copyFile(t, pluginV2, staged, 0o755)
	sshKeygen(t, "-Y", "sign", "-f", key, "-n", trust.Namespace, staged)
	unsigned, err := trust.Digest(path)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := trust.Digest(staged)
	if err != nil {
		t.Fatal(err)
	}

	checker, err := trust.New(&trust.Options{Mode: trust.ModeSigned, AllowedSigners: signers})
	if err != nil {
		t.Fatal(err)
	}
	swapper := &swapDuringCheck{Trust: checker, swap: func() {
		for _, p := range []string{staged + trust.SigSuffix, staged} {
			if err := os.Rename(p, filepath.Join(dir, filepath.Base(p))); err != nil {
				t.Error(err)
			}
		}
	}}
	events := make(eventLog, 64)
	h := start(t, dir, Options{Trust: swapper, OnEvent: events.onEvent})
	h.ready()
	// The status moves on at once (the rename is a change of the file),
	// so the refusal is read from its event and its log line.
	events.await(t, EventQuarantined)
	if e := h.logs.await(t, "test", "plugin file changed while its signature was checked: not started"); e["signed"] != signed || e["opened"] != unsigned {
		t.Fatalf("refusal logged as %v, want the signed file's digest %s and the opened file's %s", e, signed, unsigned)
	}

	e := h.expect("set", "tp")
	if !slices.Contains(e.tools, "variant_v2") || slices.Contains(e.tools, "variant_v1") {
		t.Fatalf("tools %v: want the signed file's (variant_v2) only", e.tools)
	}
	if st := h.status("tp"); st.Trust.State != trust.StateSigned || st.Trust.Digest != signed {
		t.Fatalf("after its change: %+v, want the signed file running", st.Trust)
	}
}
