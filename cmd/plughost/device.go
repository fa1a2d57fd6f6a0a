package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/plughost/plughost/host/device"
)

// deviceFlags configure the device bridge of `plughost serve`.
type deviceFlags struct {
	listen      string
	tokensFile  string
	callTimeout time.Duration
	idleTimeout time.Duration
}

func (f *deviceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.listen, "device-listen", "", "accept devices (the framed ##START protocol) on this TCP address, e.g. 127.0.0.1:9000 (off unless given)")
	fs.StringVar(&f.tokensFile, "device-tokens", "", "file of device tokens, one per line (# comments); devices must then AUTH with one. Required for a non-loopback --device-listen")
	fs.DurationVar(&f.callTimeout, "device-call-timeout", device.DefaultCallTimeout, "how long a tool call waits for a device's result")
	fs.DurationVar(&f.idleTimeout, "device-idle-timeout", device.DefaultIdleTimeout, "close a device connection after this long without a frame from it")
}

// startDevices starts the device bridge when --device-listen was given:
// each device that registers services publishes them into the catalog.
func (h *host) startDevices(f *deviceFlags) error {
	if f == nil || f.listen == "" {
		return nil
	}
	var tokens []string
	if f.tokensFile != "" {
		var err error
		if tokens, err = readTokens(f.tokensFile); err != nil {
			return err
		}
	}
	if len(tokens) == 0 && !loopback(f.listen) {
		return fmt.Errorf("--device-listen %s is reachable from other machines: give --device-tokens FILE so that devices must authenticate", f.listen)
	}
	srv, err := device.NewServer(&device.Options{
		Publisher:   h.catalog,
		Logger:      h.log.Named("device"),
		Tokens:      tokens,
		CallTimeout: f.callTimeout,
		IdleTimeout: f.idleTimeout,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("--device-listen: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ctx, ln); err != nil {
			h.log.Error("device listener failed", "error", err)
		}
	}()
	h.devStop = func() { cancel(); <-done }
	return nil
}

// readTokens reads one token a line, skipping blank lines and # comments.
func readTokens(path string) ([]string, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--device-tokens: %w", err)
	}
	defer file.Close()
	var tokens []string
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" && !strings.HasPrefix(t, "#") {
			tokens = append(tokens, t)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--device-tokens: %w", err)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("--device-tokens: %s holds no token", path)
	}
	return tokens, nil
}

// loopback reports whether addr (host:port) can only be reached from this
// machine.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
