package wrapped

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/declared"
	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/pluginproto"
)

// The wrapped server's serverInfo and instructions become the plugin's
// title and description, through a real go-sdk server.
func TestWrappedAbout(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", pluginclient.MaxDescription)
	tests := map[string]struct {
		info         mcp.Implementation
		instructions string
		want         pluginproto.About
	}{
		"title and description": {
			info: mcp.Implementation{Name: "yf", Title: "Yahoo Finance", Description: "Stock prices and company news."},
			want: pluginproto.About{Title: "Yahoo Finance", Description: "Stock prices and company news."},
		},
		"the name stands for a missing title": {
			info: mcp.Implementation{Name: "weather", Description: "Forecasts."},
			want: pluginproto.About{Title: "weather", Description: "Forecasts."},
		},
		"the first paragraph of the instructions stands for a missing description": {
			info:         mcp.Implementation{Name: "kospi"},
			instructions: "  Korean stock market data:\r\nKOSPI and KOSDAQ.\r\n\r\nCall get_ticker first, then get_prices.",
			want:         pluginproto.About{Title: "kospi", Description: "Korean stock market data:\nKOSPI and KOSDAQ."},
		},
		"a description wins over instructions": {
			info:         mcp.Implementation{Name: "x", Description: "What x is."},
			instructions: "How to use x.",
			want:         pluginproto.About{Title: "x", Description: "What x is."},
		},
		"bounded": {
			info: mcp.Implementation{Name: "big", Description: long},
			want: pluginproto.About{Title: "big", Description: long[:pluginclient.MaxDescription]},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := mcp.NewServer(&tc.info, &mcp.ServerOptions{Instructions: tc.instructions})
			ct := serveInProcess(t, srv)
			p, _, err := start(t.Context(), &Options{Server: &declared.Server{Type: declared.TypeHTTP, URL: "http://in-memory"}, Name: "plughost", Version: "0", Logger: hclog.NewNullLogger()}, ct)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, p.About()); diff != "" {
				t.Errorf("About (-want +got):\n%s", diff)
			}
		})
	}
}
