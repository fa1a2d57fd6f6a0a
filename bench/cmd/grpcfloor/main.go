// Command grpcfloor serves the bare gRPC echo of package grpcfloor on a unix
// socket, for the benchmark's floor of the plugin hop:
//
//	grpcfloor SOCKET
//
// It prints "ready" on stdout once it listens and serves until stdin closes.
package main

import (
	"fmt"
	"io"
	"net"
	"os"

	"github.com/plughost/plughost/bench/internal/grpcfloor"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: grpcfloor SOCKET")
		os.Exit(2)
	}
	lis, err := net.Listen("unix", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpcfloor:", err)
		os.Exit(1)
	}
	s := grpcfloor.NewServer()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		s.Stop()
	}()
	fmt.Println("ready")
	if err := s.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, "grpcfloor:", err)
		os.Exit(1)
	}
}
