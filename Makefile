# plughost: `make build`, `make test`, `make run`, `make proto`.
GO      ?= go
BIN     := bin
# Every directory under plugins/ is one bundled plugin (a main package).
PLUGINS := $(patsubst plugins/%/,%,$(sort $(dir $(wildcard plugins/*/main.go))))
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all build test run proto clean

all: build

## build: bin/plughost and every bundled plugin as bin/plugins/<name>
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/plughost ./cmd/plughost
	@mkdir -p $(BIN)/plugins
	@for p in $(PLUGINS); do echo "$(GO) build -o $(BIN)/plugins/$$p ./plugins/$$p"; \
		$(GO) build -o $(BIN)/plugins/$$p ./plugins/$$p || exit 1; done

## test: vet, the macOS build, and every test (with the race detector)
test: build
	$(GO) vet ./...
	GOOS=darwin $(GO) build ./...
	$(GO) test -race -timeout 10m ./...

## run: serve the bundled plugins over stdio (the workspace of `files` is bin/workspace)
run: build
	@mkdir -p $(BIN)/workspace
	$(BIN)/plughost serve --plugins $(BIN)/plugins --workspace $(BIN)/workspace

## proto: regenerate pluginproto/internal/pb with the generators pinned in go.mod
proto:
	$(GO) build -o $(BIN)/tools/ google.golang.org/protobuf/cmd/protoc-gen-go google.golang.org/grpc/cmd/protoc-gen-go-grpc
	cd pluginproto && $(GO) generate .

clean:
	rm -rf $(BIN)
