// Command corpusplugin is a test fixture: a plughost plugin that serves
// one MCP server of the tool-search corpus (../shared/toolsearch's
// tools.jsonl: 70 servers, 527 tools) as that server listed them, so
// that tests and the bench can lay the corpus out as 70 plugins and
// measure the tool search through MCP, the product's own path.
//
// Which server: the one whose PluginName is the plugin's provider name,
// which plughost derives from the plugin's file name. So a directory of
// copies (or hard links) of this binary, each named
// toolsearcheval.PluginName(server) ("Ant_Design_Components" for
// "Ant Design Components"), serves the whole corpus.
//
// Which file: the first path ending in ".jsonl" among those the host
// grants the plugin to read (its sandbox policy's allow_read, in
// $PLUGHOST_GRANTS), for example, in plughost's --config:
//
//	sandbox {
//	  allow_read = ["/work/shared/toolsearch/tools.jsonl"]
//	}
//
// The plugin serves the server's tools verbatim (name, description,
// inputSchema) through a pluginhost.Proxy, its title and description from
// the file's server_title and server_description (Plugin.SetAbout), and
// answers every call with one text naming the tool and echoing its
// arguments. It serves nothing else. The product never builds it.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/plughost/plughost/grants"
	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/internal/toolsearcheval"
	"github.com/plughost/plughost/pluginproto"
)

func main() {
	p, err := newPlugin(pluginproto.Granted(), os.Args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "corpusplugin:", err)
		os.Exit(1)
	}
	pluginproto.Serve(p)
}

// newPlugin returns the plugin serving the server named after the
// plugin's provider name (g.Plugin, else the executable's file name).
func newPlugin(g *grants.Grants, exe string) (*pluginproto.Plugin, error) {
	name := g.Plugin
	if name == "" {
		name = toolsearcheval.PluginName(filepath.Base(exe))
	}
	path := ""
	for _, p := range g.AllowRead {
		if strings.HasSuffix(p, ".jsonl") {
			path = p
			break
		}
	}
	if path == "" {
		return nil, fmt.Errorf("no .jsonl file among the paths the host grants to read (%q): add the corpus's tools.jsonl to the sandbox policy's allow_read", g.AllowRead)
	}
	servers, err := toolsearcheval.ReadServers(path)
	if err != nil {
		return nil, err
	}
	for _, s := range servers {
		if toolsearcheval.PluginName(s.Name) == name {
			return serve(s)
		}
	}
	return nil, fmt.Errorf("%s holds no server named %q (a plugin file is named after its server: toolsearcheval.PluginName)", path, name)
}

// serve returns the plugin serving s.
func serve(s toolsearcheval.Server) (*pluginproto.Plugin, error) {
	p := pluginproto.New(s.Name, "corpus")
	p.SetAbout(pluginproto.About{Title: s.Title, Description: s.Description})
	pluginhost.Of(p).SetProxy(server{s.Name})
	var l pluginhost.ProxyLists
	for _, t := range s.Tools {
		l.Tools = append(l.Tools, t.Def)
	}
	if err := pluginhost.Of(p).SetProxyLists(l); err != nil {
		return nil, fmt.Errorf("server %q: %w", s.Name, err)
	}
	return p, nil
}

// server answers the calls of one corpus server's tools.
type server struct{ name string }

var _ pluginhost.Proxy = server{}

// CallTool answers "<server>::<tool> called with <arguments>".
func (s server) CallTool(_ context.Context, call *pluginhost.ProxyCall) (json.RawMessage, error) {
	args := call.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	text := fmt.Sprintf("%s::%s called with %s", s.name, call.Tool, args)
	return json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": text}}})
}

// The corpus's servers are served as tool servers only: the host calls
// none of these (the plugin offers nothing else).

func (server) ReadResource(context.Context, string, json.RawMessage, *pluginhost.Input) (json.RawMessage, error) {
	return nil, pluginproto.ErrUnknownResource
}

func (server) GetPrompt(context.Context, string, json.RawMessage, json.RawMessage, *pluginhost.Input) (json.RawMessage, error) {
	return nil, pluginproto.ErrUnknownPrompt
}

func (server) Complete(context.Context, json.RawMessage) (json.RawMessage, error) {
	return nil, fmt.Errorf("corpusplugin offers no completions")
}

func (server) SubscribeResource(context.Context, string, bool) error {
	return pluginproto.ErrUnknownResource
}
