package pluginproto

// internal/protogen compiles proto/plugin.proto in Go (no system protoc) and
// runs the generators pinned as tools in go.mod on it.
//go:generate go run ./internal/protogen -I proto -out ../internal/pluginpb plugin.proto
