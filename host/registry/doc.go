// Package registry finds MCP servers in an MCP Registry and turns one
// into what plughost installs: `plughost install NAME[@VERSION]` and
// `plughost search-registry QUERY` are built on it.
//
// A registry is a Source: the official registry's API v0.1 over HTTP(S)
// (Client: GET /v0.1/servers/{name}/versions/{version} and
// /v0.1/servers?search=, each request bounded in time and each answer in
// size), or a file or directory of server.json documents for a host
// without the network (Files). Every server.json is validated against the
// official schema 2025-12-11, embedded (Parse), before anything of it is
// used; a registry that is down, slow, or answers garbage is an error
// saying which.
//
// A server offers packages (npm, pypi, oci, nuget, mcpb) and remotes
// (streamable-http, sse); Choose picks the first plughost runs, or the
// type asked for, and says why the others are not run (no container
// runtime for oci, no .NET for nuget). Build resolves the choice's
// inputs (arguments, environment variables, headers, URL variables),
// asking for those the entry leaves to the user (isRequired, default,
// choices, format, {variables} in a value, repeated arguments), into a
// Plan: a package runner's one-liner (npx -y PKG@VERSION ARGS…, uvx
// PKG==VERSION ARGS…) that host/packages installs once, or a remote URL
// and headers, with the names of the secret values. A secret never goes
// on a command line: a secret argument is refused; a secret variable or
// header is written to a file by host/importer, which the plan feeds.
//
//	src, _ := registry.Open(url, 0)
//	e, _ := src.Get(ctx, "io.github.acme/notes", "")
//	c, others, _ := registry.Choose(&e.Server, "")
//	plan, _ := registry.Build(&e.Server, c, src.String(), indexes, asker)
//	plan.Describe(os.Stdout, others)
package registry
