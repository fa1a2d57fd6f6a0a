//go:build unix

package registrytest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// serverResponse is one entry of the registry's v0.1 answers: the document
// and the registry's metadata about it.
type serverResponse struct {
	Server map[string]any `json:"server"`
	Meta   struct {
		Official struct {
			Status   string `json:"status"`
			IsLatest bool   `json:"isLatest"`
		} `json:"io.modelcontextprotocol.registry/official"`
	} `json:"_meta"`
}

// get GETs path from reg and decodes its JSON answer into v, failing the
// test unless the answer is 200.
func get(t *testing.T, reg *Registry, path string, v any) {
	t.Helper()
	resp, err := http.Get(reg.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
}

// versionPath is the v0.1 path of a server's version ("latest" too).
func versionPath(name, version string) string {
	return "/v0.1/servers/" + url.PathEscape(name) + "/versions/" + url.PathEscape(version)
}

// The corpus holds what the install tests need, each kind from a real
// registry entry or the registry's own reference examples.
func TestCorpus(t *testing.T) {
	docs := Corpus(t)
	kinds := map[string]bool{}
	for key, b := range docs {
		var d struct {
			Packages []struct {
				RegistryType         string
				EnvironmentVariables []struct{ IsSecret bool }
			}
			Remotes []struct {
				Type    string
				Headers []struct{ IsSecret bool }
			}
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		for _, p := range d.Packages {
			kinds["package "+p.RegistryType] = true
			for _, e := range p.EnvironmentVariables {
				kinds["secret environment variable"] = kinds["secret environment variable"] || e.IsSecret
			}
		}
		for _, r := range d.Remotes {
			kinds["remote "+r.Type] = true
			for _, h := range r.Headers {
				kinds["secret header"] = kinds["secret header"] || h.IsSecret
			}
		}
	}
	for _, want := range []string{"package npm", "package pypi", "package mcpb", "package oci", "package nuget",
		"remote streamable-http", "remote sse", "secret environment variable", "secret header"} {
		if !kinds[want] {
			t.Errorf("the corpus has no %s", want)
		}
	}
	for _, key := range []string{"io.github.domdomegg/airtable-mcp-server@1.7.2", "io.github.domdomegg/airtable-mcp-server@1.7.3",
		"io.github.modelcontextprotocol/server-everything@2026.8.31"} {
		if docs[key] == nil {
			t.Errorf("the corpus has no %s", key)
		}
	}
	// The map is the caller's: changing it leaves the next caller's whole.
	delete(docs, "io.github.domdomegg/airtable-mcp-server@1.7.2")
	if Corpus(t)["io.github.domdomegg/airtable-mcp-server@1.7.2"] == nil {
		t.Error("a caller's delete reached the corpus")
	}
	t.Logf("%d documents", len(docs)+1)
}

// The check of a corpus document refuses what the official schema refuses,
// and a document written to another schema.
func TestValidateRefuses(t *testing.T) {
	schema, err := officialSchema()
	if err != nil {
		t.Fatal(err)
	}
	good := Corpus(t)["io.github.domdomegg/time-mcp-pypi@1.0.6"]
	if _, err := validate(schema, good); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, old, new, want string }{
		{"no version", `"version": "1.0.6",` + "\n  \"packages\"", `"packages"`, "version"},
		{"a name without a namespace", `"io.github.domdomegg/time-mcp-pypi"`, `"time-mcp-pypi"`, "name"},
		{"an unknown transport", `"type": "stdio"`, `"type": "pigeon"`, "transport"},
		{"another schema", "2025-12-11", "2025-10-17", "$schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(string(good), tc.old, tc.new, 1)
			if bad == string(good) {
				t.Fatalf("%q is not in the document", tc.old)
			}
			_, err := validate(schema, []byte(bad))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("validate = %v, want an error naming %s", err, tc.want)
			}
			t.Log(err)
		})
	}
}

