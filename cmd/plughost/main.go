// Command plughost is an MCP server whose tools live in plugin processes.
//
//	plughost init    [--config FILE] [--force]           write a starter configuration, print the clients' snippets
//	plughost check   [--config FILE] [--plugins DIR]     report what would stop serve or a declared server, with fix
//	plughost serve   [--plugins DIR] [--workspace DIR]   serve MCP over stdio
//	plughost plugins [--plugins DIR] [--json]            load each plugin, print its tools and failures, exit
//	plughost plugins --diff NAME                        how NAME's held-back definitions changed, word by word
//	plughost call TOOL [--args JSON] [--plugins DIR]     call one tool without an LLM
//	plughost import [--plugins DIR] [--dry-run] FILE     declare a desktop host's MCP servers
//	plughost approve NAME [--digest D]                  approve a plugin file and its definitions (trust mode pinned)
//	plughost revoke NAME                                withdraw its approval
//	plughost upgrade NAME                               a declared npx/uvx server's newest allowed version
//	plughost install NAME[@VERSION] | FILE.mcpb         install a server of an MCP Registry, or a bundle
//	plughost search-registry QUERY                      find servers in an MCP Registry
//	plughost uninstall NAME                             remove a server plughost install installed
//	plughost version [--json]                           version, commit, Go, plugin contracts
//
// This package parses flags and prints: package host/serve assembles the
// host from what the flags say, the packages under host/ own its rules,
// and pluginproto/ is the plugin contract.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/plughost/plughost/host/serve"
	"github.com/plughost/plughost/host/wrapped"
	"github.com/plughost/plughost/sandbox"
)

// version is set at build time by the Makefile (-X main.version=...).
var version = "dev"

const usage = `plughost: an MCP server whose tools live in plugin processes.

Usage:
  plughost init    [--config FILE] [--force]           write a starter configuration (default
                                                       ~/.config/plughost/plughost.hcl), create the plugin directory,
                                                       print the snippets of Claude Desktop, Cursor, VS Code, Claude Code
  plughost check   [--config FILE]                     report everything serve would refuse (files, variables, keys,
                                                       redis, rules) and the plugin directory's declared servers'
                                                       secret sources (--plugins DIR), each with where and its fix
                                                       (status 1 if any)
  plughost serve   [--plugins DIR] [--workspace DIR]   serve MCP over stdio
  plughost serve   --http ADDR [--token T] [...]       serve MCP over Streamable HTTP at http://ADDR/mcp
  plughost serve   --device-listen ADDR [...]          also accept devices (framed ##START protocol over TCP)
  plughost serve   ... --tls-cert FILE --tls-key FILE  those listeners speak TLS (https://ADDR/mcp), reloading the pair
  plughost plugins [--plugins DIR] [--json]            load each plugin, print its sandbox, tools and what failed
                                                       or was refused, exit (status 1 if anything did)
  plughost plugins --diff NAME                         print, word by word, how NAME's held-back definitions differ
                                                       from the approved ones
  plughost call TOOL [--args JSON] [--plugins DIR]     call one tool without an LLM, print the result
  plughost import [--plugins DIR] [--config-out FILE] [--state DIR] [--force] [--dry-run] FILE
                                                       write a NAME.mcp.json declaration for each MCP server of a
                                                       Claude Desktop, Cursor or VS Code configuration, and the
                                                       grants each needs into the configuration file (default
                                                       $PLUGHOST_CONFIG, else ~/.config/plughost/plughost.hcl);
                                                       print them and what was not carried over (status 1 if
                                                       anything was not carried over fully)
  plughost approve NAME [--plugins DIR] [--digest D]   approve the plugin file NAME as it is now (its SHA-256) and
                                                       its definitions in the trust file: in trust mode "pinned" it
                                                       runs, without a restart, and what it offers is pinned
  plughost revoke NAME                                 withdraw NAME's approval: a running plughost stops serving it
  plughost upgrade NAME [--plugins DIR]                install the newest version the npx/uvx declaration NAME allows
                                                       beside the one it runs, show old → new and the definitions'
                                                       diff, and switch (trust mode "pinned": held until approved)
  plughost install NAME[@VERSION] [--registry URL|PATH] [--type npm|pypi|mcpb|remote] [--set K=V] [--secret-file K=FILE]
                  [--name NAME] [--yes] [--dry-run] [--force] [--oauth]
                                                       install a server of an MCP Registry (default the official one,
                                                       or the registry block of --config): show what it runs, ask
                                                       for its values, install its package once, write its
                                                       declaration, secret files (mode 0600) and plugin block
  plughost search-registry QUERY [--registry URL|PATH] list the servers whose name holds QUERY: name, version,
                                                       description, what they offer
  plughost uninstall NAME [--plugins DIR]              remove what plughost install wrote for NAME: declaration,
                                                       package cache, bundle, secrets, plugin block, trust entry
  plughost login NAME [--plugins DIR] [--no-browser]   log in once, in a browser, to the remote server NAME.mcp.json
                                                       declares with "oauth": the tokens are stored (mode 0600) and
                                                       a running plughost uses and refreshes them
  plughost sandbox probe                               print what this machine's sandbox supports
  plughost version [--json]                            print the version, commit, Go version, platform and the
                                                       plugin contract versions this host loads

Common flags:
  --plugins DIR     plugin directory (default $XDG_DATA_HOME/plughost/plugins,
                    i.e. ~/.local/share/plughost/plugins; created if missing)
  --workspace DIR   directory the bundled files plugin writes into
                    (default $XDG_DATA_HOME/plughost/workspace)
  --config FILE     HCL configuration file (sandbox policies, trust modes; see docs/security.md "Sandbox", "Trust");
                    default $PLUGHOST_CONFIG, else ~/.config/plughost/plughost.hcl when it exists
  --log-level L     trace, debug, info, warn, error (default info; logs go to stderr)

Run "plughost COMMAND --help" for a command's flags.
`

