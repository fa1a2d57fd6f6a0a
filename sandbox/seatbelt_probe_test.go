package sandbox

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSeatbeltProbeUnconfined runs the probe child here, with no sandbox
// around it: everything it tries succeeds, and the judge says the three
// refusals are NOT CONFINED and the tmp write allowed, as the probe on a
// Mac whose Seatbelt did nothing would print.
func TestSeatbeltProbeUnconfined(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", t.TempDir())
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	written := filepath.Join(dir, "written")
	var out bytes.Buffer
	if err := seatbeltProbeChild([]string{secret, written, ln.Addr().String()}, &out); err != nil {
		t.Fatal(err)
	}
	_, statErr := os.Stat(written)
	checks := judgeSeatbeltProbe(out.Bytes(), statErr == nil)
	want := map[string]string{
		checkRead: "NOT CONFINED", checkWrite: "NOT CONFINED", checkConnect: "NOT CONFINED", checkTmp: "allowed",
	}
	if len(checks) != len(want) {
		t.Fatalf("checks = %+v", checks)
	}
	for _, c := range checks {
		if !strings.HasPrefix(c.Result, want[c.Check]) || c.OK != (want[c.Check] == "allowed") {
			t.Errorf("%s: %+v, want %q", c.Check, c, want[c.Check])
		}
	}
	if err := seatbeltProbeChild([]string{secret}, &out); err == nil {
		t.Error("one argument accepted")
	}
}

// TestJudgeSeatbeltProbe: a refusal (EPERM, EACCES) is confinement, any
// other error is inconclusive, a missing report fails, a file found
// written outside fails whatever the child said, and a refused tmp write
// says plugins will fail.
func TestJudgeSeatbeltProbe(t *testing.T) {
	lines := `{"check":"read outside its grants","denied":true,"error":"open /x/secret: operation not permitted"}
{"check":"write outside its grants","denied":true,"error":"open /x/written: operation not permitted"}
{"check":"connect to the network (allow_net = none)","denied":false,"error":"dial tcp 127.0.0.1:1: connect: connection refused"}
{"check":"write its own tmp","denied":true,"error":"open /t/probe: operation not permitted"}
`
	got := map[string]ProbeCheck{}
	for _, c := range judgeSeatbeltProbe([]byte(lines), false) {
		got[c.Check] = c
	}
	for check, want := range map[string]struct {
		ok     bool
		prefix string
	}{
		checkRead:    {true, "confined (open /x/secret: operation not permitted)"},
		checkWrite:   {true, "confined"},
		checkConnect: {false, "inconclusive: dial tcp"},
		checkTmp:     {false, "refused: open /t/probe"},
	} {
		if c := got[check]; c.OK != want.ok || !strings.HasPrefix(c.Result, want.prefix) {
			t.Errorf("%s: %+v, want ok=%v %q…", check, c, want.ok, want.prefix)
		}
	}
	for _, c := range judgeSeatbeltProbe([]byte(lines), true) {
		if c.Check == checkWrite && (c.OK || !strings.HasPrefix(c.Result, "NOT CONFINED")) {
			t.Errorf("file written outside, child said denied: %+v", c)
		}
	}
	for _, c := range judgeSeatbeltProbe([]byte("garbage\n"), false) {
		if c.OK || !strings.HasPrefix(c.Result, "inconclusive") {
			t.Errorf("no report: %+v", c)
		}
	}
}

// TestSupportPrintsChecks: `plughost sandbox probe` prints each check.
func TestSupportPrintsChecks(t *testing.T) {
	s := &Support{Platform: "darwin/arm64", Default: &Report{Active: []Layer{LayerRlimits, LayerSeatbelt}, Missing: seatbeltMissing(&Policy{}, "/p")},
		Checks: []ProbeCheck{{Check: checkRead, OK: true, Result: "confined (EPERM)"}}}
	var b bytes.Buffer
	s.Print(&b)
	for _, want := range []string{"active        rlimits,seatbelt", "missing       cgroup-memory: Seatbelt has no memory limit", "check         read outside its grants: confined (EPERM)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in:\n%s", want, b.String())
		}
	}
}
