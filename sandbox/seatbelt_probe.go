package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"time"
)

// On macOS, `plughost sandbox probe` tells whether Seatbelt confines a
// plugin on this Mac by trying: it starts plughost itself, in the probe
// mode below, under sandbox-exec with the profile a plugin with the
// default policy gets, and the child tries what that profile must refuse
// (reading and writing outside its grants, connecting to a TCP listener of
// the host) and what it must allow (writing its tmp). The child reports
// each attempt's error; the host judges them (judgeSeatbeltProbe). Both
// halves are portable, and tested here; only their wiring is darwin's.

// seatbeltProbeArg follows StageArg in the probe child's arguments.
const seatbeltProbeArg = "seatbelt-probe"

// probeAttempt is one thing the probe child tried.
type probeAttempt struct {
	// Check names it ("read outside its grants" …).
	Check string `json:"check"`
	// Denied: the attempt failed with a permission error (EPERM, EACCES),
	// what Seatbelt answers.
	Denied bool `json:"denied"`
	// Err is the attempt's error, "" when it succeeded.
	Err string `json:"error,omitempty"`
}

// The probe's checks, and whether Seatbelt must refuse each.
const (
	checkRead    = "read outside its grants"
	checkWrite   = "write outside its grants"
	checkConnect = "connect to the network (allow_net = none)"
	checkTmp     = "write its own tmp"
)

var probeWantDenied = map[string]bool{checkRead: true, checkWrite: true, checkConnect: true, checkTmp: false}

// seatbeltProbeChild is the probe child: args are a file outside its
// grants to read, a file outside them to create, and a TCP address to
// connect to. It writes one JSON line per attempt to w.
func seatbeltProbeChild(args []string, w io.Writer) error {
	if len(args) != 3 {
		return fmt.Errorf("%s: want a file to read, a file to write and a TCP address, got %d arguments", seatbeltProbeArg, len(args))
	}
	attempt := func(check string, err error) probeAttempt {
		a := probeAttempt{Check: check, Denied: errors.Is(err, fs.ErrPermission)}
		if err != nil {
			a.Err = err.Error()
		}
		return a
	}
	_, readErr := os.ReadFile(args[0])
	writeErr := os.WriteFile(args[1], []byte("written by the probe child\n"), 0o600)
	var connErr error
	if c, err := net.DialTimeout("tcp", args[2], 5*time.Second); err != nil {
		connErr = err
	} else {
		c.Close()
	}
	tmpErr := os.WriteFile(filepath.Join(os.TempDir(), "probe"), []byte("ok\n"), 0o600)
	enc := json.NewEncoder(w)
	for _, a := range []probeAttempt{
		attempt(checkRead, readErr), attempt(checkWrite, writeErr), attempt(checkConnect, connErr), attempt(checkTmp, tmpErr),
	} {
		if err := enc.Encode(a); err != nil {
			return err
		}
	}
	return nil
}

// ProbeCheck is one finding of the macOS probe, for people.
type ProbeCheck struct {
	// Check names what the probe child tried.
	Check string `json:"check"`
	// OK: Seatbelt answered as the profile says (refused what it must
	// refuse, allowed what it must allow).
	OK bool `json:"ok"`
	// Result says what happened: "confined", "NOT CONFINED: …",
	// "allowed", "refused: …", or "inconclusive: …" (an error other than
	// a refusal, which says nothing about the sandbox).
	Result string `json:"result"`
}

// judgeSeatbeltProbe reads the probe child's lines (out) and says, for each
// check, whether Seatbelt confined it. wroteOutside is what the host found:
// the file the child was to write outside its grants exists, whatever the
// child said. A check the child did not report is a failure.
func judgeSeatbeltProbe(out []byte, wroteOutside bool) []ProbeCheck {
	got := map[string]probeAttempt{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var a probeAttempt
		if err := dec.Decode(&a); err != nil {
			break
		}
		got[a.Check] = a
	}
	var checks []ProbeCheck
	for _, name := range []string{checkRead, checkWrite, checkConnect, checkTmp} {
		a, ok := got[name]
		c := ProbeCheck{Check: name}
		switch {
		case !ok:
			c.Result = "inconclusive: the probe child did not report it (see its stderr)"
		case name == checkWrite && wroteOutside:
			c.Result = "NOT CONFINED: the file was written"
		case !probeWantDenied[name] && a.Err == "":
			c.OK, c.Result = true, "allowed"
		case !probeWantDenied[name]:
			c.Result = "refused: " + a.Err + " (the profile denies what it must allow: plugins will fail)"
		case a.Denied:
			c.OK, c.Result = true, "confined ("+a.Err+")"
		case a.Err == "":
			c.Result = "NOT CONFINED: it succeeded"
		default:
			c.Result = "inconclusive: " + a.Err
		}
		checks = append(checks, c)
	}
	return checks
}
