package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
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
	var tokens []device.Token
	if f.TokensFile != "" {
		var err error
		if tokens, err = readTokens(f.TokensFile); err != nil {
			return err
		}
	}
	if len(tokens) == 0 && !loopback(f.Listen) {
		return fmt.Errorf("--device-listen %s is reachable from other machines: give --device-tokens FILE so that devices must authenticate", f.Listen)
	}
	if anyID := tokensForAnyID(tokens); anyID > 0 {
		h.log.Warn("device tokens without ids=: a device holding one may register any voice id, and so take another device's name",
			"tokens", anyID, "file", f.TokensFile)
	}
	h.sampler = new(sampler)
	srv, err := device.NewServer(&device.Options{
		Publisher:            h.catalog,
		Logger:               h.log.Named("device"),
		Sampler:              h.sampler,
		Tokens:               tokens,
		CallTimeout:          f.CallTimeout,
		IdleTimeout:          f.IdleTimeout,
		AuthTimeout:          f.AuthTimeout,
		FrameTimeout:         f.FrameTimeout,
		MaxWaiting:           f.MaxWaiting,
		MaxWaitingPerAddress: f.MaxWaitingPerAddress,
		TLSConfig:            h.tlsConfig(),
		OnLimit:              h.obs.onLimit(),
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

// readTokens reads the --device-tokens file (device.ParseTokens).
func readTokens(path string) ([]device.Token, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--device-tokens: %w", err)
	}
	defer file.Close()
	tokens, err := device.ParseTokens(file)
	if err != nil {
		return nil, fmt.Errorf("--device-tokens %s: %w", path, err)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("--device-tokens: %s holds no token", path)
	}
	return tokens, nil
}

// tokensForAnyID counts the tokens that name no voice ids.
func tokensForAnyID(tokens []device.Token) int {
	n := 0
	for _, t := range tokens {
		if len(t.IDs) == 0 {
			n++
		}
	}
	return n
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
