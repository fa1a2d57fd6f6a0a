package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/packages"
	"github.com/plughost/plughost/host/wrapped"
	"github.com/plughost/plughost/pluginproto"
	"github.com/plughost/plughost/sandbox"
)

// WrappedCommand is the hidden command the manager runs for a declared
// MCP server (NAME.mcp.json in the plugin directory): plughost itself, as
// a plugin, in the plugin's sandbox, serving the server through the
// contract (package wrapped). Its last argument is the declaration's path.
const WrappedCommand = "__wrapped"

// The variables through which the launcher hands the wrapper its
// declaration, resolved (the command's absolute path), a remote server's
// bearer token or OAuth client secret, and the file of its OAuth login
// (in the token directory granted to it): the wrapper removes them from
// its environment before the server starts.
const (
	envServer             = "PLUGHOST_SERVER"
	envServerToken        = "PLUGHOST_SERVER_TOKEN"
	envServerClientSecret = "PLUGHOST_SERVER_CLIENT_SECRET"
	envServerLogin        = "PLUGHOST_SERVER_LOGIN"
	// envStartTimeout is the plugin's start limit (start_timeout): the
	// wrapper waits for the server a second longer, so that the host's
	// limit, whose error names its setting, is the one that fires.
	envStartTimeout = "PLUGHOST_START_TIMEOUT"
)

// wrapperArgs is the manager's Options.Wrapper: this very binary.
func wrapperArgs() ([]string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot serve declared servers: %w", err)
	}
	return []string{self, WrappedCommand}, nil
}

// RunWrapped runs the wrapper (the hidden command WrappedCommand; version
// is plughost's): it connects to the declared server and
// serves it as a plugin until the host stops it, or exits 1 when the server
// goes away (the host then restarts it, as it would a crashed plugin). A
// server that exits before answering initialize makes it exit with the
// server's status (wrapped.ServerExitedError), after its stderr.
func RunWrapped(args []string, version string, stderr io.Writer) error {
	logger := hclog.New(&hclog.LoggerOptions{Name: "wrapped", Level: hclog.Debug, Output: stderr, JSONFormat: true})
	var s *declared.Server
	var err error
	if raw := os.Getenv(envServer); raw != "" {
		s, err = declared.Parse([]byte(raw))
	} else if len(args) == 1 {
		s, err = declared.Load(args[0])
	} else {
		return fmt.Errorf("usage: plughost %s DECLARATION (run by the host for NAME%s files)", WrappedCommand, declared.Suffix)
	}
	if err != nil {
		return err
	}
	if s.Headers, err = s.HeaderValues(); err != nil { // none when the host handed the declaration over
		return err
	}
	if s.Env, err = s.EnvValues(); err != nil {
		return err
	}
	s.HeaderFiles, s.EnvFiles = nil, nil
	token := os.Getenv(envServerToken)
	if token == "" && s.Remote() {
		if token, err = s.Token(os.Getenv); err != nil {
			return err
		}
	}
	var handler auth.OAuthHandler
	if s.OAuth != nil {
		name := "server"
		if len(args) == 1 {
			name, _ = declared.Name(filepath.Base(args[0]))
		}
		if handler, err = oauthHandler(s, name, os.Getenv); err != nil {
			return err
		}
	}
	os.Unsetenv(envServer)
	os.Unsetenv(envServerToken)
	os.Unsetenv(envServerClientSecret)
	os.Unsetenv(envServerLogin)
	var connectTimeout time.Duration
	if d, err := time.ParseDuration(os.Getenv(envStartTimeout)); err == nil && d > 0 {
		connectTimeout = d + time.Second
	}
	os.Unsetenv(envStartTimeout)
	var expect *wrapped.Expected
	if raw := os.Getenv(envBundleExpect); raw != "" {
		expect = new(wrapped.Expected)
		if err := json.Unmarshal([]byte(raw), expect); err != nil {
			return fmt.Errorf("$%s: %w", envBundleExpect, err)
		}
	}
	os.Unsetenv(envBundleExpect)
	p, gone, err := wrapped.Start(context.Background(), &wrapped.Options{Server: s, Token: token, OAuth: handler, Name: "plughost", Version: version, Logger: logger,
		ConnectTimeout: connectTimeout, Expect: expect})
	if err != nil {
		return err
	}
	go func() {
		err := <-gone
		logger.Error("the wrapped server is gone; exiting so that the host restarts it", "error", err)
		os.Exit(1)
	}()
	pluginproto.Serve(p)
	return nil
}

