// Package tlsreload serves a TLS certificate from a pair of PEM files
// that may be replaced while the server runs, as certificate managers
// (cert-manager, certbot, a Kubernetes secret volume) replace them.
//
// A Reloader loads the pair once in [New], then watches the files'
// directories and loads the pair again when something in them changes:
//
//	r, err := tlsreload.New("/etc/plughost/tls.crt", "/etc/plughost/tls.key", &tlsreload.Options{Logger: log})
//	if err != nil {
//		return err // the first pair must load
//	}
//	defer r.Close()
//	ln = tls.NewListener(ln, r.Config())
//
// Each handshake asks [Reloader.GetCertificate] for the pair in use, so a
// new pair serves the next connection while those already open go on
// with the old one: nothing restarts, no connection drops.
//
// The directories are watched, not the files: a manager writes a new
// file and renames it over the old one, and a Kubernetes secret volume
// swaps a "..data" symlink the files point through; neither is a write
// to the file a watch on the file itself would see. Events are
// debounced (Options.Settle), so that the two renames of a certificate
// and its key count as one change rather than a mismatched pair in
// between. Every event only triggers a comparison: the pair is read
// again, and loaded only if its bytes differ from those of the pair in
// use.
//
// A new pair that does not load (a file missing, or over
// Options.MaxFileSize, or not PEM, or a key that does not match the
// certificate) is refused: the old pair goes on serving and the error is
// logged at WARN, once per distinct broken pair, never with the files'
// contents.
package tlsreload

import (
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/plughost/plughost/internal/dirwatch"
)

// DefaultMaxFileSize is the largest certificate or key file [New] reads
// when Options.MaxFileSize is 0: a chain of a few certificates is a few
// KiB.
const DefaultMaxFileSize = 1 << 20

// DefaultSettle is the quiet time after a change in the watched
// directories before the pair is read again, when Options.Settle is 0.
const DefaultSettle = 100 * time.Millisecond

// ErrTooLarge is returned (wrapped) for a file over Options.MaxFileSize.
var ErrTooLarge = errors.New("file too large")

// Options configure [New]. nil means defaults.
type Options struct {
	// Logger receives a line at INFO for each new pair in use and at
	// WARN for each new pair refused; nil means none.
	Logger hclog.Logger
	// MaxFileSize is the largest certificate or key file read, in bytes;
	// 0 means DefaultMaxFileSize.
	MaxFileSize int64
	// Settle is how long the directories must stay quiet after a change
	// before the pair is read again; 0 means DefaultSettle.
	Settle time.Duration
}

// Reloader holds the pair in use and watches its files. Its methods are
// safe for concurrent use.
type Reloader struct {
	certFile, keyFile string
	opts              Options
	watcher           *dirwatch.Watcher

	mu      sync.RWMutex
	cert    *tls.Certificate
	sum     [sha256.Size]byte // of the files of cert
	refused [sha256.Size]byte // of the last pair refused, logged once
}

// New loads the pair certFile and keyFile, whose error it returns, and
// starts watching their directories. Close stops watching.
func New(certFile, keyFile string, opts *Options) (*Reloader, error) {
	r := &Reloader{certFile: certFile, keyFile: keyFile}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.Logger == nil {
		r.opts.Logger = hclog.NewNullLogger()
	}
	if r.opts.MaxFileSize <= 0 {
		r.opts.MaxFileSize = DefaultMaxFileSize
	}
	if r.opts.Settle <= 0 {
		r.opts.Settle = DefaultSettle
	}
	cert, sum, err := r.load()
	if err != nil {
		return nil, err
	}
	r.cert, r.sum = cert, sum
	r.watcher, err = dirwatch.Start([]string{filepath.Dir(certFile), filepath.Dir(keyFile)}, r.opts.Settle,
		func(err error) { r.opts.Logger.Warn("watching the TLS certificate's files", "error", err) }, r.reload)
	if err != nil {
		return nil, fmt.Errorf("watching the TLS certificate's directory: %w", err)
	}
	return r, nil
}

// Config returns a server configuration that serves the pair in use:
// TLS 1.2 at least, with [AEADSuites] only under TLS 1.2, and the
// certificate of [Reloader.GetCertificate].
func (r *Reloader) Config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, CipherSuites: AEADSuites(), GetCertificate: r.GetCertificate}
}

// AEADSuites are the TLS 1.2 cipher suites a server offers: ECDHE key
// exchange with an AEAD cipher (AES-GCM, ChaCha20-Poly1305), for ECDSA
// and RSA certificates. Go's defaults still accept the CBC suites with
// SHA-1 MACs (TLS_ECDHE_*_WITH_AES_*_CBC_SHA), open to padding-oracle
// and Lucky13-style attacks; a client that offers only those fails the
// handshake. TLS 1.3 suites are all AEAD and not configurable.
func AEADSuites() []uint16 {
	return []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	}
}

// GetCertificate returns the pair in use, whatever the client asks; it
// is a tls.Config's GetCertificate.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cert, nil
}

// Close stops watching; the pair in use goes on serving.
func (r *Reloader) Close() error { return r.watcher.Close() }

// reload loads the pair again if its files' bytes changed, and uses it
// if it loads; else it keeps the pair in use and logs why, once per
// broken pair.
func (r *Reloader) reload() {
	cert, sum, err := r.load()
	r.mu.Lock()
	defer r.mu.Unlock()
	if sum == r.sum || (err != nil && sum == r.refused) {
		return // nothing new, or refused already
	}
	if err != nil {
		r.refused = sum
		r.opts.Logger.Warn("the new TLS certificate was refused: still serving the previous one",
			"cert", r.certFile, "key", r.keyFile, "error", err)
		return
	}
	r.cert, r.sum = cert, sum
	r.opts.Logger.Info("TLS certificate reloaded", "cert", r.certFile,
		"subject", cert.Leaf.Subject.String(), "serial", cert.Leaf.SerialNumber.String(), "not_after", cert.Leaf.NotAfter)
}

// load reads and parses the pair. sum identifies what was found: the
// files' bytes, or the error of a file that could not be read.
func (r *Reloader) load() (_ *tls.Certificate, sum [sha256.Size]byte, _ error) {
	certPEM, err := r.read(r.certFile)
	if err == nil {
		var keyPEM []byte
		if keyPEM, err = r.read(r.keyFile); err == nil {
			return r.parse(certPEM, keyPEM)
		}
	}
	return nil, sha256.Sum256([]byte(err.Error())), err
}

// parse parses a pair read.
func (r *Reloader) parse(certPEM, keyPEM []byte) (_ *tls.Certificate, sum [sha256.Size]byte, _ error) {
	h := sha256.New()
	h.Write(certPEM)
	h.Write([]byte{0}) // PEM never holds a NUL: the boundary is unambiguous
	h.Write(keyPEM)
	h.Sum(sum[:0])
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// crypto/tls's errors name what is wrong, never the key's bytes.
		return nil, sum, fmt.Errorf("%s and %s: %w", r.certFile, r.keyFile, err)
	}
	return &cert, sum, nil
}

// read reads a file of at most MaxFileSize bytes.
func (r *Reloader) read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, r.opts.MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > r.opts.MaxFileSize {
		return nil, fmt.Errorf("%s: %w (over %d bytes)", path, ErrTooLarge, r.opts.MaxFileSize)
	}
	return b, nil
}
