package wrapped

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/oauthclient"
	"github.com/plughost/plughost/host/wrapped/wire"
)

// dial returns what connects to the declared server: a child process for
// a stdio server, HTTP for a remote one. token is the remote server's
// bearer token ("" for none), h its OAuth handler (nil for none).
func dial(s *declared.Server, token string, h auth.OAuthHandler) dialer {
	if s.Remote() {
		return dialRemote(s, HTTPClient(s, token, h, nil))
	}
	x := expander()
	args := make([]string, len(s.Args))
	for i, a := range s.Args {
		args[i] = x.Replace(a)
	}
	env := make(map[string]string, len(s.Env))
	for k, v := range s.Env {
		env[k] = x.Replace(v)
	}
	cmd := exec.Command(s.Command, args...)
	cmd.Env = childEnv(os.Environ(), env)
	cmd.Dir = x.Replace(s.Cwd)
	if cmd.Dir == "" {
		cmd.Dir = os.Getenv("HOME") // in the sandbox: the plugin's data directory
	}
	cmd.Stderr = os.Stderr // the host logs it under the plugin's name
	return func(_ context.Context, o *wire.Options) (*wire.Conn, error) { return wire.Stdio(cmd, 2*time.Second, o) }
}

// dialRemote connects to the remote server s (type http or sse) over hc.
func dialRemote(s *declared.Server, hc *http.Client) dialer {
	if s.Type == declared.TypeSSE {
		return func(ctx context.Context, o *wire.Options) (*wire.Conn, error) { return wire.SSE(ctx, s.URL, hc, o) }
	}
	return func(_ context.Context, o *wire.Options) (*wire.Conn, error) { return wire.Streamable(s.URL, hc, o) }
}

// expander replaces ${HOME} and ${TMPDIR} in a declaration's args, env
// values and cwd by the plugin's own: in the sandbox, its private data
// directory (kept across restarts) and tmp directory. Nothing else is
// expanded: a declaration means what it says.
func expander() *strings.Replacer {
	return strings.NewReplacer("${HOME}", os.Getenv("HOME"), "${TMPDIR}", os.Getenv("TMPDIR"))
}

// childEnv is the environment of a stdio server: the plugin process's own
// (in the sandbox: the scrubbed one, HOME, TMPDIR and PATH), without what
// is meant for the plugin alone (go-plugin's handshake, plughost's
// variables), plus the declaration's env, which wins.
func childEnv(env []string, add map[string]string) []string {
	out := make([]string, 0, len(env)+len(add))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, over := add[name]; over || strings.HasPrefix(name, "PLUGIN_") || strings.HasPrefix(name, "PLUGHOST_") {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range add {
		out = append(out, k+"="+v)
	}
	return out
}

// HTTPClient is the http.Client of the remote server s: it sends the
// declaration's headers, and the bearer token (when not ""), with every
// request, or authorizes each through the OAuth handler h (when not nil,
// with oauthclient.Transport), through base (nil means
// http.DefaultTransport).
func HTTPClient(s *declared.Server, token string, h auth.OAuthHandler, base http.RoundTripper) *http.Client {
	hd := make(http.Header)
	for k, v := range s.Headers {
		hd.Set(k, v)
	}
	if token != "" {
		hd.Set("Authorization", "Bearer "+token)
	}
	if base == nil {
		base = http.DefaultTransport
	}
	if h != nil {
		base = &oauthclient.Transport{Handler: h, Base: base}
	}
	return &http.Client{Transport: headerTransport{hd, base}}
}

type headerTransport struct {
	header http.Header
	next   http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.header {
		r.Header[k] = v
	}
	return t.next.RoundTrip(r)
}
