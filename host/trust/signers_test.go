package trust_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/host/trust"
)

// keygen makes an ed25519 key pair with the real ssh-keygen in dir and
// returns the private key's path and the public key's line.
func keygen(t *testing.T, dir, name string) (key, pub string) {
	t.Helper()
	key = filepath.Join(dir, name)
	sshKeygen(t, "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", key)
	b, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return key, strings.TrimSpace(string(b))
}

// sign signs file with key in namespace ns, as an author does: file.sig.
func sign(t *testing.T, key, ns, file string) {
	t.Helper()
	_ = os.Remove(file + ".sig") // ssh-keygen asks before overwriting
	sshKeygen(t, "-Y", "sign", "-f", key, "-n", ns, file)
}

func sshKeygen(t testing.TB, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Fatal("these tests need OpenSSH's ssh-keygen (apt-get install openssh-client):", err)
	}
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// writeFile writes content to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestVerifySignaturesMadeBySSHKeygen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	alice, alicePub := keygen(t, dir, "alice")
	mallory, _ := keygen(t, dir, "mallory")
	gitOnly, gitOnlyPub := keygen(t, dir, "gitonly")
	expired, expiredPub := keygen(t, dir, "expired")
	signers, err := trust.ParseSigners(strings.NewReader(strings.Join([]string{
		"# the keys we trust",
		"alice@example.com " + alicePub,
		`git@example.com namespaces="git" ` + gitOnlyPub,
		`old@example.com valid-before="20200101" ` + expiredPub,
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)

	tests := map[string]struct {
		prepare func(t *testing.T, plugin string)
		want    error // nil: valid
	}{
		"good": {prepare: func(t *testing.T, p string) { sign(t, alice, trust.Namespace, p) }},
		"bad: the file changed after signing": {prepare: func(t *testing.T, p string) {
			sign(t, alice, trust.Namespace, p)
			if err := os.WriteFile(p, []byte("#!/bin/sh\necho evil\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, want: trust.ErrBadSignature},
		"wrong namespace: a git signature":  {prepare: func(t *testing.T, p string) { sign(t, alice, "git", p) }, want: trust.ErrWrongNamespace},
		"wrong namespace: a file signature": {prepare: func(t *testing.T, p string) { sign(t, alice, "file", p) }, want: trust.ErrWrongNamespace},
		"missing .sig":                      {prepare: func(*testing.T, string) {}, want: trust.ErrNoSignature},
		"untrusted key":                     {prepare: func(t *testing.T, p string) { sign(t, mallory, trust.Namespace, p) }, want: trust.ErrUntrustedKey},
		"trusted key, for git only": {prepare: func(t *testing.T, p string) { sign(t, gitOnly, trust.Namespace, p) },
			want: trust.ErrUntrustedKey},
		"trusted key, expired": {prepare: func(t *testing.T, p string) { sign(t, expired, trust.Namespace, p) }, want: trust.ErrUntrustedKey},
		"garbage in place of .sig": {prepare: func(t *testing.T, p string) {
			writeFile(t, filepath.Dir(p), filepath.Base(p)+".sig", "not a signature")
		},
			want: trust.ErrBadSignature},
		"another file's signature": {prepare: func(t *testing.T, p string) {
			other := writeFile(t, filepath.Dir(p), "other", "#!/bin/sh\necho other\n")
			sign(t, alice, trust.Namespace, other)
			if err := os.Rename(other+".sig", p+".sig"); err != nil {
				t.Fatal(err)
			}
		}, want: trust.ErrBadSignature},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := t.TempDir()
			plugin := writeFile(t, d, "echo", "#!/bin/sh\necho hello\n")
			tc.prepare(t, plugin)
			principal, signed, err := signers.Verify(plugin, plugin+trust.SigSuffix, now)
			if digest, derr := trust.Digest(plugin); err == nil && (derr != nil || signed != digest) {
				t.Fatalf("Verify says it verified %q, the file's digest is %q (%v)", signed, digest, derr)
			}
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("Verify: %v, want a valid signature", err)
			case tc.want == nil && principal != "alice@example.com":
				t.Fatalf("principal %q, want alice@example.com", principal)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Fatalf("Verify: %v, want %v", err, tc.want)
			}
			if err != nil {
				t.Logf("refused as it should be: %v", err)
			}
		})
	}
}

func TestParseSigners(t *testing.T) {
	t.Parallel()
	_, pub := keygen(t, t.TempDir(), "k")
	tests := map[string]struct {
		file    string
		keys    int
		wantErr string
	}{
		"empty":                        {file: "", keys: 0},
		"comments and blank lines":     {file: "# nothing\n\n   \n", keys: 0},
		"one key":                      {file: "a@example.com " + pub, keys: 1},
		"principals list":              {file: "a@example.com,b@example.com " + pub, keys: 1},
		"quoted principals":            {file: `"a@example.com,b@example.com" ` + pub, keys: 1},
		"namespaces":                   {file: `a@example.com namespaces="plughost-plugin,git" ` + pub, keys: 1},
		"validity":                     {file: `a@example.com valid-after="20250101",valid-before="203001021504" ` + pub, keys: 1},
		"two keys":                     {file: "a " + pub + "\nb " + pub + "\n", keys: 2},
		"cert-authority is refused":    {file: "*@example.com cert-authority " + pub, wantErr: "line 1: cert-authority"},
		"an unknown option is refused": {file: "a restrict " + pub, wantErr: `line 1: unknown option "restrict"`},
		"a bad key is refused":         {file: "# c\na ssh-ed25519 AAAAnotbase64!", wantErr: "line 2: key"},
		"principals alone":             {file: "a@example.com", wantErr: "line 1: no key"},
		"a bad date":                   {file: `a valid-before="tomorrow" ` + pub, wantErr: "valid-before"},
		"unmatched quote":              {file: `"a@example.com ` + pub, wantErr: "unmatched quote"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := trust.ParseSigners(strings.NewReader(tc.file))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseSigners: %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Len() != tc.keys {
				t.Fatalf("%d keys, want %d", s.Len(), tc.keys)
			}
		})
	}
}

func TestSignedFile(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		file string
		ok   bool
	}{
		"echo.sig":           {"echo", true},
		"notes.mcp.json.sig": {"notes.mcp.json", true},
		"echo.sig.sig":       {"echo.sig", true},
		"echo":               {"", false},
		"echo.sig~":          {"", false},
		".sig":               {"", false}, // signs no file
		"":                   {"", false},
	}
	for name, want := range tests {
		file, ok := trust.SignedFile(name)
		if file != want.file || ok != want.ok {
			t.Errorf("SignedFile(%q) = %q, %v; want %q, %v", name, file, ok, want.file, want.ok)
		}
	}
}