// wrappedLaunch prepares the launch of a declared server: cmd is the
// wrapper's command as the manager prepared it, pol the plugin's policy.
// It resolves the declaration (the command's absolute path in the
// sandbox's PATH), hands it and a remote server's token to the wrapper in
// its environment, and adds to pol what the server needs to run: for a
// stdio server, the program and its runtime (sandbox.ServerGrants); for a
// remote one, the network, unless the plugin's policy says otherwise.
//
// A stdio server declared as a package runner's one-liner (npx -y PKG,
// uvx PKG) runs its package as installed in its own cache, installed by
// installer at its first start (packageLaunch).
//
// A stdio server whose program runs on a JIT runtime (node, npx, deno,
// bun: sandbox.JITRuntime) gets allow_jit when its block leaves it unset:
// the sandbox sees only the wrapper, this Go binary, which needs no JIT,
// but the server runs in the same box. That widening is logged (and the
// plugin's report lists write-xor-exec as missing); allow_jit = false in
// the block refuses it.
//
// A bundle's declaration (or a .mcpb file) becomes the stdio server its
// manifest says first (bundleLaunch, with cfg's trust and signature
// settings).
func wrappedLaunch(ctx context.Context, cfg *config.Config, name string, cmd *exec.Cmd, pol *sandbox.Policy, getenv func(string) string,
	installer func() (*packages.Installer, error), log hclog.Logger) error {
	declPath := cmd.Args[len(cmd.Args)-1]
	s, err := declared.Load(declPath)
	if err != nil {
		return err
	}
	if s.Bundle != "" {
		if err := s.Granted(pol, name); err != nil { // its user_config_files
			return err
		}
		if err := bundleLaunch(cfg, name, declPath, s, cmd, pol, log); err != nil {
			return err
		}
	}
	if s.Remote() {
		if err := s.Granted(pol, name); err != nil { // its token's, headers' and OAuth secret's sources
			return err
		}
		token, err := s.Token(getenv)
		if err != nil {
			return err
		}
		// The header files are read here, by the host, and handed to the
		// wrapper with the declaration: the files stay outside its box.
		if s.Headers, err = s.HeaderValues(); err != nil {
			return err
		}
		s.HeaderFiles = nil
		if token != "" {
			cmd.Env = append(cmd.Env, envServerToken+"="+token)
			pol.Env = append(pol.Env, envServerToken)
		}
		if s.OAuth != nil {
			if err := oauthLaunch(name, s.OAuth, cmd, pol, getenv); err != nil {
				return err
			}
		}
		if pol.Net == "" {
			pol.Net = sandbox.NetAll // name resolution and certificates come with it (sandbox.NetworkGrants)
		}
	} else {
		if err := s.Granted(pol, name); err != nil { // its env_files
			return err
		}
		// Read here, by the host, as header_files are: the files stay
		// outside the box.
		if s.Env, err = s.EnvValues(); err != nil {
			return err
		}
		s.EnvFiles = nil
		if err := packageLaunch(ctx, name, s, pol, installer, log); err != nil {
			return err
		}
		searchPATH := sandbox.PluginPATH
		if p, ok := s.Env["PATH"]; ok {
			searchPATH = p
		}
		if s.Command, err = sandbox.LookCommand(s.Command, searchPATH); err != nil {
			return err
		}
		grants, err := sandbox.ServerGrants(pol.Runtime, s.Command, s.Args)
		if err != nil {
			return err
		}
		pol.AllowRead = append(pol.AllowRead, grants...)
		if jit, why := pol.JIT(s.Command); jit && pol.AllowJIT == nil {
			pol.AllowJIT = &jit
			log.Info("declared server runs a JIT runtime: it may map memory writable and executable", "plugin", name, "command", s.Command, "why", why)
		}
		pol.Runtime = "" // applied to the server above, not to the wrapper
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return err
	}
	cmd.Env = append(cmd.Env, envServer+"="+string(raw))
	pol.Env = append(pol.Env, envServer)
	return nil
}

// isWrapped reports whether cmd, as the manager prepared it, starts the
// wrapper of a declared server.
func isWrapped(cmd *exec.Cmd) bool {
	return len(cmd.Args) == 3 && cmd.Args[1] == WrappedCommand
}
