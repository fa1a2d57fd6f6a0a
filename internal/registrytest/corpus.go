//go:build unix

package registrytest

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaURL is the server.json schema the corpus is written to, and the
// only one it is checked against.
const SchemaURL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

// schemaFile is SchemaURL's file in the official registry's module.
const schemaFile = "internal/validators/schemas/2025-12-11.json"

// corpusFiles are the corpus's documents; corpus/README.md says where each
// came from.
//
//go:embed corpus/*.json
var corpusFiles embed.FS

// Corpus returns real server.json documents by "NAME@VERSION" (for
// example "io.github.domdomegg/airtable-mcp-server@1.7.2"), each checked
// against the official schema 2025-12-11 as the pinned registry module
// holds it. The map is the caller's own; the documents are the files'
// bytes, unchanged. It fails the test when a document does not pass.
func Corpus(t testing.TB) map[string][]byte {
	t.Helper()
	docs, err := corpus()
	if err != nil {
		t.Fatal(err)
	}
	return maps.Clone(docs)
}

// corpus reads and checks the corpus once per process.
var corpus = sync.OnceValues(func() (map[string][]byte, error) {
	schema, err := officialSchema()
	if err != nil {
		return nil, err
	}
	entries, err := corpusFiles.ReadDir("corpus")
	if err != nil {
		return nil, err
	}
	docs := map[string][]byte{}
	for _, e := range entries {
		file := path.Join("corpus", e.Name())
		b, err := corpusFiles.ReadFile(file)
		if err != nil {
			return nil, err
		}
		key, err := validate(schema, b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if _, dup := docs[key]; dup {
			return nil, fmt.Errorf("%s: a second document for %s", file, key)
		}
		docs[key] = b
	}
	return docs, nil
})

// validate checks doc against schema and says that it is written to
// SchemaURL; it returns doc's "NAME@VERSION".
func validate(schema *jsonschema.Schema, doc []byte) (string, error) {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return "", fmt.Errorf("not JSON: %w", err)
	}
	if err := schema.Validate(inst); err != nil {
		return "", fmt.Errorf("fails the official server.json schema: %w", err)
	}
	var head struct {
		Schema  string `json:"$schema"`
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if err := json.Unmarshal(doc, &head); err != nil {
		return "", err
	}
	if head.Schema != SchemaURL {
		return "", fmt.Errorf("its $schema is %q, not %s", head.Schema, SchemaURL)
	}
	return head.Name + "@" + head.Version, nil
}

// officialSchema compiles the server.json schema 2025-12-11 from the
// official registry's module as registryserver/go.mod pins it (go mod
// download finds it in the module cache, or fetches it), asserting
// formats ("uri" and the like) as well as structure.
func officialSchema() (*jsonschema.Schema, error) {
	cmd := exec.Command(goTool(), "mod", "download", "-json", "github.com/modelcontextprotocol/registry")
	cmd.Dir = filepath.Join(dir(), "registryserver")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	var mod struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &mod); err != nil || jerr != nil || mod.Dir == "" {
		return nil, fmt.Errorf("the official registry's module (go mod download in %s): %v %s %s", cmd.Dir, err, mod.Error, stderrOf(err))
	}
	b, err := os.ReadFile(filepath.Join(mod.Dir, schemaFile))
	if err != nil {
		return nil, fmt.Errorf("the official server.json schema: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", schemaFile, err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(SchemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(SchemaURL)
}

// stderrOf is what a failed command wrote to its standard error.
func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
