package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/host/device"
)

// TestDeviceTokenIDs (issue 31, attack 17) runs `plughost serve
// --device-tokens` with a token file naming voice ids: the hall's token
// cannot register kitchen, but can register hall; a token without ids= is
// warned about at start, without showing it; a malformed file stops
// plughost naming the line.
func TestDeviceTokenIDs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "device-tokens")
	os.WriteFile(tokens, []byte("# devices\nhall-s3cret ids=hall\nshared-s3cret\n"), 0o600)
	cmd := exec.Command(bin.plughost, "serve", "--plugins", t.TempDir(), "--workspace", t.TempDir(),
		"--log-level", "debug", "--device-listen", "127.0.0.1:0", "--device-tokens", tokens)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	stderr := newLineBuffer()
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() {
		stdin.Close()
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("plughost did not exit after its stdin closed")
		}
		if t.Failed() {
			t.Logf("plughost stderr:\n%s", stderr)
		}
	}()
	stderr.await(t, "accepting devices")
	m := regexp.MustCompile(`accepting devices: addr=(\S+)`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no device address in the log:\n%s", stderr)
	}
	log := stderr.String()
	if !strings.Contains(log, "device tokens without ids=: a device holding one may register any voice id") || !strings.Contains(log, "tokens=1") {
		t.Errorf("no warning about the one token without ids=:\n%s", log)
	}
	if strings.Contains(log, "s3cret") {
		t.Errorf("the log shows a token:\n%s", log)
	}

	auth := func(payload string) device.Frame {
		t.Helper()
		conn, err := net.Dial("tcp", m[1])
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		b, _ := device.AppendFrame(nil, device.Frame{Type: device.TypeAuth, Task: device.SystemTask, Payload: []byte(payload)})
		conn.Write(b)
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		f, err := device.NewDecoder(conn, 0).Next()
		if err != nil {
			t.Fatalf("AUTH %q: %v", payload, err)
		}
		return f
	}
	if f := auth("hall-s3cret##voiceid:kitchen"); string(f.Payload) != `##ERROR:authentication failed: this token may not register voice id "kitchen"; closing` {
		t.Errorf("the hall's token as kitchen got %v, want refused", f)
	}
	if f := auth("hall-s3cret##voiceid:hall"); string(f.Payload) != "##INFO:AUTH_OK" {
		t.Errorf("the hall's token as hall got %v, want AUTH_OK", f)
	}
	if f := auth("shared-s3cret##voiceid:kitchen"); string(f.Payload) != "##INFO:AUTH_OK" {
		t.Errorf("a token without ids= as kitchen got %v, want AUTH_OK", f)
	}
}

// TestDeviceTokenFileRefused: a token file plughost cannot read as meant
// stops it at start, naming the file and the line.
func TestDeviceTokenFileRefused(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "device-tokens")
	os.WriteFile(tokens, []byte("ok-token\nmy secret token\n"), 0o600)
	cmd := exec.Command(bin.plughost, "serve", "--plugins", t.TempDir(), "--workspace", t.TempDir(),
		"--device-listen", "127.0.0.1:0", "--device-tokens", tokens)
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), tokens+`: line 2: after the token only ids=ID,… may follow, found "secret" (a token cannot contain spaces)`) {
		t.Errorf("plughost with a token containing spaces: %v\n%s", err, out)
	}
}
