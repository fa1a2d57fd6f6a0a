package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plughost/plughost/internal/ask"
)

// The pinned official module the embedded schema is copied from.
const officialModule = "github.com/modelcontextprotocol/registry@v1.8.9"

// officialDir is the pinned module's directory in the module cache,
// downloaded (and checked against the checksum database) by the go
// command when missing.
func officialDir(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", officialModule)
	cmd.Dir = t.TempDir() // outside this module: the module is not one of its requirements
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v (the module proxy or the module cache is needed to compare the schema)", officialModule, err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download -json: %s", out)
	}
	return m.Dir
}

func TestSchemaIsTheOfficialOne(t *testing.T) {
	sum := sha256.Sum256(schemaJSON)
	if got := hex.EncodeToString(sum[:]); got != SchemaSHA256 {
		t.Fatalf("embedded schema's SHA-256 is %s, recorded %s", got, SchemaSHA256)
	}
	official, err := os.ReadFile(filepath.Join(officialDir(t), "internal/validators/schemas/2025-12-11.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(official) != string(schemaJSON) {
		t.Fatal("the embedded schema differs from the one of " + officialModule)
	}
}

// The official registry's seed documents (npm, pypi, oci, nuget, mcpb)
// pass; a document broken in one place fails, naming where.
func TestParseOfficialSeed(t *testing.T) {
	docs, err := readDocuments(filepath.Join(officialDir(t), "data/seed.json"))
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]bool{}
	for _, raw := range docs {
		s, err := Parse(raw)
		if err != nil {
			t.Fatalf("seed document: %v", err)
		}
		for _, p := range s.Packages {
			types[p.RegistryType] = true
		}
	}
	t.Logf("%d seed documents, package types %v", len(docs), types)
	var doc map[string]any
	json.Unmarshal(docs[0], &doc)
	doc["name"] = "no slash"
	bad, _ := json.Marshal(doc)
	if _, err := Parse(bad); err == nil || !strings.Contains(err.Error(), "at /name") {
		t.Fatalf("a bad name: %v", err)
	}
	if _, err := Parse([]byte("{")); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Fatalf("not JSON: %v", err)
	}
}

