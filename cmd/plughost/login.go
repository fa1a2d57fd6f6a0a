package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/oauthclient"
	"github.com/plughost/plughost/host/wrapped"
	"github.com/plughost/plughost/sandbox"
)

// loginCommand runs `plughost login NAME`: the declared remote server
// NAME (NAME.mcp.json in the plugin directory, with an "oauth" member of
// the authorization code grant) is logged in to once, in a browser, and
// the tokens are stored in its token directory (oauthclient.StoreDir),
// mode 0600, where the running host's wrapper of NAME finds them at its
// next request and refreshes them. Run again, it asks for the scopes the
// previous login held and those the server has asked for since (a step-up
// the host met), so that one login grants them.
func loginCommand(args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("login", flag.ContinueOnError)
	plugins := flags.String("plugins", "", "plugin directory (default $XDG_DATA_HOME/plughost/plugins)")
	cfgPath := flags.String("config", "", "HCL configuration file: its sandbox block grants the client secret's source")
	noBrowser := flags.Bool("no-browser", false, "print the authorization URL only; do not try to open a browser")
	name, err := parseWithArg(flags, args, stdout, stderr)
	if err != nil {
		return err
	}
	if name == "" {
		return usageError(stderr, flags, "which server? usage: plughost login NAME (NAME.mcp.json in the plugin directory)")
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	dir, err := resolveDir(*plugins, "plugins", "--plugins")
	if err != nil {
		return err
	}
	s, err := declared.Load(filepath.Join(dir, name+declared.Suffix))
	if err != nil {
		return err
	}
	if s.OAuth == nil || s.OAuth.Grant != declared.GrantLogin {
		return fmt.Errorf("%s%s has no \"oauth\" member of grant %q: there is nothing to log in to", name, declared.Suffix, declared.GrantLogin)
	}
	// As when the host starts it: a declaration may not have plughost read
	// a file or variable the operator did not grant and send it away.
	if err := s.Granted(cfg.Sandbox.PolicyFor(name), name); err != nil {
		return err
	}
	secret, err := s.OAuth.ClientSecret(os.Getenv)
	if err != nil {
		return err
	}
	state, err := stateDir()
	if err != nil {
		return err
	}
	path := filepath.Join(oauthclient.StoreDir(state, name), oauthclient.StoreFile)
	prev, err := oauthclient.ReadRecord(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "plughost login: the previous login is unreadable and will be replaced: %v\n", err)
	}
	if prev != nil && prev.Server != s.URL {
		prev = nil // another server's scopes mean nothing here
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var tools int
	rec, err := oauthclient.Login(ctx, &oauthclient.LoginOptions{
		Name: name, ServerURL: s.URL,
		ClientID: s.OAuth.ClientID, ClientSecret: secret, ClientMetadataURL: s.OAuth.ClientMetadataURL,
		Scopes: s.OAuth.Scopes, Previous: prev, RedirectPort: s.OAuth.RedirectPort,
		Browse: func(u string) {
			fmt.Fprintf(stderr, "To log in to %s, open this URL in a browser:\n\n  %s\n\n", name, u)
			if !*noBrowser {
				openBrowser(u)
			}
		},
		Connect: func(ctx context.Context, hc *http.Client) error {
			client := mcp.NewClient(&mcp.Implementation{Name: "plughost", Version: version}, nil)
			cs, err := client.Connect(ctx, wrapped.RemoteTransport(s, wrapped.HTTPClient(s, "", nil, hc.Transport)),
				&mcp.ClientSessionOptions{ProtocolVersion: wrapped.ProtocolVersion})
			if err != nil {
				return fmt.Errorf("connect to %s: %w", s.URL, err)
			}
			defer cs.Close()
			for _, err := range cs.Tools(ctx, nil) {
				if err != nil {
					return fmt.Errorf("list the tools of %s: %w", s.URL, err)
				}
				tools++
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	if err := rec.Write(path); err != nil {
		return fmt.Errorf("store the login: %w", err)
	}
	// A root host's plugins run as another uid: the wrapper that refreshes
	// these tokens must be able to read and replace them (as at its launch).
	if uid, gid := sandbox.PluginOwner(); uid != os.Getuid() {
		for _, p := range []string{filepath.Dir(path), path} {
			if err := os.Chown(p, uid, gid); err != nil {
				return fmt.Errorf("store the login: giving %s to the plugins' uid %d: %w", p, uid, err)
			}
		}
	}
	scopes := strings.Join(rec.Scopes, " ")
	if scopes == "" {
		scopes = "(none named)"
	}
	fmt.Fprintf(stdout, "logged in to %s (%s): %d tools; scopes %s; tokens stored in %s (mode 0600)\n", name, s.URL, tools, scopes, path)
	return nil
}

// openBrowser tries to open u in the user's browser (xdg-open, or open on
// macOS), without waiting for it; the URL is printed either way.
func openBrowser(u string) {
	prog := "xdg-open"
	if runtime.GOOS == "darwin" {
		prog = "open"
	}
	if _, err := exec.LookPath(prog); err != nil {
		return
	}
	cmd := exec.Command(prog, u)
	if cmd.Start() == nil {
		go cmd.Wait()
	}
}
