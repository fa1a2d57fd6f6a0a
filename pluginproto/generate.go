package pluginproto

// The generators are pinned as tools in go.mod; protoc is Debian's
// protobuf-compiler 3.21.12.
//go:generate protoc --plugin=protoc-gen-go=../bin/tools/protoc-gen-go --plugin=protoc-gen-go-grpc=../bin/tools/protoc-gen-go-grpc --go_out=internal/pb --go_opt=paths=source_relative --go-grpc_out=internal/pb --go-grpc_opt=paths=source_relative -I proto proto/plugin.proto
