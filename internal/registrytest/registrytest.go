//go:build unix

// Package registrytest runs the official MCP Registry for tests: the
// server of github.com/modelcontextprotocol/registry (cmd/registry, pinned
// by registryserver/go.mod and built from it on first use) on a PostgreSQL
// of the test's own, seeded through the registry's own publish API.
//
//	reg := registrytest.Start(t, corpus["io.github.domdomegg/airtable-mcp-server@1.7.2"])
//	// GET reg.URL + "/v0.1/servers?search=airtable", .../v0.1/servers/{name}/versions/latest
//	reg.Publish(t, corpus["io.github.domdomegg/airtable-mcp-server@1.7.3"]) // now the latest
//
// Every document goes through what a publisher's does: the registry's
// validation against the official server.json schema and its own rules (a
// document it refuses fails the test, with its answer), then its choice of
// the latest version (the highest semantic version; for versions that are
// not semantic ones, the last published). What it does not do here is ask
// npm, PyPI, NuGet, OCI registries or GitHub whether a package exists and
// names the server (MCP_REGISTRY_ENABLE_REGISTRY_VALIDATION=false): tests
// have no network. The registry's own rules still hold, among them: a
// remote's URL must be https and not localhost or 127.0.0.1.
//
// It needs PostgreSQL (Debian: apt-get install postgresql; .ci/run
// installs it) and, the first time, the registry's modules from the Go
// module proxy (.ci/run downloads them); without either the test fails,
// saying so.
//
// Built on unix only (PostgreSQL run as another user, flock, process
// groups); the tests that use it are tagged unix too.
package registrytest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long the registry may take to answer /v0.1/health
// (its migrations run first).
const startTimeout = 60 * time.Second

// requestTimeout bounds each request Start and Publish make.
const requestTimeout = 30 * time.Second

// maxAnswer bounds how much of the registry's answer Publish reads.
const maxAnswer = 1 << 20

// portAttempts is how many loopback ports Start tries: it picks a free one
// and hands it to the registry, which another process may take meanwhile.
const portAttempts = 3

// Registry is a running official MCP Registry.
type Registry struct {
	// URL is its base address, "http://127.0.0.1:PORT"; the API is at
	// URL+"/v0.1/..." (and the older URL+"/v0/...").
	URL string

	// key signs the registry tokens Publish presents: the registry was
	// started with its seed as MCP_REGISTRY_JWT_PRIVATE_KEY.
	key  ed25519.PrivateKey
	http *http.Client
}

// Start runs the official registry until the test ends, with docs (each a
// server.json document) published in order, and returns once it serves
// them. It fails the test when the registry cannot be built or started,
// when PostgreSQL is missing, or when the registry refuses a document.
func Start(t testing.TB, docs ...[]byte) *Registry {
	t.Helper()
	bin := registryBinary(t)
	database := startPostgres(t)
	seed := make([]byte, ed25519.SeedSize)
	rand.Read(seed)
	r := &Registry{key: ed25519.NewKeyFromSeed(seed), http: &http.Client{Timeout: requestTimeout}}
	for attempt := 1; ; attempt++ {
		err := r.run(t, bin, database, hex.EncodeToString(seed))
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || attempt == portAttempts {
			t.Fatal(err)
		}
	}
	for _, doc := range docs {
		r.Publish(t, doc)
	}
	return r
}

// errPortTaken is a registry's exit because its port was taken.
var errPortTaken = errors.New("the registry's port was taken")

// run starts the registry on a free loopback port and waits until it
// answers /v0.1/health; it is stopped when t ends.
func (r *Registry) run(t testing.TB, bin, database, jwtSeed string) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin)
	cmd.Env = append(registryEnv(),
		"MCP_REGISTRY_SERVER_ADDRESS="+addr,
		"MCP_REGISTRY_DATABASE_URL="+database,
		"MCP_REGISTRY_DATABASE_MAX_CONNECTIONS=8",
		"MCP_REGISTRY_DATABASE_MIN_CONNECTIONS=1",
		"MCP_REGISTRY_JWT_PRIVATE_KEY="+jwtSeed,
		"MCP_REGISTRY_ENABLE_REGISTRY_VALIDATION=false",
		"MCP_REGISTRY_ENABLE_ANONYMOUS_AUTH=false",
	)
	cmd.SysProcAttr = sysProcAttr(nil)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout // one pipe: the registry logs to stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("the official registry (%s): %w", bin, err)
	}
	var log logTail
	exited := make(chan struct{})
	go func() {
		watchLog(out, &log, "", nil)
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM) // it shuts down gracefully
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	r.URL = "http://" + addr
	deadline := time.Now().Add(startTimeout)
	for !r.healthy() {
		select {
		case <-exited:
			if strings.Contains(log.String(), "address already in use") {
				return errPortTaken
			}
			return fmt.Errorf("the official registry exited at start:\n%s", log.String())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the official registry does not answer %s/v0.1/health after %v:\n%s", r.URL, startTimeout, log.String())
		}
		time.Sleep(20 * time.Millisecond) // polling readiness: it logs nothing once it listens
	}
	return nil
}

// registryEnv is the registry's environment: the test's, minus any
// MCP_REGISTRY_* setting that Start does not choose.
func registryEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCP_REGISTRY_") {
			env = append(env, kv)
		}
	}
	return env
}

// healthy reports whether the registry answers /v0.1/health with 200.
func (r *Registry) healthy() bool {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(r.URL + "/v0.1/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Publish publishes doc, a server.json document, as its publisher would
// (POST /v0.1/publish with a registry token allowed to publish any name):
// from then on the registry serves it, as the server's latest version if
// it is the highest. It fails the test when the registry refuses it.
func (r *Registry) Publish(t testing.TB, doc []byte) {
	t.Helper()
	if err := r.publish(doc); err != nil {
		t.Fatal(err)
	}
}

func (r *Registry) publish(doc []byte) error {
	var head struct{ Name, Version string }
	json.Unmarshal(doc, &head) // only to name it in an error: the registry judges the document
	token, err := r.token()
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, r.URL+"/v0.1/publish", bytes.NewReader(doc))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := r.http.Do(req)
	if err != nil {
		return fmt.Errorf("publishing %s@%s: %w", head.Name, head.Version, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the registry refused %s@%s: %s: %s", head.Name, head.Version, resp.Status, answer)
	}
	return nil
}

// token mints a registry token as the registry's own token exchange does
// (an EdDSA JWT signed with the key the registry was started with), with
// the permission to publish every name, as an administrator's.
func (r *Registry) token() (string, error) {
	now := time.Now()
	type permission struct {
		Action   string `json:"action"`
		Resource string `json:"resource"`
	}
	claims, err := json.Marshal(struct {
		Issuer      string       `json:"iss"`
		IssuedAt    int64        `json:"iat"`
		NotBefore   int64        `json:"nbf"`
		Expires     int64        `json:"exp"`
		AuthMethod  string       `json:"auth_method"`
		Subject     string       `json:"auth_method_sub"`
		Permissions []permission `json:"permissions"`
	}{"mcp-registry", now.Add(-time.Minute).Unix(), now.Add(-time.Minute).Unix(), now.Add(5 * time.Minute).Unix(),
		"none", "registrytest", []permission{{"publish", "*"}}})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString([]byte(`{"alg":"EdDSA","typ":"JWT"}`)) + "." + enc.EncodeToString(claims)
	return signed + "." + enc.EncodeToString(ed25519.Sign(r.key, []byte(signed))), nil
}
