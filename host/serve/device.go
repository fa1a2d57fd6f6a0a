package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"

	"github.com/plughost/plughost/host/device"
	"github.com/plughost/plughost/host/mcp"
)

// startDevices starts the device bridge when --device-listen was given:
// each device that registers services publishes them into the catalog.
func (h *Host) startDevices(f *DeviceOptions) error {
	if f == nil || f.Listen == "" {
		return nil
	}
	var tokens []string
	if f.TokensFile != "" {
		var err error
		if tokens, err = readTokens(f.TokensFile); err != nil {
			return err
		}
	}
	if len(tokens) == 0 && !loopback(f.Listen) {
		return fmt.Errorf("--device-listen %s is reachable from other machines: give --device-tokens FILE so that devices must authenticate", f.Listen)
	}
	h.sampler = new(sampler)
	srv, err := device.NewServer(&device.Options{
		Publisher:   h.catalog,
		Logger:      h.log.Named("device"),
		Sampler:     h.sampler,
		Tokens:      tokens,
		CallTimeout: f.CallTimeout,
		IdleTimeout: f.IdleTimeout,
		TLSConfig:   h.tlsConfig(),
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.Listen)
	if err != nil {
		return fmt.Errorf("--device-listen: %w", err)
	}
	if len(tokens) > 0 {
		h.warnClear("--device-listen", ln.Addr().String())
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

// sampler answers the device bridge's text tasks through the MCP server's
// clients (mcp.Server.CreateMessage). The device bridge starts with the
// host, before the MCP server exists: until serve hands it one with use,
// no client can sample. It maps mcp.ErrNoSamplingClient to
// device.ErrNoSampler, keeping host/mcp and host/device unaware of each
// other.
type sampler struct {
	srv atomic.Pointer[mcp.Server]
}

var _ device.Sampler = (*sampler)(nil)

// use makes srv's clients answer text tasks. s may be nil (no device
// bridge): then use does nothing.
func (s *sampler) use(srv *mcp.Server) {
	if s != nil {
		s.srv.Store(srv)
	}
}

func (s *sampler) CreateMessage(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	srv := s.srv.Load()
	if srv == nil {
		return nil, device.ErrNoSampler
	}
	res, err := srv.CreateMessage(ctx, params)
	if errors.Is(err, mcp.ErrNoSamplingClient) {
		return nil, fmt.Errorf("%w (%w)", device.ErrNoSampler, err)
	}
	return res, err
}

func (s *sampler) SamplingTools() bool {
	srv := s.srv.Load()
	return srv != nil && srv.SamplingTools()
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
