package tlsreload

import (
	"bytes"
	"crypto/tls"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/internal/testcert"
)

// logBuffer is a log output a test can await lines of.
type logBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newLogBuffer() *logBuffer { return &logBuffer{changed: make(chan struct{})} }

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	close(b.changed)
	b.changed = make(chan struct{})
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// await waits until substr has been logged n times, for 10 seconds at
// most.
func (b *logBuffer) await(t *testing.T, substr string, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		b.mu.Lock()
		found, changed := strings.Count(b.buf.String(), substr) >= n, b.changed
		b.mu.Unlock()
		if found {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("%q not logged %d times within 10s; log:\n%s", substr, n, b)
		}
	}
}

// serial is the serial number of the certificate r serves.
func serial(t *testing.T, r *Reloader) string {
	t.Helper()
	c, err := r.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	return c.Leaf.SerialNumber.String()
}

func start(t *testing.T, certFile, keyFile string) (*Reloader, *logBuffer) {
	t.Helper()
	out := newLogBuffer()
	r, err := New(certFile, keyFile, &Options{Logger: hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Info}), MaxFileSize: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, out
}

// TestNewRefuses: the first pair must load; New says why it does not.
func TestNewRefuses(t *testing.T) {
	t.Parallel()
	ca := testcert.NewCA(t)
	cert1, key1 := ca.Leaf(t, 1)
	_, key2 := ca.Leaf(t, 2)
	for name, tc := range map[string]struct {
		cert, key []byte // nil: no file
		want      string
		is        error
	}{
		"no certificate file": {nil, key1, "no such file", os.ErrNotExist},
		"no key file":         {cert1, nil, "no such file", os.ErrNotExist},
		"certificate not PEM": {[]byte("hello"), key1, "failed to find any PEM data in certificate input", nil},
		"key not PEM":         {cert1, []byte("hello"), "failed to find any PEM data in key input", nil},
		"key of another cert": {cert1, key2, "private key does not match public key", nil},
		"certificate too big": {bytes.Repeat([]byte("x"), 64<<10+1), key1, "file too large (over 65536 bytes)", ErrTooLarge},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
			for path, b := range map[string][]byte{certFile: tc.cert, keyFile: tc.key} {
				if b != nil {
					os.WriteFile(path, b, 0o600)
				}
			}
			_, err := New(certFile, keyFile, &Options{MaxFileSize: 64 << 10})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error saying %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("New: %v is not %v", err, tc.is)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Errorf("the error shows the key: %v", err)
			}
		})
	}
}

// TestReload: a new pair replacing the files, as a certificate manager
// or a Kubernetes secret volume replaces them, serves from then on, as
// the watcher finds.
func TestReload(t *testing.T) {
	t.Parallel()
	ca := testcert.NewCA(t)
	for name, tc := range map[string]struct {
		// setup writes the first pair, replace the second.
		setup, replace func(t *testing.T, dir string, cert, key []byte)
	}{
		"files renamed over": {
			setup:   func(t *testing.T, dir string, cert, key []byte) { testcert.Write(t, dir, cert, key) },
			replace: func(t *testing.T, dir string, cert, key []byte) { testcert.Write(t, dir, cert, key) },
		},
		"kubernetes ..data symlink swapped": {
			// tls.crt -> ..data/tls.crt, ..data -> ..v1
			setup: func(t *testing.T, dir string, cert, key []byte) {
				os.Mkdir(filepath.Join(dir, "..v1"), 0o700)
				testcert.Write(t, filepath.Join(dir, "..v1"), cert, key)
				os.Symlink("..v1", filepath.Join(dir, "..data"))
				os.Symlink("..data/tls.crt", filepath.Join(dir, "tls.crt"))
				os.Symlink("..data/tls.key", filepath.Join(dir, "tls.key"))
			},
			replace: func(t *testing.T, dir string, cert, key []byte) {
				os.Mkdir(filepath.Join(dir, "..v2"), 0o700)
				testcert.Write(t, filepath.Join(dir, "..v2"), cert, key)
				os.Symlink("..v2", filepath.Join(dir, "..data_tmp"))
				if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
					t.Fatal(err)
				}
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cert, key := ca.Leaf(t, 1)
			tc.setup(t, dir, cert, key)
			r, out := start(t, filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
			if got := serial(t, r); got != "1" {
				t.Fatalf("serial %s, want 1", got)
			}
			cert, key = ca.Leaf(t, 2)
			tc.replace(t, dir, cert, key)
			out.await(t, "TLS certificate reloaded", 1)
			if got := serial(t, r); got != "2" {
				t.Errorf("serial %s after the reload, want 2", got)
			}
			if !strings.Contains(out.String(), "serial=2") {
				t.Errorf("the reload's log line does not name the new serial:\n%s", out)
			}
		})
	}
}

