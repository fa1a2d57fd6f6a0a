package serve

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/plughost/plughost/host/catalog"
	"github.com/plughost/plughost/host/mcp"
)

// The catalog is what the MCP server serves.
var _ mcp.Catalog = (*catalog.Catalog)(nil)

// Stdio runs the MCP server over stdin and stdout until stdin closes or
// SIGINT or SIGTERM arrives, then stops the host. SIGHUP or a change of
// the configuration file reloads it (reload.go).
func Stdio(hf *Options, stdin io.Reader, stdout, stderr io.Writer) error {
	consoleLn, consoleSet, err := stdioConsoleListener(hf, stderr)
	if err != nil {
		return err
	}
	h, err := Start(hf, stderr)
	if err != nil {
		if consoleLn != nil {
			consoleLn.Close()
		}
		return err
	}
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	stopConsole := func() {}
	if consoleLn != nil { // --console-listen: the console beside stdio, until stdin ends or a signal
		if stopConsole, err = h.serveConsoleAlone(ctx, consoleLn, consoleSet); err != nil {
			return errors.Join(err, h.Stop())
		}
	}

	stopMetrics, err := h.obs.serveMetrics(hf.Observe, h.tlsConfig(), h.log)
	if err != nil {
		return errors.Join(err, h.Stop())
	}
	defer stopMetrics()
	if m := h.obs.metrics; m != nil {
		m.Sessions("stdio", +1)
		defer m.Sessions("stdio", -1)
	}
	srv := h.serveWith(mcp.NewServer(h.catalog, h.mcpOptions()))
	h.sampler.use(srv) // devices' text tasks ask the stdio client's model
	if f, ok := stdin.(*os.File); ok && isTerminal(f) {
		h.log.Info("serving MCP over stdio: type one JSON-RPC message per line, or connect an MCP client that runs this command",
			"try", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"terminal","version":"0"}}}`)
	}
	stopReloads := h.watchReloads() // SIGHUP, or the --config file changed
	serveErr := srv.ServeStdio(ctx, stdin, stdout)
	stopReloads()
	stopConsole()
	if ctx.Err() != nil && errors.Is(serveErr, context.Cause(ctx)) {
		// SIGINT or SIGTERM: an ordinary stop, as stdin's end is.
		h.log.Info("stopping", "reason", serveErr)
		serveErr = nil
	}
	stopErr := h.Stop()
	if serveErr != nil {
		return serveErr
	}
	return stopErr
}

// stdioConsoleListener opens --console-listen's listener for a stdio host
// (nil without the flag), before any plugin starts, with the settings the
// console is built with.
func stdioConsoleListener(hf *Options, stderr io.Writer) (net.Listener, *consoleSettings, error) {
	if hf.ConsoleListen == "" {
		return nil, nil, nil
	}
	verifier, err := oauthVerifier(hf, stderr) // people may sign in through the auth block's issuer
	if err != nil {
		return nil, nil, err
	}
	set, err := readConsoleSettings(hf, verifier)
	if err != nil {
		return nil, nil, err
	}
	ln, err := listenConsole(hf.ConsoleListen, set)
	return ln, set, err
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
