package bundlesig

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPolicy(t *testing.T) {
	p := testPKI(t)
	good := read(t, signedBundle(t, p.leaf, p.intermediate))
	tampered := bytes.Clone(good)
	tampered[len(packed)/2] ^= 1
	roots := []string{p.root.certFile}
	cases := map[string]struct {
		roots   []string
		require bool
		bundle  []byte
		verdict string // accepted with this String(), or
		err     string // refused saying this
	}{
		"unsigned, nothing required":             {bundle: packed, verdict: "unsigned"},
		"unsigned, signatures required":          {roots: roots, require: true, bundle: packed, err: "not signed, and require_signature is set"},
		"signed, roots named":                    {roots: roots, bundle: good, verdict: "signed by CN=Acme Bundles,O=Acme (verified against the trusted roots)"},
		"signed, roots named, required":          {roots: roots, require: true, bundle: good, verdict: "signed by CN=Acme Bundles,O=Acme (verified against the trusted roots)"},
		"signed, no roots: checked, not trusted": {bundle: good, verdict: "signed by CN=Acme Bundles,O=Acme (not verified: no trusted_roots are configured)"},
		"tampered, no roots":                     {bundle: tampered, err: "changed after it was signed"},
		"tampered, roots named":                  {roots: roots, bundle: tampered, err: "changed after it was signed"},
		"signed by another root, roots named":    {roots: []string{p.otherRoot.certFile}, bundle: good, err: "does not chain to a trusted root"},
		"truncated, nothing required":            {bundle: good[:len(good)-1], err: "truncated"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			policy, err := NewPolicy(c.roots, c.require)
			if err != nil {
				t.Fatal(err)
			}
			v, err := policy.Check(c.bundle, time.Now())
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("Check: %v, want an error saying %q", err, c.err)
			case c.err == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case c.err == "" && v.String() != c.verdict:
				t.Fatalf("verdict %q, want %q", v, c.verdict)
			case c.err == "" && !bytes.Equal(v.Archive, packed):
				t.Fatal("the verdict's archive is not the packed bundle")
			}
		})
	}
}

func TestNewPolicyErrors(t *testing.T) {
	p := testPKI(t)
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "roots.txt")
	write(t, notPEM, []byte("not a certificate\n"))
	aKey := filepath.Join(dir, "key.pem")
	write(t, aKey, append(read(t, p.root.certFile), read(t, p.root.keyFile)...))
	cases := map[string]struct {
		roots   []string
		require bool
		err     string
	}{
		"required without roots": {require: true, err: "require_signature needs trusted_roots"},
		"a missing file":         {roots: []string{filepath.Join(dir, "missing.pem")}, err: "no such file"},
		"no certificate":         {roots: []string{notPEM}, err: "holds no PEM certificate"},
		"a key among the roots":  {roots: []string{aKey}, err: `holds a "RSA PRIVATE KEY" PEM block; it must hold only certificates`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := NewPolicy(c.roots, c.require)
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("NewPolicy: %v, want an error saying %q", err, c.err)
			}
		})
	}
}

// FuzzSplit feeds Split bundles around real ones (testdata: a bundle
// `mcpb pack` made and the same signed by `mcpb sign`, 2.1.2): it must
// never panic, and what it accepts must be exactly the input, split in
// two.
func FuzzSplit(f *testing.F) {
	unsigned, signed := read(f, "testdata/hello.mcpb"), read(f, "testdata/hello-signed.mcpb")
	f.Add(unsigned)
	f.Add(signed)
	f.Add(signed[:len(signed)-7])
	f.Add(append(bytes.Clone(signed), "MCPB_SIG_END"...))
	f.Add(signed[len(unsigned):])
	f.Add([]byte("MCPB_SIG_V1\x00\x00\x00\x00MCPB_SIG_END"))
	f.Fuzz(func(t *testing.T, b []byte) {
		archive, sig, err := Split(b)
		switch {
		case err != nil:
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("an error that is not ErrMalformed: %v", err)
			}
		case sig == nil:
			if !bytes.Equal(archive, b) {
				t.Fatal("unsigned, but the archive is not the whole input")
			}
		default:
			if !bytes.Equal(Join(archive, sig), b) {
				t.Fatal("archive and block do not make the input")
			}
			_, _ = CheckIntegrity(archive, sig)
		}
	})
}