// TestReloadRefused: a new pair that does not load leaves the old one
// serving and is logged at WARN, by the watcher, once however often it
// is read again; a good pair afterwards is taken. Each broken pair is
// one file's change, so that the watcher sees no other pair on the way.
func TestReloadRefused(t *testing.T) {
	t.Parallel()
	ca := testcert.NewCA(t)
	_, otherKey := ca.Leaf(t, 3)
	for name, tc := range map[string]struct {
		file string // in the directory; "" removes tls.key
		b    []byte
		want string
	}{
		"key of another certificate": {"tls.key", otherKey, "private key does not match public key"},
		"certificate not PEM":        {"tls.crt", []byte("not a certificate"), "failed to find any PEM data in certificate input"},
		"key too big":                {"tls.key", bytes.Repeat([]byte("k"), 64<<10+1), "file too large (over 65536 bytes)"},
		"key removed":                {"", nil, "no such file or directory"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cert, key := ca.Leaf(t, 1)
			certFile, keyFile := testcert.Write(t, dir, cert, key)
			r, out := start(t, certFile, keyFile)
			if tc.file == "" {
				os.Remove(filepath.Join(dir, "tls.key"))
			} else {
				testcert.Replace(t, filepath.Join(dir, tc.file), tc.b)
			}
			out.await(t, "[WARN]", 1)
			r.reload() // as another event in the directory would
			r.reload()
			log := out.String()
			if !strings.Contains(log, "the new TLS certificate was refused: still serving the previous one") || !strings.Contains(log, tc.want) {
				t.Errorf("log:\n%s\nwant a WARN saying %q", log, tc.want)
			}
			if n := strings.Count(log, "[WARN]"); n != 1 {
				t.Errorf("%d WARN lines for one broken pair, want 1:\n%s", n, log)
			}
			if strings.Contains(log, "PRIVATE KEY") || strings.Contains(log, "kkkk") {
				t.Errorf("the log shows a file's contents:\n%s", log)
			}
			if got := serial(t, r); got != "1" {
				t.Errorf("serial %s after a refused pair, want 1 still", got)
			}
			cert, key = ca.Leaf(t, 4)
			testcert.Write(t, dir, cert, key)
			r.reload()
			if got := serial(t, r); got != "4" {
				t.Errorf("serial %s after a good pair, want 4", got)
			}
		})
	}
}

// TestConfig: TLS 1.2 at least, the pair of GetCertificate.
func TestConfig(t *testing.T) {
	t.Parallel()
	ca := testcert.NewCA(t)
	cert, key := ca.Leaf(t, 1)
	certFile, keyFile := testcert.Write(t, t.TempDir(), cert, key)
	r, _ := start(t, certFile, keyFile)
	c := r.Config()
	if c.MinVersion != tls.VersionTLS12 {
		t.Errorf("MinVersion %x, want TLS 1.2", c.MinVersion)
	}
	got, err := c.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil || got.Leaf.SerialNumber.Int64() != 1 {
		t.Errorf("GetCertificate = %v, %v", got, err)
	}
}

// TestConfigAEADOnly: a real TLS 1.2 handshake against Config's listener
// succeeds with an AEAD suite and is refused when the client offers only
// CBC suites (issue 31, attack 21: ECDHE-ECDSA-AES128-SHA was accepted).
func TestConfigAEADOnly(t *testing.T) {
	t.Parallel()
	ca := testcert.NewCA(t)
	cert, key := ca.Leaf(t, 1)
	certFile, keyFile := testcert.Write(t, t.TempDir(), cert, key)
	r, _ := start(t, certFile, keyFile)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", r.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				c.(*tls.Conn).Handshake() //nolint:errcheck // the client reports the outcome
				c.Close()
			}()
		}
	}()
	dial := func(suites ...uint16) (uint16, error) {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{
			RootCAs: ca.Pool, ServerName: "localhost", MaxVersion: tls.VersionTLS12, CipherSuites: suites})
		if err != nil {
			return 0, err
		}
		defer c.Close()
		return c.ConnectionState().CipherSuite, nil
	}
	for _, cbc := range []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
	} {
		if got, err := dial(cbc); err == nil {
			t.Errorf("TLS 1.2 with only %s: handshake succeeded with %s, want refused",
				tls.CipherSuiteName(cbc), tls.CipherSuiteName(got))
		}
	}
	got, err := dial(tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)
	if err != nil || got != tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 {
		t.Errorf("TLS 1.2 offering CBC and GCM: %s, %v; want AES-128-GCM", tls.CipherSuiteName(got), err)
	}
}