func testServer(t *testing.T) *Server {
	t.Helper()
	raw, err := os.ReadFile("testdata/memory.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestChoose(t *testing.T) {
	s := testServer(t)
	c, others, err := Choose(s, "")
	if err != nil || c.Type() != TypeNPM {
		t.Fatalf("default choice: %v %v", c, err)
	}
	if len(others) != 2 || !strings.Contains(others[0], "oci") || !strings.Contains(others[0], "container runtime") {
		t.Fatalf("others: %q", others)
	}
	if c, _, err := Choose(s, TypeRemote); err != nil || c.Remote == nil {
		t.Fatalf("--type remote: %v %v", c, err)
	}
	if _, _, err := Choose(s, TypePyPI); err == nil || !strings.Contains(err.Error(), "no pypi") || !strings.Contains(err.Error(), "oci, npm, streamable-http") {
		t.Fatalf("--type pypi: %v", err)
	}
	s.Packages, s.Remotes = s.Packages[:1], nil
	if _, _, err := Choose(s, ""); err == nil || !strings.Contains(err.Error(), "offers nothing plughost runs") || !strings.Contains(err.Error(), "docker.io/example/memory") {
		t.Fatalf("oci only: %v", err)
	}
}

func TestBuildNPM(t *testing.T) {
	s := testServer(t)
	c, _, _ := Choose(s, "")
	secretFile := filepath.Join(t.TempDir(), "code")
	os.WriteFile(secretFile, []byte("s3cret\n"), 0o600)
	a := ask.New(strings.NewReader("/data/a\n/data/b\n\n"), &strings.Builder{}, map[string]string{"mode": "ram"}, map[string]string{"LICENSE_CODE": secretFile})
	p, err := Build(s, c, "https://r.example", Indexes{}, a)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-y", "@example/server-memory@1.0.0", "--mode=ram", "/data/a", "/data/b"}
	if p.Command != "npx" || !slices.Equal(p.Args, want) {
		t.Fatalf("runs %s %q, want npx %q", p.Command, p.Args, want)
	}
	if p.Env["MEMORY_FILE_PATH"] != "/tmp/memory.json" || p.Env["LICENSE_CODE"] != "s3cret" || len(p.Env) != 2 {
		t.Fatalf("env %v", p.Env)
	}
	if !slices.Equal(p.Secrets, []string{"LICENSE_CODE"}) {
		t.Fatalf("secrets %v", p.Secrets)
	}
	if p.Spec.Name != "@example/server-memory" || p.Spec.Version != "1.0.0" {
		t.Fatalf("spec %+v", p.Spec)
	}
	if p.Origin.Name != s.Name || p.Origin.Version != "1.0.0" || p.Origin.Type != "npm" || p.Origin.Registry != "https://r.example" {
		t.Fatalf("origin %+v", p.Origin)
	}
	var b strings.Builder
	p.Describe(&b, nil)
	if strings.Contains(b.String(), "s3cret") || !strings.Contains(b.String(), "LICENSE_CODE = (secret") {
		t.Fatalf("description shows the secret or not its name:\n%s", b.String())
	}
}

func TestBuildRefusals(t *testing.T) {
	s := testServer(t)
	c, _, _ := Choose(s, "")
	none := ask.New(strings.NewReader(""), &strings.Builder{}, nil, nil)
	// A required secret not given.
	if _, err := Build(s, c, "", Indexes{}, none); err == nil || !strings.Contains(err.Error(), "LICENSE_CODE is required") {
		t.Fatalf("required secret: %v", err)
	}
	// A secret argument.
	c.Package.PackageArguments[0].IsSecret = true
	a := ask.New(strings.NewReader("file\n"), &strings.Builder{}, nil, nil)
	if _, err := Build(s, c, "", Indexes{}, a); err == nil || !strings.Contains(err.Error(), "never puts a secret on a command line") {
		t.Fatalf("secret argument: %v", err)
	}
	c.Package.PackageArguments[0].IsSecret = false
	// Another npm registry than the user's.
	c.Package.RegistryBaseURL = "https://npm.corp.example"
	if _, err := Build(s, c, "", Indexes{NPM: func(string) string { return "http://127.0.0.1:4873/" }}, none); err == nil ||
		!strings.Contains(err.Error(), "is on https://npm.corp.example, but this host installs from http://127.0.0.1:4873") {
		t.Fatalf("registryBaseUrl: %v", err)
	}
	// The user's own is accepted (then the secret is what is missing).
	if _, err := Build(s, c, "", Indexes{NPM: func(string) string { return "https://npm.corp.example/" }}, none); err == nil || !strings.Contains(err.Error(), "LICENSE_CODE") {
		t.Fatalf("registryBaseUrl, the user's: %v", err)
	}
	c.Package.RegistryBaseURL = ""
	// A runtime argument install-once cannot honour.
	c.Package.RuntimeArguments = []Argument{{Type: "named", Name: "--registry", Input: Input{Value: "https://elsewhere"}}}
	if _, err := Build(s, c, "", Indexes{}, none); err == nil || !strings.Contains(err.Error(), "cannot be honoured by install-once") {
		t.Fatalf("runtime argument: %v", err)
	}
}

func TestBuildRemote(t *testing.T) {
	s := testServer(t)
	c, _, _ := Choose(s, TypeRemote)
	key := filepath.Join(t.TempDir(), "key")
	os.WriteFile(key, []byte("k-123\n"), 0o600)
	a := ask.New(strings.NewReader("acme\n"), &strings.Builder{}, nil, map[string]string{"X-Api-Key": key})
	p, err := Build(s, c, "", Indexes{}, a)
	if err != nil {
		t.Fatal(err)
	}
	if p.URL != "https://acme.example.com/mcp" || p.Transport != "http" || p.Headers["X-Api-Key"] != "k-123" || !slices.Equal(p.Secrets, []string{"X-Api-Key"}) {
		t.Fatalf("plan %+v", p)
	}
	var e map[string]any
	json.Unmarshal(p.Entry(), &e)
	if e["url"] != "https://acme.example.com/mcp" || e["type"] != "http" {
		t.Fatalf("entry %s", p.Entry())
	}
}
