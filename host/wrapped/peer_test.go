package wrapped

import (
	"context"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/wrapped/wire"
)

// serveInProcess serves srv, a go-sdk server (the tests' peer: a server we
// did not write), to the bridge through two pipes, newline-delimited JSON
// as a stdio server speaks it; it returns the bridge's dialer.
func serveInProcess(t *testing.T, srv *mcp.Server) dialer {
	t.Helper()
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	ss, err := srv.Connect(t.Context(), &mcp.IOTransport{Reader: sr, Writer: sw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close(); _ = cr.Close() })
	return func(_ context.Context, o *wire.Options) (*wire.Conn, error) { return wire.Stream(cr, cw, o) }
}
