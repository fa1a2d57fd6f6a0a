package device

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/catalog"
	"github.com/plughost/plughost/host/naming"
	"github.com/plughost/plughost/host/tool"
)

// Publisher receives each registered device as a tool.Provider.
// *catalog.Catalog implements it. For any one provider name the server
// calls it in order, never concurrently.
type Publisher interface {
	// Set publishes p, replacing any provider of the same name.
	Set(p tool.Provider)
	// Remove withdraws the provider of that name.
	Remove(name string)
}

// The limits OnLimit names.
const (
	// LimitDevices: a device refused because MaxConns devices are
	// admitted.
	LimitDevices = "devices"
	// LimitDevicesWaiting: a connection evicted to make room for a newer
	// one, past MaxWaiting or MaxWaitingPerAddress.
	LimitDevicesWaiting = "devices_waiting"
	// LimitDeviceFrameSize: a frame past MaxFrame, or MaxFrameBeforeAuth
	// before the device is admitted.
	LimitDeviceFrameSize = "device_frame_size"
	// LimitDeviceTimeout: a connection not admitted within AuthTimeout, or
	// a frame not in within FrameTimeout.
	LimitDeviceTimeout = "device_timeout"
)

// limitHit counts a connection closed at limit.
func (s *Server) limitHit(limit string) {
	if s.opts.OnLimit != nil {
		s.opts.OnLimit(limit)
	}
}

// skipReporter is implemented by a Publisher that may leave some of a
// provider's tools out (*catalog.Catalog: a schema that does not compile,
// the items limit all devices share): a device is told which, and why, in
// the STATUS error that answers its register.
type skipReporter interface {
	SkippedOf(provider string) []catalog.Skip
}

