package gitleaks

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// The embedded rule set is the pinned release's file, byte for byte.
func TestRulesAreThePinnedFile(t *testing.T) {
	sum := sha256.Sum256(Rules)
	if got := hex.EncodeToString(sum[:]); got != SHA256 {
		t.Fatalf("gitleaks.toml's SHA-256 is %s, want %s (gitleaks %s): copy the file unchanged and update both constants", got, SHA256, Version)
	}
	if !strings.Contains(License, "MIT License") || !strings.Contains(License, "Zachary Rice") {
		t.Fatal("LICENSE is not gitleaks' MIT license")
	}
}
