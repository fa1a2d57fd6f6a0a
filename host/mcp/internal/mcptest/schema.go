package mcptest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/plughost/plughost/internal/mcpschema"
)

// Versions are the protocol versions the server speaks, latest first.
var Versions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Stateless is the protocol version of the stateless revision, whose
// requests are served without a session.
const Stateless = "2026-07-28"

// schemas compiles the official schema of every version once.
var schemas = sync.OnceValues(func() (map[string]*mcpschema.Validator, error) {
	set := map[string]*mcpschema.Validator{}
	for _, version := range append([]string{Stateless}, Versions...) {
		v, err := mcpschema.New(version)
		if err != nil {
			return nil, err
		}
		set[version] = v
	}
	return set, nil
})

// CheckSchema validates msg (a message or batch) for version, or for every
// version of a session when version is "" (before negotiation). method returns the
// method of the request a response answers.
func CheckSchema(t testing.TB, version string, msg []byte, method func(json.RawMessage) string) error {
	set, err := schemas()
	if err != nil {
		t.Fatal(err)
	}
	check := Versions
	if version != "" {
		check = []string{version}
	}
	for _, ver := range check {
		if err := set[ver].CheckFunc(msg, method); err != nil {
			return fmt.Errorf("%s: %w", ver, err)
		}
	}
	return nil
}
