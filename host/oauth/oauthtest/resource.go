package oauthtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/oauth"
)

// Resource is an MCP endpoint (URL + "/mcp") behind a resource server's
// check of the tokens s issues: a [oauth.Verifier] (signature, issuer,
// audience, expiry, Scopes), then ToolScopes for tools/call. It serves
// its Protected Resource Metadata at the well-known URL of its endpoint;
// a request without a valid token gets 401 naming it, one lacking a scope
// 403 insufficient_scope naming the scopes needed (step-up).
type Resource struct {
	*httptest.Server
	// Endpoint is URL + "/mcp", the resource (the tokens' audience).
	Endpoint string
	v        *oauth.Verifier
	tools    map[string]string // tool → the scope calling it needs on top of Scopes
}

// Protect serves mcp (an MCP handler: go-sdk's StreamableHTTPHandler) as
// a resource of s needing scopes for everything and, for tools/call of a
// tool named in toolScopes, that tool's scope as well. It stops when the
// test ends.
func Protect(t testing.TB, s *Server, mcp http.Handler, scopes []string, toolScopes map[string]string) *Resource {
	r := &Resource{tools: toolScopes}
	r.Server = httptest.NewUnstartedServer(nil)
	r.Endpoint = "http://" + r.Listener.Addr().String() + "/mcp"
	v, err := oauth.New(&oauth.Options{Issuers: []string{s.URL}, Resource: r.Endpoint, Scopes: scopes})
	if err != nil {
		t.Fatal(err)
	}
	r.v = v
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+v.MetadataURL()[len("http://"+r.Listener.Addr().String()):], func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(v.Metadata())
	})
	mux.Handle("/mcp", r.guard(mcp))
	r.Config.Handler = mux
	r.Start()
	t.Cleanup(r.Close)
	return r
}

func (r *Resource) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
		if !ok {
			r.refuse(w, http.StatusUnauthorized, "", "", r.v.Scopes())
			return
		}
		caller, err := r.v.Verify(req.Context(), token)
		switch {
		case errors.Is(err, oauth.ErrInsufficientScope):
			r.refuse(w, http.StatusForbidden, "insufficient_scope", err.Error(), r.v.Scopes())
			return
		case err != nil:
			r.refuse(w, http.StatusUnauthorized, "invalid_token", err.Error(), nil)
			return
		}
		if req.Method == http.MethodPost {
			body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
				if need, ok := r.tools[msg.Params.Name]; ok && !slices.Contains(caller.Scopes, need) {
					r.refuse(w, http.StatusForbidden, "insufficient_scope", "tools/call "+msg.Params.Name+" needs "+need,
						append(r.v.Scopes(), need))
					return
				}
			}
		}
		next.ServeHTTP(w, req)
	})
}

// refuse answers status with the resource's Bearer challenge.
func (r *Resource) refuse(w http.ResponseWriter, status int, code, description string, scopes []string) {
	h := fmt.Sprintf(`Bearer resource_metadata=%q`, r.v.MetadataURL())
	if code != "" {
		h += fmt.Sprintf(`, error=%q`, code)
	}
	if description != "" {
		h += fmt.Sprintf(`, error_description=%q`, strings.ReplaceAll(description, `"`, `'`))
	}
	if len(scopes) > 0 {
		h += fmt.Sprintf(`, scope=%q`, strings.Join(scopes, " "))
	}
	w.Header().Set("WWW-Authenticate", h)
	http.Error(w, http.StatusText(status), status)
}
