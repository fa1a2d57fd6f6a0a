package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadTokens: --device-tokens takes ids= after a token; a mistake
// names the file and the line.
func TestReadTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tokens, err := readTokens(write("good", "# tokens\nk1 ids=kitchen\nshared\n"))
	if err != nil || len(tokens) != 2 || tokens[0].Secret != "k1" || len(tokens[0].IDs) != 1 || tokens[0].IDs[0] != "kitchen" {
		t.Fatalf("readTokens = %+v, %v", tokens, err)
	}
	if n := tokensForAnyID(tokens); n != 1 {
		t.Errorf("tokensForAnyID = %d, want 1 (shared)", n)
	}
	bad := write("bad", "k1\nmy secret token\n")
	if _, err := readTokens(bad); err == nil || !strings.Contains(err.Error(), bad+": line 2: after the token only ids=") {
		t.Errorf("readTokens(a token with spaces) = %v, want an error naming the file and line 2", err)
	}
	if _, err := readTokens(write("empty", "# nothing\n")); err == nil || !strings.Contains(err.Error(), "holds no token") {
		t.Errorf("readTokens(no token) = %v", err)
	}
}