// errUsage marks errors already explained to the user in one line.
var errUsage = errors.New("usage")

func main() {
	sandbox.RunStageIfRequested() // the hidden re-exec stage: first, and silent on stdout
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run dispatches a command line and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "-h", "--help", "-help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "version", "--version", "-version":
		err = versionCommand(rest, stdout, stderr)
	case "serve":
		err = serveCommand(rest, stdin, stdout, stderr)
	case "plugins":
		err = listPlugins(rest, stdout, stderr)
	case "check":
		err = checkCommand(rest, stdout, stderr)
	case "init":
		err = initCommand(rest, stdout, stderr)
	case "call":
		err = callTool(rest, stdout, stderr)
	case "import":
		err = importServers(rest, stdout, stderr)
	case "approve", "revoke":
		err = approveCommand(cmd == "approve", rest, stdout, stderr)
	case "upgrade":
		err = upgradeCommand(rest, stdout, stderr)
	case "install":
		err = installCommand(rest, stdin, stdout, stderr)
	case "uninstall":
		err = uninstallCommand(rest, stdout, stderr)
	case "search-registry":
		err = searchRegistryCommand(rest, stdout, stderr)
	case "sandbox":
		err = sandboxCommand(rest, stdout, stderr)
	case "login":
		err = loginCommand(rest, stdout, stderr)
	case serve.WrappedCommand: // hidden: run by the host for a declared server
		err = serve.RunWrapped(rest, version, stderr)
	default:
		fmt.Fprintf(stderr, "plughost: unknown command %q (run plughost --help)\n", cmd)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.As(err, new(*wrapped.ServerExitedError)):
		fmt.Fprintf(stderr, "plughost %s: %v\n", cmd, err)
		var se *wrapped.ServerExitedError
		errors.As(err, &se)
		return se.ExitCode() // the server's own, for the host to report
	default:
		fmt.Fprintf(stderr, "plughost %s: %v\n", cmd, err)
		return 1
	}
}

// parseFlags parses a command's flags and reports a mistake in one clear line.
// parseWithArg is parseFlags for a command of one positional argument
// (a tool, a plugin, a file), which may come before or after the flags;
// "" when none was given. A second one is a usage error.
func parseWithArg(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (string, error) {
	var arg string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		arg, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args, stdout, stderr); err != nil {
		return "", err
	}
	if arg == "" && fs.NArg() == 1 {
		return fs.Arg(0), nil
	}
	if fs.NArg() > 0 {
		return "", usageError(stderr, fs, "unexpected argument %q", fs.Arg(0))
	}
	return arg, nil
}

func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fmt.Fprintf(stdout, "Usage of plughost %s:\n", fs.Name())
		fs.PrintDefaults()
		return flag.ErrHelp
	default:
		msg := strings.TrimPrefix(err.Error(), "flag provided but not defined: ")
		if msg != err.Error() {
			msg = "unknown flag " + msg
		}
		fmt.Fprintf(stderr, "plughost %s: %s (run plughost %s --help)\n", fs.Name(), msg, fs.Name())
		return errUsage
	}
}

// usageError reports a mistake on the command line in one line.
func usageError(stderr io.Writer, fs *flag.FlagSet, format string, args ...any) error {
	fmt.Fprintf(stderr, "plughost %s: %s (run plughost %s --help)\n", fs.Name(), fmt.Sprintf(format, args...), fs.Name())
	return errUsage
}
