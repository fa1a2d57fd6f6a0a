package trust_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/trust"
)

const digestA = "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"

func TestParseFile(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		src     string
		want    map[string]string // plugin → digest
		wantErr string
	}{
		"empty file":     {src: "", want: map[string]string{}},
		"no plugins":     {src: `{"format":1}`, want: map[string]string{}},
		"one approval":   {src: `{"format":1,"plugins":{"echo":{"digest":"` + digestA + `","approved_at":"2026-11-26T09:00:00Z"}}}`, want: map[string]string{"echo": digestA}},
		"a later format": {src: `{"format":3,"plugins":{}}`, wantErr: "format 3, but this plughost reads formats 1 and 2"},
		"no format":      {src: `{"plugins":{}}`, wantErr: "format 0"},
		"not JSON":       {src: `format = 1`, wantErr: "not a trust file"},
		"upper-case hex": {src: `{"format":1,"plugins":{"echo":{"digest":"` + strings.ToUpper(digestA) + `"}}}`, wantErr: `plugin "echo": digest`},
		"another hash":   {src: `{"format":1,"plugins":{"echo":{"digest":"md5:d41d8cd98f00b204e9800998ecf8427e"}}}`, wantErr: `plugin "echo": digest`},
		"a short digest": {src: `{"format":1,"plugins":{"echo":{"digest":"sha256:2cf24d"}}}`, wantErr: `plugin "echo": digest`},
		"format 2 definitions": {src: `{"format":2,"plugins":{"echo":{"digest":"` + digestA + `","definitions":{"tool/echo":{"pin":"sha256/v1:` + strings.Repeat("ab", 32) + `"}}}}}`,
			want: map[string]string{"echo": digestA}},
		"a pin of a later formula": {src: `{"format":2,"plugins":{"echo":{"digest":"` + digestA + `","definitions":{"tool/echo":{"pin":"sha256/v9:xyz"}}}}}`,
			want: map[string]string{"echo": digestA}},
		"a malformed pin": {src: `{"format":2,"plugins":{"echo":{"digest":"` + digestA + `","definitions":{"tool/echo":{"pin":"sha256/v1:AB"}}}}}`,
			wantErr: `plugin "echo": definition "tool/echo": pin`},
		"definitions not an object": {src: `{"format":2,"plugins":{"echo":{"digest":"` + digestA + `","definitions":["tool/echo"]}}}`,
			wantErr: `plugin "echo": definitions`},
		"unknown members": {src: `{"format":1,"plugins":{"echo":{"digest":"` + digestA + `","definitions":{"tool/echo":"sha256:…"}}}}`, want: map[string]string{"echo": digestA}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, err := trust.ParseFile([]byte(tc.src))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseFile: %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for n, e := range f.Plugins {
				got[n] = e.Digest
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("approvals (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUpdate: the file is written 0600, atomically, keeps the members
// this host does not know, and concurrent updates lose nothing.
func TestUpdate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state", "trust.json")
	foreign := `{"format":1,"plugins":{"notes":{"digest":"` + digestA + `","approved_at":"2026-11-26T09:00:00Z","reviewed_by":{"who":"alice"}}}}`
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(foreign), 0o600); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			err := trust.Update(path, func(f *trust.File) error {
				f.Plugins["p"+string(rune('a'+i))] = trust.Entry{Digest: digestA, ApprovedAt: time.Now().UTC()}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	f, err := trust.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Plugins) != 9 {
		t.Errorf("%d approvals, want 9 (8 concurrent updates and the first): %v", len(f.Plugins), f.Plugins)
	}
	var kept bytes.Buffer
	if err := json.Compact(&kept, f.Plugins["notes"].Extra["reviewed_by"]); err != nil || kept.String() != `{"who":"alice"}` {
		t.Errorf("an unknown member was not kept: %q (%v)", kept.String(), err)
	}
	b, _ := os.ReadFile(path)
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil || raw["format"] != float64(trust.FileFormat) {
		t.Errorf("written file: %v %s", err, b)
	}
	temps, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".trust.json.*.tmp"))
	if len(temps) > 0 {
		t.Errorf("temporary files left: %v", temps)
	}
}

func TestDigest(t *testing.T) {
	t.Parallel()
	p := writeFile(t, t.TempDir(), "f", "hello")
	d, err := trust.Digest(p)
	if err != nil {
		t.Fatal(err)
	}
	if d != digestA {
		t.Fatalf("Digest = %s, want %s", d, digestA)
	}
	if _, err := trust.ParseDigest(d); err != nil {
		t.Fatal(err)
	}
}

// TestSHA256Digest: a SHA-256 in hex is written as a digest that
// ParseDigest reads back, as Digest writes a file's.
func TestSHA256Digest(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		sum  string
		want string
		ok   bool // ParseDigest accepts it
	}{
		"a file's":   {strings.TrimPrefix(digestA, "sha256:"), digestA, true},
		"upper case": {strings.ToUpper(strings.TrimPrefix(digestA, "sha256:")), "sha256:" + strings.ToUpper(strings.TrimPrefix(digestA, "sha256:")), false},
		"too short":  {"2cf24d", "sha256:2cf24d", false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := trust.SHA256Digest(tt.sum)
			if d != tt.want {
				t.Fatalf("SHA256Digest(%q) = %q, want %q", tt.sum, d, tt.want)
			}
			sum, err := trust.ParseDigest(d)
			if (err == nil) != tt.ok || (tt.ok && sum != tt.sum) {
				t.Fatalf("ParseDigest(%q) = %q, %v", d, sum, err)
			}
		})
	}
}

// TestDefinitionsRoundTrip: an entry's definitions are written (format 2)
// and read back as they were; a format 1 file's definitions member, of
// no format this host knows, is dropped rather than written back.
func TestDefinitionsRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "trust.json")
	old := `{"format":1,"plugins":{"echo":{"digest":"` + digestA + `","definitions":{"tool/x":"sha256:00"}},"other":{"digest":"` + digestA + `"}}}`
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := trust.Pin(trust.Definition{Kind: trust.KindTool, Name: "add", JSON: json.RawMessage(addTool)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]trust.Pinned{"tool/add": p}
	err = trust.Update(path, func(f *trust.File) error {
		if f.Plugins["echo"].Definitions != nil || f.Plugins["echo"].Extra != nil {
			t.Errorf("format 1 entry read with definitions %v, extra %v", f.Plugins["echo"].Definitions, f.Plugins["echo"].Extra)
		}
		e := f.Plugins["other"]
		e.Definitions = want
		f.Plugins["other"] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := trust.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Format != 2 || f.Plugins["echo"].Definitions != nil {
		t.Errorf("format %d, echo's definitions %v", f.Format, f.Plugins["echo"].Definitions)
	}
	if diff := cmp.Diff(want, f.Plugins["other"].Definitions); diff != "" {
		t.Errorf("definitions read back (-want +got):\n%s", diff)
	}
}
