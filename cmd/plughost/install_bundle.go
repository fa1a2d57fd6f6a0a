package main

import (
	"errors"

	"github.com/plughost/plughost/host/declared"
)

// installBundle installs the MCP Bundle file at path; origin says which
// registry entry it came from (nil: a file the user named).
func installBundle(e *installEnv, path string, origin *declared.Origin) error {
	return errors.New("install a bundle: not built yet")
}
