package main

import "errors"

// installFromRegistry installs the server ref (NAME[@VERSION]) of the
// configured MCP Registry.
func installFromRegistry(e *installEnv, ref string) error {
	return errors.New("install from a registry: not built yet")
}
