package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultURL is the official MCP Registry's.
const DefaultURL = "https://registry.modelcontextprotocol.io"

// Bounds of a registry's answers, and of the documents a file source
// reads.
const (
	// DefaultTimeout bounds one request to a registry, its body read
	// included.
	DefaultTimeout = 30 * time.Second
	// MaxResponse bounds one answer of a registry: a server, or a page
	// of a search.
	MaxResponse = 4 << 20
	// MaxDocuments bounds the server.json documents a file source holds.
	MaxDocuments = 10000
	// MaxSearchResults bounds what a search returns.
	MaxSearchResults = 100
)

// ErrNotFound is a source's error for a server or a version it does not
// have.
var ErrNotFound = errors.New("not found")

// Source is where servers are found: an MCP Registry's API v0.1
// (NewClient), or server.json documents in a file or a directory
// (NewFiles).
type Source interface {
	// Get returns the server name at version ("" or "latest": the
	// latest), validated against the official schema.
	Get(ctx context.Context, name, version string) (*Entry, error)
	// Search returns the latest version of the servers whose name holds
	// query (every server for ""), at most limit (0: MaxSearchResults).
	Search(ctx context.Context, query string, limit int) ([]Entry, error)
	// String is where the source is: its URL, or its path.
	String() string
}

// Open returns the source where names: an https URL (http only for a
// loopback address: the answers say what a host runs), or a file or
// directory of server.json documents. "" is DefaultURL.
func Open(where string, timeout time.Duration) (Source, error) {
	where = strings.TrimSpace(where)
	if where == "" {
		where = DefaultURL
	}
	if strings.Contains(where, "://") {
		if err := CheckURL(where); err != nil {
			return nil, err
		}
		return NewClient(where, timeout), nil
	}
	abs, err := filepath.Abs(where)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("registry %s: neither a URL nor a file or directory of server.json documents: %w", where, err)
	}
	return NewFiles(abs), nil
}

// CheckURL accepts a registry's URL: https, or http to a loopback
// address.
func CheckURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("registry URL %q: %w", s, err)
	}
	switch {
	case u.Scheme == "https" && u.Host != "":
		return nil
	case u.Scheme == "http" && u.Host != "":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
			return nil
		}
		return fmt.Errorf("registry URL %q: http only to a loopback address (what a registry answers decides what this host runs): use https", s)
	}
	return fmt.Errorf("registry URL %q: want https://HOST[/PATH] (or http:// to a loopback address)", s)
}

// SplitRef splits "NAME[@VERSION]" ("io.github.acme/notes@1.2.3");
// version is "" when absent.
func SplitRef(ref string) (name, version string) {
	name, version, _ = strings.Cut(ref, "@")
	return name, version
}
