package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/oauthclient"
	"github.com/plughost/plughost/host/wrapped"
	"github.com/plughost/plughost/sandbox"
)

// LoginOptions are plughost login's: the declared remote server Name
// (NAME.mcp.json in the plugin directory Plugins), the configuration
// whose sandbox block grants its client secret's source, and where the
// login speaks: Browse shows the authorization URL, Stderr takes a
// warning.
type LoginOptions struct {
	Name, Plugins, Config, Version string
	Browse                         func(url string)
	Stderr                         io.Writer
}

// LoginResult is a login done and stored: the tokens' record, the server,
// how many tools it listed with them, and the file they are in.
type LoginResult struct {
	Record *oauthclient.Record
	Server *declared.Server
	Tools  int
	Path   string
}

// Login logs in once, in a browser, to the declared remote server
// o.Name, whose declaration has an "oauth" member of the authorization
// code grant, and stores the tokens in its token directory
// (oauthclient.StoreDir), mode 0600, where the running host's wrapper of
// the server finds them at its next request and refreshes them. Run
// again, it asks for the scopes the previous login held and those the
// server has asked for since (a step-up the host met), so that one login
// grants them.
func Login(ctx context.Context, o *LoginOptions) (*LoginResult, error) {
	cfg, err := LoadConfig(o.Config)
	if err != nil {
		return nil, err
	}
	dir, err := ResolveDir(o.Plugins, "plugins", "--plugins")
	if err != nil {
		return nil, err
	}
	name := o.Name
	s, err := declared.Load(filepath.Join(dir, name+declared.Suffix))
	if err != nil {
		return nil, err
	}
	if s.OAuth == nil || s.OAuth.Grant != declared.GrantLogin {
		return nil, fmt.Errorf("%s%s has no \"oauth\" member of grant %q: there is nothing to log in to", name, declared.Suffix, declared.GrantLogin)
	}
	// As when the host starts it: a declaration may not have plughost read
	// a file or variable the operator did not grant and send it away.
	if err := s.Granted(cfg.Sandbox.PolicyFor(name), name); err != nil {
		return nil, err
	}
	secret, err := s.OAuth.ClientSecret(os.Getenv)
	if err != nil {
		return nil, err
	}
	state, err := StateDir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(oauthclient.StoreDir(state, name), oauthclient.StoreFile)
	prev, err := oauthclient.ReadRecord(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(o.Stderr, "plughost login: the previous login is unreadable and will be replaced: %v\n", err)
	}
	if prev != nil && prev.Server != s.URL {
		prev = nil // another server's scopes mean nothing here
	}
	var tools int
	rec, err := oauthclient.Login(ctx, &oauthclient.LoginOptions{
		Name: name, ServerURL: s.URL,
		ClientID: s.OAuth.ClientID, ClientSecret: secret, ClientMetadataURL: s.OAuth.ClientMetadataURL,
		Scopes: s.OAuth.Scopes, Previous: prev, RedirectPort: s.OAuth.RedirectPort,
		Browse: o.Browse,
		Connect: func(ctx context.Context, hc *http.Client) (err error) {
			tools, err = wrapped.CountTools(ctx, s, wrapped.HTTPClient(s, "", nil, hc.Transport), o.Version)
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	if err := rec.Write(path); err != nil {
		return nil, fmt.Errorf("store the login: %w", err)
	}
	// A root host's plugins run as another uid: the wrapper that refreshes
	// these tokens must be able to read and replace them (as at its launch).
	if uid, gid := sandbox.PluginOwner(); uid != os.Getuid() {
		for _, p := range []string{filepath.Dir(path), path} {
			if err := os.Chown(p, uid, gid); err != nil {
				return nil, fmt.Errorf("store the login: giving %s to the plugins' uid %d: %w", p, uid, err)
			}
		}
	}
	return &LoginResult{Record: rec, Server: s, Tools: tools, Path: path}, nil
}
