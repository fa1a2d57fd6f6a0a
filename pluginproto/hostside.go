package pluginproto

import "github.com/plughost/plughost/internal/pluginhost"

// hostPlugin is a Plugin's host side (package internal/pluginhost): the
// methods an author never calls, which a host, package plugintest and
// host/wrapped reach through pluginhost.Of.
type hostPlugin Plugin

func init() {
	pluginhost.Register(func(p any) pluginhost.Plugin { return (*hostPlugin)(p.(*Plugin)) })
}

var _ pluginhost.Plugin = (*hostPlugin)(nil)
