package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/plughost/plughost/host/serve"
)

// loginCommand runs `plughost login NAME`: serve.Login logs in to the
// declared remote server NAME once, in a browser, and stores its tokens,
// which a running plughost uses and refreshes; it prints what it stored.
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	login, err := serve.Login(ctx, &serve.LoginOptions{Name: name, Plugins: *plugins, Config: *cfgPath, Version: version, Stderr: stderr,
		Browse: func(u string) {
			fmt.Fprintf(stderr, "To log in to %s, open this URL in a browser:\n\n  %s\n\n", name, u)
			if !*noBrowser {
				openBrowser(u)
			}
		}})
	if err != nil {
		return err
	}
	scopes := strings.Join(login.Record.Scopes, " ")
	if scopes == "" {
		scopes = "(none named)"
	}
	fmt.Fprintf(stdout, "logged in to %s (%s): %d tools; scopes %s; tokens stored in %s (mode 0600)\n", name, login.Server.URL, login.Tools, scopes, login.Path)
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
