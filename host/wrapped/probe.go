package wrapped

import (
	"context"
	"fmt"
	"net/http"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/wrapped/wire"
)

// CountTools connects to the remote server s through hc as the wrapper
// does (plughost, version, names itself), lists its tools and closes:
// `plughost login` proves a fresh login with it. The server's questions
// and notifications meanwhile are not served.
func CountTools(ctx context.Context, s *declared.Server, hc *http.Client, version string) (int, error) {
	conn, err := dialRemote(s, hc)(ctx, &wire.Options{})
	if err != nil {
		return 0, fmt.Errorf("connect to %s: %w", s.URL, err)
	}
	defer conn.Close()
	b := &bridge{log: hclog.NewNullLogger(), conn: conn}
	if err := b.initialize(ctx, &Options{Name: "plughost", Version: version}); err != nil {
		return 0, fmt.Errorf("connect to %s: %w", s.URL, serverError(err))
	}
	tools, err := b.listAll(ctx, "tools/list", "tools")
	if err != nil {
		return 0, fmt.Errorf("list the tools of %s: %w", s.URL, err)
	}
	return len(tools), nil
}