// The official registry, seeded with the whole corpus, serves each
// document as published, finds them by search, and marks the highest
// version of a server its latest.
func TestStartServesCorpus(t *testing.T) {
	docs := Corpus(t)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range docs {
			if !yield(k) {
				return
			}
		}
	})
	// Publish 1.7.3 before 1.7.2: the latest is the highest version, not
	// the last published.
	i, j := slices.Index(keys, "io.github.domdomegg/airtable-mcp-server@1.7.2"), slices.Index(keys, "io.github.domdomegg/airtable-mcp-server@1.7.3")
	keys[i], keys[j] = keys[j], keys[i]
	seed := make([][]byte, len(keys))
	for i, k := range keys {
		seed[i] = docs[k]
	}
	start := time.Now()
	reg := Start(t, seed...)
	t.Logf("Start with %d documents: %v", len(seed), time.Since(start).Round(time.Millisecond))

	for _, key := range keys {
		var want map[string]any
		if err := json.Unmarshal(docs[key], &want); err != nil {
			t.Fatal(err)
		}
		var got serverResponse
		get(t, reg, versionPath(want["name"].(string), want["version"].(string)), &got)
		if !reflect.DeepEqual(got.Server, want) {
			g, _ := json.MarshalIndent(got.Server, "", "  ")
			t.Errorf("%s: the registry serves\n%s\nfor\n%s", key, g, docs[key])
		}
		if got.Meta.Official.Status != "active" {
			t.Errorf("%s: status %q", key, got.Meta.Official.Status)
		}
	}

	var latest serverResponse
	get(t, reg, versionPath("io.github.domdomegg/airtable-mcp-server", "latest"), &latest)
	if v := latest.Server["version"]; v != "1.7.3" || !latest.Meta.Official.IsLatest {
		t.Errorf("latest airtable-mcp-server: version %v, isLatest %v; want 1.7.3, true", v, latest.Meta.Official.IsLatest)
	}

	var found struct {
		Servers  []serverResponse `json:"servers"`
		Metadata struct {
			Count int `json:"count"`
		} `json:"metadata"`
	}
	get(t, reg, "/v0.1/servers?search=airtable", &found)
	var versions []string
	for _, s := range found.Servers {
		if s.Server["name"] != "io.github.domdomegg/airtable-mcp-server" {
			t.Errorf("search=airtable found %v", s.Server["name"])
		}
		versions = append(versions, s.Server["version"].(string))
	}
	slices.Sort(versions)
	if !slices.Equal(versions, []string{"1.7.2", "1.7.3"}) {
		t.Errorf("search=airtable found versions %v, want 1.7.2 and 1.7.3", versions)
	}
	get(t, reg, "/v0.1/servers?search=airtable&version=latest", &found)
	if len(found.Servers) != 1 || found.Servers[0].Server["version"] != "1.7.3" {
		t.Errorf("search=airtable&version=latest found %d servers (%v), want 1.7.3 alone", len(found.Servers), found.Servers)
	}
	get(t, reg, "/v0.1/servers?limit=100", &found)
	if len(found.Servers) != len(keys) {
		t.Errorf("the registry lists %d server versions, want %d", len(found.Servers), len(keys))
	}
}

// Publish adds a version that becomes the latest (an upgrade's path), and
// a document the registry refuses is an error with its answer.
func TestPublish(t *testing.T) {
	v1 := Corpus(t)["io.github.modelcontextprotocol/server-memory@2026.8.31"]
	reg := Start(t, v1)
	var latest serverResponse
	get(t, reg, versionPath("io.github.modelcontextprotocol/server-memory", "latest"), &latest)
	if latest.Server["version"] != "2026.8.31" {
		t.Fatalf("latest is %v before the upgrade", latest.Server["version"])
	}

	v2 := strings.ReplaceAll(string(v1), "2026.8.31", "2026.9.1")
	reg.Publish(t, []byte(v2))
	get(t, reg, versionPath("io.github.modelcontextprotocol/server-memory", "latest"), &latest)
	if latest.Server["version"] != "2026.9.1" || !latest.Meta.Official.IsLatest {
		t.Fatalf("latest is %v (isLatest %v) after publishing 2026.9.1", latest.Server["version"], latest.Meta.Official.IsLatest)
	}
	var all struct{ Servers []serverResponse }
	get(t, reg, "/v0.1/servers/"+url.PathEscape("io.github.modelcontextprotocol/server-memory")+"/versions", &all)
	if len(all.Servers) != 2 {
		t.Fatalf("%d versions listed, want 2", len(all.Servers))
	}

	// What the install tests serve here, the registry accepts: a remote at
	// another loopback address over TLS; an npm package of a local registry
	// (Verdaccio); a bundle downloaded from a loopback port.
	reg.Publish(t, []byte(`{"$schema": "`+SchemaURL+`", "name": "io.github.example/loopback", "description": "x", "version": "1.0.0",
		"remotes": [{"type": "streamable-http", "url": "https://[::1]:8443/mcp", "headers": [{"name": "Authorization", "isSecret": true}]}],
		"packages": [
			{"registryType": "npm", "registryBaseUrl": "http://127.0.0.1:4873", "identifier": "@acme/hello-mcp", "version": "1.0.0", "transport": {"type": "stdio"}},
			{"registryType": "mcpb", "identifier": "http://127.0.0.1:8080/hello.mcpb", "version": "1.0.0",
				"fileSha256": "0000000000000000000000000000000000000000000000000000000000000000", "transport": {"type": "stdio"}}]}`))

	for _, tc := range []struct{ name, doc, want string }{
		{"the same version again", v2, "already exists"},
		{"a schema violation", strings.Replace(v2, `"name": "io.github.modelcontextprotocol/server-memory"`, `"name": "memory"`, 1), "422"},
		// The registry's own rule: a remote is https and not on localhost.
		{"a remote on localhost", `{"$schema": "` + SchemaURL + `", "name": "io.github.example/local", "description": "x", "version": "1.0.0",
			"remotes": [{"type": "streamable-http", "url": "http://127.0.0.1:1/mcp"}]}`, "422"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := reg.publish([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("publish = %v, want an error with %q", err, tc.want)
			}
			t.Log(err)
		})
	}
}
