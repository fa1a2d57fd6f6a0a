package serve

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/internal/tlsreload"
)

// CheckTLS says what is wrong with the flags given, in one line: both or
// neither, and only with a listener to secure (listeners: the addresses
// given, "" for one not given).
func CheckTLS(f *TLSOptions, listeners ...string) error {
	switch {
	case f.Cert == "" && f.Key == "":
		return nil
	case f.Key == "":
		return errors.New("--tls-cert needs --tls-key, the certificate's private key")
	case f.Cert == "":
		return errors.New("--tls-key needs --tls-cert, the certificate of the key")
	}
	for _, l := range listeners {
		if l != "" {
			return nil
		}
	}
	return errors.New("--tls-cert secures a listener, and over stdio there is none: give --http, --device-listen or --metrics-listen")
}

// startTLS loads the pair and watches its files; nil when the flags are
// off. f may be nil (commands other than serve).
func startTLS(f *TLSOptions, log hclog.Logger) (*tlsreload.Reloader, error) {
	if f == nil || f.Cert == "" {
		return nil, nil
	}
	r, err := tlsreload.New(f.Cert, f.Key, &tlsreload.Options{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("--tls-cert, --tls-key: %w", err)
	}
	c, _ := r.GetCertificate(nil)
	log.Info("serving TLS", "cert", f.Cert, "subject", c.Leaf.Subject.String(), "serial", c.Leaf.SerialNumber.String(),
		"not_after", c.Leaf.NotAfter)
	return r, nil
}

// tlsConfig is the listeners' TLS configuration; nil without TLS.
func (h *Host) tlsConfig() *tls.Config {
	if h.certs == nil {
		return nil
	}
	return h.certs.Config()
}

// scheme is the URL scheme of serve's HTTP listeners.
func (h *Host) scheme() string {
	if h.certs == nil {
		return "http"
	}
	return "https"
}

// warnClear warns that a token sent to a listener reachable beyond
// loopback travels in clear, without TLS of serve's own: what is meant
// to keep others out would be readable by whoever sees the traffic.
func (h *Host) warnClear(listener, addr string) {
	if h.certs == nil && !loopback(addr) {
		h.log.Warn("tokens travel in clear to "+listener+", reachable from other machines: give --tls-cert and --tls-key, "+
			"or let only a TLS-terminating proxy reach it", "addr", addr)
	}
}
