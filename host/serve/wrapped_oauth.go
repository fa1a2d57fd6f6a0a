package serve

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/oauthclient"
	"github.com/plughost/plughost/sandbox"
)

// oauthLaunch prepares the wrapper of the declared server name, whose
// declaration has an "oauth" member o: the client secret (its source
// granted, as declared.Server.Granted checked) passes in the wrapper's environment;
// a login's token directory (oauthclient.StoreDir: the host's state
// directory, tokens/NAME) is made and granted to this server's sandbox,
// writable, so that the wrapper writes back the tokens it refreshes (why
// the wrapper and not the host: see oauthclient.StoreDir). No other
// server's directory is granted.
func oauthLaunch(name string, o *declared.OAuth, cmd *exec.Cmd, pol *sandbox.Policy, getenv func(string) string) error {
	secret, err := o.ClientSecret(getenv)
	if err != nil {
		return err
	}
	if secret != "" {
		cmd.Env = append(cmd.Env, envServerClientSecret+"="+secret)
		pol.Env = append(pol.Env, envServerClientSecret)
	}
	if o.Grant != declared.GrantLogin {
		return nil
	}
	state, err := StateDir()
	if err != nil {
		return err
	}
	dir := oauthclient.StoreDir(state, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("oauth: the token directory: %w", err)
	}
	_ = os.Chmod(filepath.Dir(dir), 0o711) // tokens/: each server reaches its own, none lists the others
	// When the host is root its plugins run as another uid (65534): the
	// directory, and the login `plughost login` wrote as root, become
	// theirs, or the wrapper could neither read nor replace the tokens.
	if uid, gid := sandbox.PluginOwner(); uid != os.Getuid() {
		for _, p := range []string{dir, filepath.Join(dir, oauthclient.StoreFile)} {
			if err := os.Chown(p, uid, gid); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("oauth: giving %s to the plugins' uid %d: %w", p, uid, err)
			}
		}
	}
	pol.AllowWrite = append(pol.AllowWrite, dir)
	cmd.Env = append(cmd.Env, envServerLogin+"="+filepath.Join(dir, oauthclient.StoreFile))
	pol.Env = append(pol.Env, envServerLogin)
	return nil
}

// oauthHandler is the wrapper's OAuth handler for the declared server s
// (named name): a client credentials grant, or the login stored for it.
// What the launcher passed (oauthLaunch) is used, else (the wrapper run by
// hand) the declaration's own sources and the default token directory.
func oauthHandler(s *declared.Server, name string, getenv func(string) string) (auth.OAuthHandler, error) {
	o := s.OAuth
	secret := getenv(envServerClientSecret)
	if secret == "" {
		var err error
		if secret, err = o.ClientSecret(getenv); err != nil {
			return nil, err
		}
	}
	if o.Grant == declared.GrantClientCredentials {
		return &oauthclient.ClientCredentials{ClientID: o.ClientID, ClientSecret: secret, Scopes: o.Scopes, ServerURL: s.URL}, nil
	}
	path := getenv(envServerLogin)
	if path == "" {
		state, err := StateDir()
		if err != nil {
			return nil, err
		}
		path = filepath.Join(oauthclient.StoreDir(state, name), oauthclient.StoreFile)
	} else {
		name = filepath.Base(filepath.Dir(path))
	}
	return &oauthclient.Stored{Name: name, ServerURL: s.URL, Path: path, ClientSecret: secret}, nil
}
