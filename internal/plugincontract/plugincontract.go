// Package plugincontract holds what both ends of the plugin contract must
// agree on before the first message: the contract's version, the go-plugin
// handshake, and the name the plugin's service is dispensed under.
//
// The plugin's side (pluginproto.Serve) and the host's side
// (host/pluginclient) import it; the messages they then exchange are the
// generated code in internal/pluginpb. Both packages are internal to the
// module: a plugin author sees neither, only pluginproto.
package plugincontract

import "github.com/hashicorp/go-plugin"

// Version is the version of the plugin contract a plugin built with
// pluginproto serves, and the newest a host speaks. A host also serves
// plugins of every older version. The version is negotiated in go-plugin's
// handshake and repeated in Describe; a host refuses a plugin whose two
// answers differ.
const Version = 2

// PluginName is the name under which a plugin serves its tools in the
// go-plugin plugin set; the host dispenses it.
const PluginName = "tools"

// Handshake is the go-plugin handshake shared by plughost and its plugins.
// The magic cookie is not a secret: it only stops a plugin binary started
// by hand from waiting forever for a host. ProtocolVersion is informative:
// hosts and plugins list their contract versions in go-plugin's versioned
// plugin sets, which it negotiates.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  Version,
	MagicCookieKey:   "PLUGHOST_PLUGIN",
	MagicCookieValue: "019544a273a2bc73910caf0182d93962b8325e5cc6bd15d4",
}
