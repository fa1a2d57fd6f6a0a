package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/internal/tlsreload"
)

// tlsFlags are serve's --tls-cert and --tls-key: with them every
// listener of serve speaks TLS with that pair (--http HTTPS, with its
// /sse and /metrics; --device-listen TLS; --metrics-listen HTTPS),
// reloaded when the files change (package tlsreload). The configuration
// file has no listener block yet, so they are flags only.
type tlsFlags struct {
	cert, key string
}

func (f *tlsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.cert, "tls-cert", "", "PEM certificate (chain) FILE: --http, --device-listen and --metrics-listen speak TLS "+
		"(reloaded when the file changes); needs --tls-key")
	fs.StringVar(&f.key, "tls-key", "", "PEM private key FILE of --tls-cert")
}

// check says what is wrong with the flags given, in one line: both or
// neither, and only with a listener to secure.
func (f *tlsFlags) check(listeners ...string) error {
	switch {
	case f.cert == "" && f.key == "":
		return nil
	case f.key == "":
		return errors.New("--tls-cert needs --tls-key, the certificate's private key")
	case f.cert == "":
		return errors.New("--tls-key needs --tls-cert, the certificate of the key")
	}
	for _, l := range listeners {
		if l != "" {
			return nil
		}
	}
	return errors.New("--tls-cert secures a listener, and over stdio there is none: give --http, --device-listen or --metrics-listen")
}

// start loads the pair and watches its files; nil when the flags are
// off. f may be nil (commands other than serve).
func (f *tlsFlags) start(log hclog.Logger) (*tlsreload.Reloader, error) {
	if f == nil || f.cert == "" {
		return nil, nil
	}
	r, err := tlsreload.New(f.cert, f.key, &tlsreload.Options{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("--tls-cert, --tls-key: %w", err)
	}
	c, _ := r.GetCertificate(nil)
	log.Info("serving TLS", "cert", f.cert, "subject", c.Leaf.Subject.String(), "serial", c.Leaf.SerialNumber.String(),
		"not_after", c.Leaf.NotAfter)
	return r, nil
}

// tlsConfig is the listeners' TLS configuration; nil without TLS.
func (h *host) tlsConfig() *tls.Config {
	if h.certs == nil {
		return nil
	}
	return h.certs.Config()
}

// scheme is the URL scheme of serve's HTTP listeners.
func (h *host) scheme() string {
	if h.certs == nil {
		return "http"
	}
	return "https"
}

// warnClear warns that a token sent to a listener reachable beyond
// loopback travels in clear, without TLS of serve's own: what is meant
// to keep others out would be readable by whoever sees the traffic.
func (h *host) warnClear(listener, addr string) {
	if h.certs == nil && !loopback(addr) {
		h.log.Warn("tokens travel in clear to "+listener+", reachable from other machines: give --tls-cert and --tls-key, "+
			"or let only a TLS-terminating proxy reach it", "addr", addr)
	}
}
