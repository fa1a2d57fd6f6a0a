package serve

import (
	"time"

	"github.com/plughost/plughost/host/bundlesig"
	"github.com/plughost/plughost/host/config"
)

// CheckBundleSignature splits a bundle file's bytes into its zip archive
// and its signature and applies the operator's policy (bundlePolicy) to
// them: a malformed, bad or untrusted signature is always refused; an
// unsigned bundle is accepted unless the operator requires signatures. It
// returns the archive to unpack and what was found of the signer, for
// the record and the log ("unsigned", "signed by … (verified …)").
func CheckBundleSignature(cfg *config.Config, b []byte) (archive []byte, signer string, err error) {
	p, err := bundlePolicy(cfg)
	if err != nil {
		return nil, "", err
	}
	v, err := p.Check(b, time.Now())
	if err != nil {
		return nil, "", err
	}
	return v.Archive, v.String(), nil
}

// bundlePolicy is the signature policy of cfg's trust { bundles { } }
// block: its trusted roots, and whether signatures are required.
func bundlePolicy(cfg *config.Config) (*bundlesig.Policy, error) {
	b := cfg.Trust.Bundles
	return bundlesig.NewPolicy(b.TrustedRoots, b.RequireSignature)
}
