package oauthclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/oauth2"
)

// Stored serves a login's tokens (a [Record] at Path, written by
// [Login]) to a running host, as an [auth.OAuthHandler]:
//
//   - every request gets the stored access token; the first request
//     within RefreshBefore of its expiry refreshes it (the refresh token
//     grant, with the resource), and the new tokens are written back to
//     Path, so that the next start begins with them;
//   - the file is read again whenever it changed on disk, so that a
//     `plughost login NAME` run while the host serves takes effect at the
//     next request, without a restart;
//   - a 401 is answered by one forced refresh (the server may have revoked
//     the access token early), or, when the refused token is older than the
//     stored one, by the stored one; a 403 insufficient_scope adds the scopes the
//     server wants to the record's Wanted, for the next login to ask for,
//     and fails the request: only an operator can grant more.
//
// Errors that only a login cures wrap [ErrLoginNeeded] and say to run
// `plughost login NAME`. It is safe for concurrent use.
type Stored struct {
	// Name is the declared server's (for the messages); ServerURL its
	// endpoint, which the record must have been made for.
	Name, ServerURL string
	// Path is the record's file.
	Path string
	// ClientSecret is a pre-registered client's secret, "" for none (a
	// registered client's is in the record).
	ClientSecret string
	// HTTPClient reaches the token endpoint; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu   sync.Mutex
	rec  *Record
	seen fileStamp
}

var _ auth.OAuthHandler = (*Stored)(nil)

// fileStamp tells whether a file changed since it was read.
type fileStamp struct {
	mod  time.Time
	size int64
}

// TokenSource implements auth.OAuthHandler: s itself.
func (s *Stored) TokenSource(context.Context) (oauth2.TokenSource, error) { return s, nil }

// Token implements oauth2.TokenSource: the stored access token, refreshed
// when it expires within RefreshBefore.
func (s *Stored) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return nil, err
	}
	if exp := s.rec.Token.Expiry; exp.IsZero() || s.now().Add(RefreshBefore).Before(exp) {
		return s.rec.Token, nil
	}
	if err := s.refresh(); err != nil {
		return nil, err
	}
	return s.rec.Token, nil
}

// load reads the record when the file changed since it was last read.
func (s *Stored) load() error {
	st, err := os.Stat(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: no login for %s yet: run `plughost login %s`", ErrLoginNeeded, s.Name, s.Name)
	}
	if err != nil {
		return err
	}
	stamp := fileStamp{mod: st.ModTime(), size: st.Size()}
	if s.rec != nil && stamp == s.seen {
		return nil
	}
	rec, err := ReadRecord(s.Path)
	if err != nil {
		return fmt.Errorf("%w: %v: run `plughost login %s`", ErrLoginNeeded, err, s.Name)
	}
	if rec.Server != s.ServerURL {
		return fmt.Errorf("%w: the login stored for %s is for %s, not %s: run `plughost login %s`", ErrLoginNeeded, s.Name, rec.Server, s.ServerURL, s.Name)
	}
	s.rec, s.seen = rec, stamp
	return nil
}

// refresh trades the refresh token for new tokens and writes them back.
func (s *Stored) refresh() error {
	rec := s.rec
	if rec.Token.RefreshToken == "" {
		return fmt.Errorf("%w: the login for %s expired at %s and has no refresh token: run `plughost login %s`",
			ErrLoginNeeded, s.Name, rec.Token.Expiry.UTC().Format(time.RFC3339), s.Name)
	}
	secret := rec.ClientSecret
	if secret == "" {
		secret = s.ClientSecret
	}
	cfg := &oauth2.Config{ClientID: rec.ClientID, ClientSecret: secret,
		Endpoint: oauth2.Endpoint{TokenURL: rec.TokenURL, AuthStyle: rec.AuthStyle}}
	hc := s.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	if rec.Resource != "" {
		hc = withResource(hc, rec.TokenURL, rec.Resource)
	}
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), oauth2.HTTPClient, hc), TokenTimeout)
	defer cancel()
	tok, err := cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: rec.Token.RefreshToken}).Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			return fmt.Errorf("%w: refreshing the login for %s at %s: %v: run `plughost login %s`", ErrLoginNeeded, s.Name, rec.TokenURL, explain(err), s.Name)
		}
		return fmt.Errorf("refreshing the login for %s at %s: %v", s.Name, rec.TokenURL, explain(err))
	}
	next := *rec
	next.Token = tok
	if g := grantedScopes(tok); g != nil {
		next.Scopes = g
	}
	if err := next.Write(s.Path); err != nil {
		// The new tokens serve this process; the next start refreshes again
		// (or, if the old refresh token was rotated away, needs a login).
		return fmt.Errorf("refreshed the login for %s but could not store it: %v", s.Name, err)
	}
	s.rec = &next
	if st, err := os.Stat(s.Path); err == nil {
		s.seen = fileStamp{mod: st.ModTime(), size: st.Size()}
	}
	return nil
}

// Authorize implements auth.OAuthHandler.
func (s *Stored) Authorize(_ context.Context, req *http.Request, resp *http.Response) error {
	defer drain(resp)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return err
	}
	if resp.StatusCode == http.StatusUnauthorized && req.Header.Get("Authorization") != "Bearer "+s.rec.Token.AccessToken {
		return nil // refused an older token: another request refreshed it since (or a login replaced it)
	}
	if resp.StatusCode == http.StatusForbidden {
		want := strings.Fields(challengeParam(resp, "scope"))
		next := *s.rec
		next.Wanted = union(next.Wanted, want)
		if err := next.Write(s.Path); err == nil {
			s.rec = &next
			if st, err := os.Stat(s.Path); err == nil {
				s.seen = fileStamp{mod: st.ModTime(), size: st.Size()}
			}
		}
		return fmt.Errorf("%w: the server wants scope %q, which the login for %s does not hold: run `plughost login %s` to grant it",
			ErrLoginNeeded, strings.Join(want, " "), s.Name, s.Name)
	}
	why := challengeParam(resp, "error_description")
	if why == "" {
		why = challengeParam(resp, "error")
	}
	if why == "" {
		why = resp.Status
	}
	if s.rec.Token.RefreshToken == "" {
		return fmt.Errorf("%w: the server refused the login for %s (%s): run `plughost login %s`", ErrLoginNeeded, s.Name, clip(why, 200), s.Name)
	}
	if err := s.refresh(); err != nil {
		return fmt.Errorf("the server refused the login for %s (%s), and %w", s.Name, clip(why, 200), err)
	}
	return nil
}

func (s *Stored) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// withResource is hc adding resource (RFC 8707) to the token requests it
// sends to tokenURL that lack one: x/oauth2's refresh has no way to pass
// an extra parameter.
func withResource(hc *http.Client, tokenURL, resource string) *http.Client {
	c := *hc
	next := c.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method != http.MethodPost || r.URL.String() != tokenURL || r.Body == nil {
			return next.RoundTrip(r)
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		form, err := url.ParseQuery(string(b))
		if err == nil && form.Get("resource") == "" {
			form.Set("resource", resource)
			b = []byte(form.Encode())
		}
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		return next.RoundTrip(r)
	})
	return &c
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
