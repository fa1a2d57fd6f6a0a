package registry

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client is an MCP Registry's API v0.1 over HTTP(S): every request
// bounded in time (Timeout) and every answer in size (MaxResponse).
type Client struct {
	// Base is the registry's base URL; the API is under Base/v0.1/.
	Base string
	// HTTP does the requests; its Timeout bounds each one.
	HTTP *http.Client
}

// NewClient returns the Client of the registry at base, each request
// bounded by timeout (0: DefaultTimeout).
func NewClient(base string, timeout time.Duration) *Client {
	return &Client{Base: strings.TrimSuffix(base, "/"), HTTP: &http.Client{Timeout: cmp.Or(timeout, DefaultTimeout)}}
}

func (c *Client) String() string { return c.Base }

// serverResponse is GET /v0.1/servers/{name}/versions/{version}'s
// answer, and one item of a list.
type serverResponse struct {
	Server json.RawMessage `json:"server"`
	Meta   struct {
		Official *struct {
			Status   string `json:"status"`
			IsLatest bool   `json:"isLatest"`
		} `json:"io.modelcontextprotocol.registry/official"`
	} `json:"_meta"`
}

// listResponse is GET /v0.1/servers's answer.
type listResponse struct {
	Servers  []serverResponse `json:"servers"`
	Metadata struct {
		NextCursor string `json:"nextCursor"`
	} `json:"metadata"`
}

// Get asks the registry for the server name at version.
func (c *Client) Get(ctx context.Context, name, version string) (*Entry, error) {
	if version == "" {
		version = "latest"
	}
	var r serverResponse
	p := "/v0.1/servers/" + url.PathEscape(name) + "/versions/" + url.PathEscape(version)
	if err := c.get(ctx, p, &r); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("%s@%s: %w in %s", name, version, ErrNotFound, c.Base)
		}
		return nil, err
	}
	e, err := r.entry()
	if err != nil {
		return nil, fmt.Errorf("%s answered %s@%s with a server that %w", c.Base, name, version, err)
	}
	if e.Server.Name != name || version != "latest" && e.Server.Version != version {
		return nil, fmt.Errorf("%s answered %s@%s with another server: %s@%s", c.Base, name, version, e.Server.Name, e.Server.Version)
	}
	return e, nil
}

func (r *serverResponse) entry() (*Entry, error) {
	if len(r.Server) == 0 || string(r.Server) == "null" {
		return nil, errors.New(`is missing (no "server" member)`)
	}
	s, err := Parse(r.Server)
	if err != nil {
		return nil, err
	}
	e := &Entry{Server: *s, Raw: r.Server}
	if o := r.Meta.Official; o != nil {
		e.Status, e.IsLatest = o.Status, o.IsLatest
	}
	return e, nil
}

// Search lists the latest versions of the servers whose name holds
// query, following the registry's cursor until limit.
func (c *Client) Search(ctx context.Context, query string, limit int) ([]Entry, error) {
	if limit <= 0 || limit > MaxSearchResults {
		limit = MaxSearchResults
	}
	var out []Entry
	cursor := ""
	for range MaxSearchResults { // pages: at least one server each
		q := url.Values{"version": {"latest"}, "limit": {strconv.Itoa(min(limit-len(out), 100))}}
		if query != "" {
			q.Set("search", query)
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var r listResponse
		if err := c.get(ctx, "/v0.1/servers?"+q.Encode(), &r); err != nil {
			return nil, err
		}
		for _, it := range r.Servers {
			e, err := it.entry()
			if err != nil {
				return nil, fmt.Errorf("%s listed a server that %w", c.Base, err)
			}
			out = append(out, *e)
		}
		cursor = r.Metadata.NextCursor
		if cursor == "" || len(r.Servers) == 0 || len(out) >= limit {
			break
		}
	}
	return out[:min(len(out), limit)], nil
}

// get GETs path of the API into v: a 404 is ErrNotFound, another status
// an error with the start of the body, an answer over MaxResponse or not
// JSON of v's shape an error saying so.
func (c *Client) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("registry %s: %w (unreachable from here? --registry, or the configuration's registry block, names another: a URL, or a file or directory of server.json documents)", c.Base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponse+1))
	if err != nil {
		return fmt.Errorf("registry %s: reading its answer: %w", c.Base, err)
	}
	if len(body) > MaxResponse {
		return fmt.Errorf("registry %s: an answer over %d bytes to GET %s", c.Base, MaxResponse, path)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return ErrNotFound
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("registry %s: GET %s: %s: %s", c.Base, path, resp.Status, snippet(body))
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("registry %s: GET %s: not an API v0.1 answer: %v (%s)", c.Base, path, err, snippet(body))
	}
	return nil
}

// snippet is the start of a body, for an error.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strconv.Quote(s)
}
