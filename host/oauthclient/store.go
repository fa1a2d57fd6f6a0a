package oauthclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/oauth2"

	"github.com/plughost/plughost/internal/atomicfile"
)

// StoreFile is the name of a login's file in its server's token directory
// (see [StoreDir]).
const StoreFile = "token.json"

// StoreDir is the token directory of the declared server name under
// plughost's state directory: $XDG_STATE_HOME/plughost/tokens/NAME.
//
// One directory per server, holding one file, because of who writes it.
// The login is written by `plughost login NAME` and, after each refresh,
// by the wrapper of NAME, which runs in NAME's sandbox: the host grants
// that sandbox this one directory, writable (a file is replaced whole by a
// rename beside it, so the grant is the directory, not the file), and no
// other server's. The other design — the host owns every token and hands
// each wrapper a short-lived access token — needs a channel from the host
// to the wrapper for each refresh and each step-up, which the plugin
// contract does not have, and would save little: the wrapper of a remote
// server is plughost's own code, alone in its sandbox (it starts no server
// program), and a refresh token is good only at the authorization server
// for this one resource, which the wrapper may already call as it likes.
// What it does cost: a compromised wrapper could carry the refresh token
// away and use it after the host stops.
func StoreDir(stateDir, name string) string { return filepath.Join(stateDir, "tokens", name) }

// maxStore bounds the file read.
const maxStore = 1 << 20

// Record is what a login leaves: the tokens, and what refreshing them
// takes. A pre-registered client's secret is not kept here (it comes from
// the declaration's source each time); a dynamically registered client's
// is, since nothing else holds it.
type Record struct {
	// Server is the MCP endpoint logged in to: a login is used for that
	// URL only, so that an edited declaration cannot send the tokens
	// elsewhere.
	Server string `json:"server"`
	// Resource is the resource the tokens are for (RFC 8707), sent on
	// each refresh.
	Resource string `json:"resource,omitempty"`
	// TokenURL is the authorization server's token endpoint.
	TokenURL string `json:"token_url"`
	// ClientID is the client the tokens were issued to; ClientSecret a
	// registered client's secret ("" for a public or pre-registered
	// client); AuthStyle how the token endpoint wants it.
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style,omitempty"`
	// Scopes were granted. Wanted were asked for by the server since
	// (a 403 insufficient_scope): the next login asks for them too.
	Scopes []string `json:"scopes,omitempty"`
	Wanted []string `json:"wanted,omitempty"`
	// Token holds the access token, its expiry and the refresh token.
	Token *oauth2.Token `json:"token"`
}

// ReadRecord reads the record at path; errors.Is(err, fs.ErrNotExist)
// when there is none.
func ReadRecord(path string) (*Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStore+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxStore {
		return nil, fmt.Errorf("%s: over %d bytes: not a login", path, maxStore)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: not a login: %v", path, err)
	}
	if r.Token == nil || r.Token.AccessToken == "" || r.TokenURL == "" || r.Server == "" {
		return nil, fmt.Errorf("%s: not a login: no token, token_url or server", path)
	}
	return &r, nil
}

// Write replaces the record at path, whole, mode 0600; its directory is
// made (0700) when missing.
func (r *Record) Write(path string) error {
	if r.Token == nil {
		return errors.New("no token to store")
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'))
}