// Sampler asks a connected MCP client's model for a message. The device
// bridge uses it to answer text tasks.
type Sampler interface {
	// CreateMessage sends sampling/createMessage with params (the MCP
	// CreateMessageRequestParams as JSON) and returns the client's
	// CreateMessageResult as JSON. It returns an error wrapping
	// ErrNoSampler when no connected client supports sampling.
	CreateMessage(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
	// SamplingTools reports whether the client that will answer declared
	// sampling.tools (so tools and toolChoice may be sent).
	SamplingTools() bool
}

// Errors callers can match with errors.Is.
var (
	// ErrNoSampler: no connected MCP client can sample (Sampler's contract).
	ErrNoSampler = errors.New("no connected MCP client supports sampling")
	// ErrDisconnected: the device went away before answering a call.
	ErrDisconnected = errors.New("device disconnected")
	// ErrCallTimeout: the device did not answer a call in time.
	ErrCallTimeout = errors.New("device did not answer in time")
)

// Options configure a Server. A nil *Options, and every zero field, means
// the default documented on the field.
type Options struct {
	// Publisher receives each device that registers services. Required.
	Publisher Publisher
	// Logger receives the server's logs. Nil discards them.
	Logger hclog.Logger
	// Tokens, when not empty, are the device tokens accepted in AUTH; a
	// device must then authenticate before anything but AUTH and STATUS is
	// served, with a voice id its token names (Token.IDs). Empty means any
	// device may connect (AUTH is optional, and its token ignored).
	Tokens []Token
	// Sampler answers text tasks through an MCP client's model. Nil means
	// no client can: a text task is answered with a TEXT saying so.
	Sampler Sampler
	// OnLimit, when not nil, counts a connection closed at one of the
	// listener's limits, named by the Limit constants (the host's
	// plughost_limit_hits_total). It must not block.
	OnLimit func(limit string)
	// MaxFrame is the largest payload accepted from a device; a bigger
	// frame is answered with a STATUS error and the connection closed.
	// Default DefaultMaxFrame (1 MiB).
	MaxFrame int
	// MaxFrameBeforeAuth is the largest payload accepted from a device
	// before its AUTH, when Tokens are configured: an AUTH is a token and
	// a voice id, and a device that has proved nothing may make the host
	// hold no more. Default DefaultMaxFrameBeforeAuth (4 KiB).
	MaxFrameBeforeAuth int
	// AuthTimeout is how long a new connection has to be admitted,
	// counted from its start: with Tokens, until its AUTH is accepted;
	// without, until its first AUTH, register or TEXT frame. Then it is
	// closed, however far its frame has come. Default 5s.
	AuthTimeout time.Duration
	// FrameTimeout bounds how long one frame may take to arrive once it
	// has begun: a device trickling a frame is disconnected then.
	// Default 30s.
	FrameTimeout time.Duration
	// IdleTimeout closes a connection on which the device sent nothing for
	// that long (a device keeps it open with STATUS ##PING). Default 5m.
	IdleTimeout time.Duration
	// CallTimeout bounds how long a tool call waits for the device's
	// result. Default 30s.
	CallTimeout time.Duration
	// WriteTimeout bounds one write to a device; a device that does not
	// read is disconnected. Default 10s.
	WriteTimeout time.Duration
	// TextTimeout bounds one text task, all sampling rounds and tool calls
	// included. Default 2m.
	TextTimeout time.Duration
	// MaxConns caps the devices admitted at once (see AuthTimeout); one
	// more is refused with a STATUS error when it would be admitted.
	// Default 1024.
	MaxConns int
	// MaxWaiting caps the connections not yet admitted, in all, and
	// MaxWaitingPerAddress those from one address (one IPv4 address, one
	// IPv6 /64). A new connection over either cap evicts a waiting one
	// with a STATUS error: the oldest of its own address, or the oldest
	// of the address with the most waiting. Idle connections thus push
	// out each other, and a device that authenticates promptly gets in
	// however many idle ones are open: it is evicted only if a cap's
	// worth of newer connections (from its address, or from the address
	// with the most) arrive while its AUTH is on the way. With tokens a waiting
	// connection holds a few KiB (MaxFrameBeforeAuth). Defaults 1024
	// and 256 (devices behind one NAT, or all on loopback, may connect
	// in a burst).
	MaxWaiting           int
	MaxWaitingPerAddress int
	// MaxTokens is the maxTokens of each sampling request. Default 1024.
	MaxTokens int
	// TLSConfig, when not nil, makes Serve speak TLS on its listener with
	// it, so that tokens and frames never travel in clear. The handshake
	// is bounded as a device's first frame is (AuthTimeout, or IdleTimeout
	// when sooner); a device that speaks plain frames to it gets a
	// plain STATUS error saying the port speaks TLS. Nil: plain TCP.
	TLSConfig *tls.Config
}

// Defaults for Options.
const (
	DefaultMaxFrameBeforeAuth   = 4 << 10
	DefaultAuthTimeout          = 5 * time.Second
	DefaultFrameTimeout         = 30 * time.Second
	DefaultIdleTimeout          = 5 * time.Minute
	DefaultCallTimeout          = 30 * time.Second
	DefaultWriteTimeout         = 10 * time.Second
	DefaultTextTimeout          = 2 * time.Minute
	DefaultMaxConns             = 1024
	DefaultMaxWaiting           = 1024
	DefaultMaxWaitingPerAddress = 256
	DefaultMaxTokens            = 1024
)

// Server accepts device connections and publishes each registered device
// as a provider.
type Server struct {
	opts Options
	log  hclog.Logger

	mu       sync.Mutex
	conns    map[*conn]struct{}
	names    map[string]*conn // provider names in use
	serial   uint64           // connections accepted so far
	waiting  waitingRoom      // connections not yet admitted
	admitted int              // connections admitted, at most MaxConns

	evictions      int            // waiting connections evicted since the last warning
	evictionWarned time.Time      // when that warning was logged
	wg             sync.WaitGroup // connection goroutines
}

// NewServer checks the options and returns a server; start it with Serve.
func NewServer(opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Publisher == nil {
		return nil, errors.New("device: Options.Publisher is required")
	}
	for i, t := range o.Tokens {
		if t.Secret == "" {
			return nil, fmt.Errorf("device: token %d is empty", i+1)
		}
		for _, id := range t.IDs {
			if err := checkIDPattern(id); err != nil {
				return nil, fmt.Errorf("device: token %d: ids: %w", i+1, err)
			}
		}
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.MaxFrame <= 0 {
		o.MaxFrame = DefaultMaxFrame
	}
	if o.MaxFrameBeforeAuth <= 0 {
		o.MaxFrameBeforeAuth = DefaultMaxFrameBeforeAuth
	}
	o.MaxFrameBeforeAuth = min(o.MaxFrameBeforeAuth, o.MaxFrame)
	if o.AuthTimeout <= 0 {
		o.AuthTimeout = DefaultAuthTimeout
	}
	if o.FrameTimeout <= 0 {
		o.FrameTimeout = DefaultFrameTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.TextTimeout <= 0 {
		o.TextTimeout = DefaultTextTimeout
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxWaiting <= 0 {
		o.MaxWaiting = DefaultMaxWaiting
	}
	if o.MaxWaitingPerAddress <= 0 {
		o.MaxWaitingPerAddress = DefaultMaxWaitingPerAddress
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	return &Server{
		opts:  o,
		log:   o.Logger,
		conns: map[*conn]struct{}{},
		names: map[string]*conn{},
	}, nil
}

// Serve accepts devices on ln until ctx ends or ln fails. It then closes
// ln and every connection (their tools are removed, their calls end) and
// waits for their goroutines before it returns: nil after ctx ended,
// otherwise the listener's error.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.opts.TLSConfig != nil {
		ln = tls.NewListener(ln, s.opts.TLSConfig)
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	s.log.Info("accepting devices", "addr", ln.Addr().String(), "auth", len(s.opts.Tokens) > 0, "tls", s.opts.TLSConfig != nil)
	var err error
	for {
		var nc net.Conn
		nc, err = ln.Accept()
		if err != nil {
			break
		}
		s.mu.Lock()
		s.serial++
		c := newConn(s, nc, s.serial)
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		evicted := s.waiting.enter(c, s.opts.MaxWaiting, s.opts.MaxWaitingPerAddress)
		s.mu.Unlock()
		if evicted != nil {
			evicted.conn.evict(evicted.why)
		}
		go func() {
			defer s.wg.Done()
			c.serve(ctx)
		}()
	}
	ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// claimName reserves a provider name for c: naming.ForDevice of the voice
// id, or of the connection's serial number without a usable one; a name
// another device holds is made unique with "-<serial>".
func (s *Server) claimName(c *conn, voice string) string {
	serial := strconv.FormatUint(c.serial, 10)
	id := voice
	name := naming.ForDevice(id)
	if name == "" {
		id = serial
		name = naming.ForDevice(id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, taken := s.names[name]; taken {
		name = naming.ForDevice(id + "-" + serial)
	}
	s.names[name] = c
	return name
}

// release frees c's provider name, its place among the waiting or the
// admitted, and forgets the connection.
func (s *Server) release(c *conn, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name != "" && s.names[name] == c {
		delete(s.names, name)
	}
	s.waiting.leave(c)
	if c.counted {
		s.admitted--
	}
	delete(s.conns, c)
}
