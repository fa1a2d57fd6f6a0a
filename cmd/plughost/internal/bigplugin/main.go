// Command bigplugin is a plugin of the end-to-end tests that asks the host
// for more than its limits allow, as a buggy or hostile plugin would:
//
//   - "big" answers a text of the given size (its argument "size", in
//     bytes), to check that a result over limits { result_size } is
//     refused with an isError result while the host's memory stays
//     bounded;
//   - "small" answers "ok", to check that the plugin's other calls are
//     still served.
//
// Installed under a file name starting with "many", it offers 50 000 more
// tools ("t00000" to "t49999"), over the default limits { items }.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/plughost/plughost/pluginproto"
)

func main() {
	p := pluginproto.New("bigplugin", "1.0.0")
	p.AddTool(pluginproto.Tool{Name: "big", Description: "Answers a text of size bytes."},
		func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
			var args struct {
				Size int `json:"size"`
			}
			if err := r.Bind(&args); err != nil {
				return nil, err
			}
			return pluginproto.TextResult(strings.Repeat("x", args.Size)), nil
		})
	p.AddTool(pluginproto.Tool{Name: "small", Description: "Answers ok."},
		func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
			return pluginproto.TextResult("ok"), nil
		})
	if strings.HasPrefix(filepath.Base(os.Args[0]), "many") {
		for i := range 50000 {
			p.AddTool(pluginproto.Tool{Name: fmt.Sprintf("t%05d", i), Description: "One of many."},
				func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
					return pluginproto.TextResult("ok"), nil
				})
		}
	}
	pluginproto.Serve(p)
}
