// Command protogen regenerates pluginproto's gRPC code without a system
// protoc: it does protoc's part in Go and hands the result to the code
// generators pinned as tools in go.mod.
//
// protoc's part is compiling the .proto files into descriptors (with their
// comments, which the generated code carries) and handing each generator a
// CodeGeneratorRequest on its stdin; the generator answers a
// CodeGeneratorResponse naming the files to write. github.com/bufbuild/
// protocompile, a Go implementation of protoc's compiler already in the
// module graph, does the compiling; the generators run as `go tool
// protoc-gen-go` and `go tool protoc-gen-go-grpc`, at the versions go.mod
// pins. Nothing is downloaded at generation time beyond the module cache,
// and a newcomer needs only Go.
//
// Usage, from pluginproto/ (go generate runs it):
//
//	go run ./internal/protogen -I proto -out ../internal/pluginpb plugin.proto
//
// The generated files differ from protoc's only in their header's version
// comment, which says "protoc (unknown)": no protoc took part.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// generators are the tools run on the compiled files, with the parameter
// each is given (protoc's --go_opt and --go-grpc_opt).
var generators = []struct{ tool, param string }{
	{"protoc-gen-go", "paths=source_relative"},
	{"protoc-gen-go-grpc", "paths=source_relative"},
}

func main() {
	importPath := flag.String("I", ".", "the directory the .proto files' names are relative to")
	out := flag.String("out", ".", "the directory the generated files are written to")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: protogen [-I DIR] [-out DIR] FILE.proto...")
		os.Exit(2)
	}
	if err := generate(context.Background(), *importPath, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "protogen:", err)
		os.Exit(1)
	}
}

// generate compiles files (names relative to importPath) and writes what
// every generator makes of them under out.
func generate(ctx context.Context, importPath, out string, files []string) error {
	compiler := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(&protocompile.SourceResolver{ImportPaths: []string{importPath}}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	compiled, err := compiler.Compile(ctx, files...)
	if err != nil {
		return err
	}
	req := &pluginpb.CodeGeneratorRequest{FileToGenerate: files}
	seen := map[string]bool{}
	for _, f := range compiled {
		req.ProtoFile = appendWithImports(req.ProtoFile, f, seen)
	}
	for _, g := range generators {
		req.Parameter = proto.String(g.param)
		if err := run(ctx, g.tool, req, out); err != nil {
			return err
		}
	}
	return nil
}

// appendWithImports appends f to list after the files it imports, as
// protoc orders a request's files (each after its dependencies), skipping
// those already seen.
func appendWithImports(list []*descriptorpb.FileDescriptorProto, f protoreflect.FileDescriptor, seen map[string]bool) []*descriptorpb.FileDescriptorProto {
	if seen[f.Path()] {
		return list
	}
	seen[f.Path()] = true
	imports := f.Imports()
	for i := range imports.Len() {
		list = appendWithImports(list, imports.Get(i).FileDescriptor, seen)
	}
	return append(list, protodesc.ToFileDescriptorProto(f))
}

// run hands req to the generator tool and writes the files it answers.
func run(ctx context.Context, tool string, req *pluginpb.CodeGeneratorRequest, out string) error {
	in, err := proto.Marshal(req)
	if err != nil {
		return err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "tool", tool)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go tool %s: %w\n%s", tool, err, stderr.Bytes())
	}
	var resp pluginpb.CodeGeneratorResponse
	if err := proto.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return fmt.Errorf("go tool %s answered no CodeGeneratorResponse: %w", tool, err)
	}
	if resp.Error != nil {
		return fmt.Errorf("go tool %s: %s", tool, resp.GetError())
	}
	for _, f := range resp.File {
		if f.InsertionPoint != nil {
			return fmt.Errorf("go tool %s: insertion points are not supported (file %s)", tool, f.GetName())
		}
		if !filepath.IsLocal(f.GetName()) {
			return fmt.Errorf("go tool %s: refusing to write %q outside %s", tool, f.GetName(), out)
		}
		name := filepath.Join(out, filepath.FromSlash(f.GetName()))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(name, []byte(f.GetContent()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
