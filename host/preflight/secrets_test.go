package preflight

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/internal/secretfile"
)

// The embeddings key and the introspection client secret are read as a
// state key file is: a file open to group or others, or larger than
// secretfile.MaxSize, is refused.
func TestSecretFilesChecked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "s3cret\n", 0o600)
	loose := write("open", "s3cret\n", 0o644)
	huge := write("huge", strings.Repeat("x", secretfile.MaxSize+1), 0o600)
	missing := filepath.Join(dir, "missing")
	noenv := func(string) string { return "" }
	for name, read := range map[string]func(path string) (string, error){
		"embeddings key": func(p string) (string, error) {
			return EmbeddingsKey(&config.Embeddings{APIKeyFile: p}, noenv)
		},
		"client secret": func(p string) (string, error) {
			return ClientSecret(&config.Auth{ClientSecretFile: p}, noenv)
		},
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := read(good); err != nil || got != "s3cret" {
				t.Errorf("a 0600 file: %q, %v; want s3cret", got, err)
			}
			for path, want := range map[string]string{loose: "chmod 600", huge: "larger than", missing: "does not exist"} {
				got, err := read(path)
				if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
					t.Errorf("%s: %d bytes, %v; want an error naming it, saying %q", filepath.Base(path), len(got), err, want)
				}
				if err != nil && strings.Contains(err.Error(), "s3cret") {
					t.Errorf("the error shows the secret: %v", err)
				}
			}
		})
	}
}
