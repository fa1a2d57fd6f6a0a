package pluginproto

import "sync/atomic"

// Host is what the host that runs a plugin says about itself when it
// first asks the plugin to describe itself (the contract's Describe). A
// plugin may log it, or adapt to a host that speaks an older contract
// version than the plugin (ContractVersion below the SDK's own: such a
// host calls only what that contract has).
type Host struct {
	// Version is the host's version, e.g. "v0.4.0" (`plughost version`),
	// or "dev" for a build outside a release.
	Version string
	// ContractVersion is the plugin contract version the host speaks
	// with this plugin: the one negotiated at the handshake.
	ContractVersion uint32
}

// hostInfo holds the Host a Describe named, for Plugin.Host.
type hostInfo struct{ v atomic.Pointer[Host] }

func (h *hostInfo) set(host Host) { h.v.Store(&host) }

// Host returns what the host said about itself, and false before the
// host has asked the plugin to describe itself (which it does first,
// before any call) or when the plugin runs in-process without a host
// (plugintest).
func (p *Plugin) Host() (Host, bool) {
	h := p.host.v.Load()
	if h == nil {
		return Host{}, false
	}
	return *h, true
}
