# plughost: `make build`, `make test`, `make run`, `make proto`.
GO      ?= go
BIN     := bin
# Every directory under plugins/ is one bundled plugin (a main package).
PLUGINS := $(patsubst plugins/%/,%,$(sort $(dir $(wildcard plugins/*/main.go))))
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

.PHONY: all build test tidy-check deploy-check run proto clean conformance install uninstall release

all: build

## build: bin/plughost and every bundled plugin as bin/plugins/<name>; the conformance suite's
## fixture plugin (a test fixture, not a product) as bin/test-plugins/conformance, and its client
## harness (plughost's OAuth client for the suite's auth scenarios) as bin/conformance-client
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/plughost ./cmd/plughost
	@mkdir -p $(BIN)/plugins
	@for p in $(PLUGINS); do echo "$(GO) build -o $(BIN)/plugins/$$p ./plugins/$$p"; \
		$(GO) build -o $(BIN)/plugins/$$p ./plugins/$$p || exit 1; done
	$(GO) build -o $(BIN)/test-plugins/conformance ./conformance/plugin
	$(GO) build -o $(BIN)/conformance-client ./internal/conformanceclient

## test: go.mod tidy, vet (for Linux, and cross for Windows and macOS: every package and test compiles there; Windows
## with -trimpath, as make release builds, so internal/release's reproducibility test finds its packages compiled), the
## deploy/ check, every test (with the race detector), then the
## conformance suite. -parallel 4: the end-to-end tests mostly wait on the processes they start (node, npm, a
## registry), so four at a time on two cores take cmd/plughost from about 600 s to 450 s (go test -json's figures).
## What tests keep (t.ArtifactDir: the console's browser test's screenshots) lands in bin/test-artifacts/_artifacts
test: tidy-check build deploy-check conformance/node_modules examples/node-plugin/node_modules examples/node-hook/node_modules \
		internal/npmregistry/node_modules \
		internal/mcpbcli/node_modules internal/browsertest/node_modules
	$(GO) vet ./...
	GOOS=windows $(GO) vet -trimpath ./...
	GOOS=darwin $(GO) vet ./...
	@mkdir -p $(BIN)/test-artifacts
	$(GO) test -race -timeout 20m -parallel 4 -artifacts -outputdir $(CURDIR)/$(BIN)/test-artifacts ./...
	conformance/run.sh $(BIN)/plughost $(BIN)/test-plugins/conformance $(BIN)/conformance-client

## tidy-check: fail when `go mod tidy` would change go.mod or go.sum (a dependency used
## directly but marked indirect, a missing checksum); the fix is to run `go mod tidy` and commit
tidy-check:
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run 'go mod tidy' and commit the result" >&2; exit 1; }

## deploy-check: deploy/kubernetes, deploy/Dockerfile and deploy/systemd, checked without a cluster, Docker or a
## running systemd (systemd-analyze verify where it exists): strict
## decoding into the Kubernetes API types, cross-references, the real `plughost serve` flags, host/config
## (deploy/check is its own module, so the Kubernetes libraries never enter plughost's); and internal/otlpsink, the
## OTLP receiver the trace tests run (its own module too, for the collector's dependencies), tidy and vetted
deploy-check: build
	cd deploy/check && $(GO) mod tidy -diff && $(GO) vet ./... && \
		PLUGHOST_BIN=$(CURDIR)/$(BIN)/plughost $(GO) test -count=1 ./...
	cd internal/otlpsink && $(GO) mod tidy -diff && $(GO) vet ./...

## release: VERSION=vX.Y.Z (a semantic version; the tree must be clean) makes the annotated tag VERSION and writes
## dist/VERSION/: plughost and the bundled plugins for linux, darwin, windows x amd64, arm64 (tar.gz; zip for
## windows), the source archive, a CycloneDX SBOM (cyclonedx-gomod, pinned in tools/sbom/go.mod), SHA256SUMS, and
## SHA256SUMS.sig signed by `ssh-keygen -Y sign -n file -f $(RELEASE_KEY)` (a private key file, or the public key of
## one in ssh-agent: a passphrase comes from the agent or the terminal). Without RELEASE_KEY it says loudly that
## the release is unsigned. Reproducible: the same commit and Go version give the same archives (internal/release)
RELEASE_KEY ?= $(PLUGHOST_RELEASE_KEY)
release:
	$(GO) run ./internal/release/cmd/release -version '$(VERSION)' -key '$(RELEASE_KEY)' -tag

## install: bin/plughost to $(PREFIX)/bin (default ~/.local/bin) and the bundled plugins to the default plugin
## directory, $(PLUGINDIR) ($XDG_DATA_HOME/plughost/plugins, i.e. ~/.local/share/plughost/plugins). Each file is
## written as .NAME.tmp beside its place and renamed over it: a running plughost watches the plugin directory and
## never sees half a binary. Then `plughost init` writes a configuration and prints the clients' snippets.
PREFIX    ?= $(HOME)/.local
DATA_HOME := $(or $(XDG_DATA_HOME),$(HOME)/.local/share)
PLUGINDIR ?= $(DATA_HOME)/plughost/plugins
install: build
	@mkdir -p $(PREFIX)/bin $(PLUGINDIR)
	@install -m 0755 $(BIN)/plughost $(PREFIX)/bin/.plughost.tmp && mv -f $(PREFIX)/bin/.plughost.tmp $(PREFIX)/bin/plughost
	@echo "installed $(PREFIX)/bin/plughost"
	@for p in $(PLUGINS); do install -m 0755 $(BIN)/plugins/$$p $(PLUGINDIR)/.$$p.tmp && \
		mv -f $(PLUGINDIR)/.$$p.tmp $(PLUGINDIR)/$$p || exit 1; done
	@echo "installed the bundled plugins ($(PLUGINS)) in $(PLUGINDIR)"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "note: $(PREFIX)/bin is not on your PATH: add it, e.g. export PATH=\"$(PREFIX)/bin:\$$PATH\"";; esac

## uninstall: removes what install put in place (the configuration and the plugin directory's other files stay)
uninstall:
	rm -f $(PREFIX)/bin/plughost
	@for p in $(PLUGINS); do rm -f $(PLUGINDIR)/$$p; done

## run: serve the bundled plugins over Streamable HTTP on 127.0.0.1:8080/mcp (the workspace of `files` is bin/workspace)
run: build
	@echo "plughost: serving the bundled plugins at http://127.0.0.1:8080/mcp (Ctrl-C stops it)"
	@echo "  MCP Inspector: npx @modelcontextprotocol/inspector, Transport Type \"Streamable HTTP\", URL http://127.0.0.1:8080/mcp"
	@echo "  any MCP client: Streamable HTTP at http://127.0.0.1:8080/mcp (2024-11-05 clients: HTTP+SSE at http://127.0.0.1:8080/sse)"
	$(BIN)/plughost serve --http 127.0.0.1:8080 --plugins $(BIN)/plugins --workspace $(BIN)/workspace

## conformance: the official MCP conformance suite against `plughost serve --http` with the
## conformance plugin, judged by conformance/expected-failures.txt (needs `npm ci` in conformance/)
conformance: build conformance/node_modules
	conformance/run.sh $(BIN)/plughost $(BIN)/test-plugins/conformance $(BIN)/conformance-client

## conformance/node_modules: the suite, the TypeScript SDK and Node 22, pinned by the lockfile
conformance/node_modules: conformance/package-lock.json
	cd conformance && npm ci --no-audit --no-fund
	@touch $@

## examples/node-plugin/node_modules: the Node.js example plugin's gRPC packages, pinned by its lockfile
## (cmd/plughost's TestNodeExamplePlugin runs the example, with the Node 22 of conformance/node_modules)
examples/node-plugin/node_modules: examples/node-plugin/package-lock.json
	cd examples/node-plugin && npm ci --no-audit --no-fund --ignore-scripts
	@touch $@

## examples/node-hook/node_modules: the Node.js example hook's gRPC packages, pinned by its lockfile
## (host/pluginclient's TestNodeHookExample runs the example, with the Node 22 of conformance/node_modules)
examples/node-hook/node_modules: examples/node-hook/package-lock.json
	cd examples/node-hook && npm ci --no-audit --no-fund --ignore-scripts
	@touch $@

## internal/npmregistry/node_modules: Verdaccio, the real npm registry of the install-once tests
## (host/packages, cmd/plughost's TestPackage*), pinned by its lockfile
internal/npmregistry/node_modules: internal/npmregistry/package-lock.json
	cd internal/npmregistry && npm ci --no-audit --no-fund
	@touch $@

## internal/mcpbcli/node_modules: the MCP Bundle CLI (@anthropic-ai/mcpb), with which the bundle tests pack and sign
## bundles as authors do (host/bundlesig, host/mcpb, cmd/plughost), pinned by its lockfile
internal/mcpbcli/node_modules: internal/mcpbcli/package-lock.json
	cd internal/mcpbcli && npm ci --no-audit --no-fund
	@touch $@

## internal/browsertest/node_modules: Playwright's driver (playwright-core, without a browser of its own), with which
## cmd/plughost's TestConsoleInABrowser drives Debian's Chromium (/usr/bin/chromium, package chromium), pinned by its lockfile
internal/browsertest/node_modules: internal/browsertest/package-lock.json
	cd internal/browsertest && npm ci --no-audit --no-fund
	@touch $@

## bench: plughost against go-sdk, mcp-go and a hand-written floor, one load client, ratios and targets
## (bench/ is its own module, so the peers never enter the product; not run by CI). BENCH_FLAGS adds flags
## (bin/bench/bench -h), e.g. BENCH_FLAGS='-only calls,grpc'. The wrapped section runs server-everything on the
## Node 22 of conformance/node_modules, directly and through plughost; the install section, a declared
## `npx -y @modelcontextprotocol/server-memory@VERSION` (pinned by conformance/package-lock.json): its first start
## (the sandboxed install, from a local Verdaccio with an uplink to `npm config get registry`, primed untimed), its
## later, offline starts and a read_graph call's p50/p90, each against node running the same tree directly (one run:
## `make bench-bin && bin/bench/bench -only install`, ~2 min); the toolsearch section, ../shared/toolsearch as
## 70 corpusplugin plugins, in full and in tool search mode. Then a call over HTTP with authorization off, with the static
## token and with OAuth (a JWT checked per request), as ratios (HTTPAuth's vs-off); tool search's index: its speed over 10,013 tools,
## and its ranking by words and by meaning (a real model, conformance/embeddings.mjs) on ../shared/toolsearch.
.PHONY: bench bench-quick bench-bin
bench-bin: build
	cd bench && $(GO) build -o ../$(BIN)/bench/ ./...
	$(GO) build -o $(BIN)/bench/corpusplugin ./internal/toolsearcheval/corpusplugin
	$(GO) build -o $(BIN)/bench/askplugin ./cmd/plughost/internal/askplugin
	$(GO) build -ldflags "-X main.version=$(VERSION)-next" -o $(BIN)/bench/plughost-next ./cmd/plughost
	cd internal/otlpsink && $(GO) build -o ../../$(BIN)/bench/otlpsink .
bench: bench-bin conformance/node_modules internal/npmregistry/node_modules
	$(BIN)/bench/bench -plughost $(BIN)/plughost -plugins $(BIN)/plugins -bin $(BIN)/bench -out bench/out $(BENCH_FLAGS)
	$(GO) test -run '^$$' -bench 'HTTPCall|HTTPTask|HTTPAuth' -benchmem ./host/mcp/streamable
	$(GO) test -run '^$$' -bench 'BridgeCall|WireClientCall|GoSDKClientCall' -benchmem ./host/wrapped
	$(GO) test -run '^$$' -bench 'Search10k|Set1000' -benchmem ./host/toolsearch
	$(GO) test -run '^$$' -bench 'CallWithRules|ListWithRules' -benchmem ./host/catalog
	$(GO) test -run '^$$' -bench 'Rule' -benchmem ./host/access
	$(GO) test -run 'TestRanking' -v -bench 'SemanticRanking' -benchtime 1x ./host/toolsearch
## bench-quick: the same, shorter (under two minutes once built, the install section's 50 s included)
bench-quick: bench-bin conformance/node_modules internal/npmregistry/node_modules
	$(BIN)/bench/bench -quick -plughost $(BIN)/plughost -plugins $(BIN)/plugins -bin $(BIN)/bench -out bench/out $(BENCH_FLAGS)

## fuzz: every fuzz target in turn, FUZZTIME each (default 10m, so about 1.5 hours), one worker (-parallel 1);
## what a target finds new lands in $(go env GOCACHE)/fuzz, a crash in the package's testdata/fuzz (commit it with
## its fix). `go test` (CI) replays the committed corpora, testdata/fuzz/<target>, as ordinary tests.
FUZZTIME ?= 10m
FUZZ_TARGETS := host/mcp:FuzzDispatch host/mcp:FuzzSession internal/jsonrpc:FuzzDecode internal/jsonrpc:FuzzAppendString internal/jsonrpc:FuzzValue \
	host/mcp/streamable:FuzzHTTPHandler host/device:FuzzDecoder host/config:FuzzParse host/catalog:FuzzToolDefinition \
	host/pluginclient:FuzzPluginFrame internal/lane:FuzzLaneReader
.PHONY: fuzz
fuzz:
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
		echo "$(GO) test -run '^$$' -fuzz '^$$fn$$' -fuzztime $(FUZZTIME) -parallel 1 ./$$pkg"; \
		$(GO) test -timeout 0 -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) -parallel 1 ./$$pkg || exit 1; done

## chaos: two real hosts (stdio and Streamable HTTP) under 16 calls in flight each while plugins are SIGKILLed
## CHAOS_KILLS times (default 1000) and their binaries replaced CHAOS_REPLACES times (default 50); prints the
## answers, the leaks and the resident memory (about 5 minutes; not run by CI: cmd/plughost/chaos_test.go)
.PHONY: chaos
chaos:
	$(GO) test -tags chaos -run '^TestChaos$$' -v -count=1 -timeout 15m ./cmd/plughost

## proto: regenerate internal/pluginpb from pluginproto/proto with the generators pinned in go.mod
## (pluginproto/internal/protogen compiles the .proto in Go: no system protoc)
proto:
	cd pluginproto && $(GO) generate .

clean:
	rm -rf $(BIN)
