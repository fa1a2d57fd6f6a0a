package registry

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"
)

// ProbeTimeout bounds ProbeOAuth.
const ProbeTimeout = 10 * time.Second

// ProbeOAuth asks the remote server at url (sending headers) to
// initialize, and reports whether it answers as an OAuth resource
// server does to a client without a token: 401 with a
// WWW-Authenticate naming its resource_metadata (RFC 9728, as MCP's
// authorization specifies). An error is a server not reached.
func ProbeOAuth(ctx context.Context, hc *http.Client, url string, headers map[string]string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"plughost-install","version":"1"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode == http.StatusUnauthorized && strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata"), nil
}
