package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// Bounds of a bundle's download.
const (
	// MaxBundle bounds an mcpb file downloaded.
	MaxBundle = 256 << 20
	// DefaultDownloadTimeout bounds its download.
	DefaultDownloadTimeout = 5 * time.Minute
)

// DownloadBundle downloads the mcpb file at url into a new temporary
// file in dir, at most max bytes (0: MaxBundle), and checks its SHA-256
// against sha256Hex before returning its path: a file of another digest
// is removed and never returned. The caller removes the file.
func DownloadBundle(ctx context.Context, hc *http.Client, url, sha256Hex string, max int64, dir string) (string, error) {
	if max <= 0 {
		max = MaxBundle
	}
	if err := CheckURL(url); err != nil {
		return "", fmt.Errorf("bundle: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("bundle %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("bundle %s: %s", url, resp.Status)
	}
	if resp.ContentLength > max {
		return "", fmt.Errorf("bundle %s: %d bytes, over the limit of %d", url, resp.ContentLength, max)
	}
	f, err := os.CreateTemp(dir, ".plughost-bundle-*.mcpb")
	if err != nil {
		return "", err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(resp.Body, max+1))
	if err != nil {
		return "", fmt.Errorf("bundle %s: %w", url, err)
	}
	if n > max {
		return "", fmt.Errorf("bundle %s: over the limit of %d bytes", url, max)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sha256Hex {
		return "", fmt.Errorf("bundle %s: %w: its SHA-256 is %s, the registry's fileSha256 %s", url, ErrDigest, got, sha256Hex)
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	ok = true
	return f.Name(), nil
}

// ErrDigest is DownloadBundle's error for a file whose digest is not the
// one the registry gives.
var ErrDigest = errors.New("digest mismatch")
