package streamable

// Meter receives the HTTP transport's figures, for metrics (host/metrics
// implements it; [Options.Meter]). Its methods are called on request
// goroutines and must be quick.
type Meter interface {
	// Sessions adds delta (+1: registered, -1: ended) to the sessions
	// open on transport: TransportStreamable or TransportSSE.
	Sessions(transport string, delta int)
	// Streams adds delta to the event streams open for long: a session's
	// GET stream, an HTTP+SSE session's stream.
	Streams(delta int)
	// LimitHit counts a request refused at one of the limits named by the
	// Limit… constants.
	LimitHit(limit string)
}

// The transports of Meter.Sessions.
const (
	TransportStreamable = "streamable"
	TransportSSE        = "sse"
)

// The limits of Meter.LimitHit, each an Options field.
const (
	// LimitSessions: MaxSessions (initialize or GET /sse got 503).
	LimitSessions = "sessions"
	// LimitRate: RateLimit (429).
	LimitRate = "rate"
	// LimitPending: a session's requests in flight, 4×MaxInFlight (429).
	LimitPending = "pending_requests"
	// LimitBodySize: MaxBodySize (413).
	LimitBodySize = "body_size"
	// LimitBodyTimeout: BodyTimeout (408).
	LimitBodyTimeout = "body_timeout"
	// LimitStateless: MaxStatelessRequests (503).
	LimitStateless = "stateless_requests"
)

// noMeter is the Meter of a handler without one.
type noMeter struct{}

func (noMeter) Sessions(string, int) {}
func (noMeter) Streams(int)          {}
func (noMeter) LimitHit(string)      {}
