package pluginclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Limits bound what a host takes from a plugin, so that a plugin (buggy or
// hostile) cannot make the host hold more memory than the operator allows.
// The zero value means the defaults; a host passes its Limits to
// PluginSets.
//
// A call's messages are bounded where they arrive: gRPC refuses a message
// over MaxResultSize from its length prefix, before reading it, so the host
// holds at most that much of it. Since a plugin of contract 2 sends every
// call's frames on one stream and the over-long message cannot be read to
// learn its call, the stream breaks: the calls in flight on it fail with an
// error wrapping ErrTooLarge, and the next call opens a new stream. So that
// it does not come to that, the host tells the plugin the limit
// (DescribeRequest.max_message_size), and a plugin of this SDK answers a
// result over it with an error naming both sizes, which fails that call
// alone, and drops a progress or log message over it. Lists
// (tools, resources, resource templates, prompts) are bounded in items, in
// bytes per item and in bytes in all; a plugin over a bound fails to load,
// with an error naming it, rather than being served in part: a partial tool
// list would silently hide tools from every client.
type Limits struct {
	// MaxResultSize bounds each message of a call: its result, or one
	// progress or log notification. 0 means DefaultMaxResultSize.
	MaxResultSize int
	// MaxItems bounds the items of each list a plugin offers; 0 means
	// DefaultMaxItems.
	MaxItems int
	// MaxDefinitionSize bounds one item of a list, in JSON bytes; 0 means
	// DefaultMaxDefinitionSize.
	MaxDefinitionSize int
	// MaxListSize bounds one list, all its items and pages together, in
	// bytes; 0 means DefaultMaxListSize.
	MaxListSize int
	// MaxHookQuestions bounds the questions in flight to one hook plugin
	// (Client.Hook); 0 means DefaultMaxHookQuestions.
	MaxHookQuestions int
}

// The defaults of Limits: a result of 16 MiB is a large document; 10 000
// tools is far more than a model can choose from (every list-based client
// shows them all); 64 KiB holds a tool with a long description and a
// detailed schema; 16 MiB in all is 10 000 tools of 1.6 KiB, more than
// typical.
const (
	DefaultMaxResultSize     = 16 << 20
	DefaultMaxItems          = 10000
	DefaultMaxDefinitionSize = 64 << 10
	DefaultMaxListSize       = 16 << 20
)

// ErrTooLarge: a plugin sent a message or list over one of the host's
// Limits. The error's text names the limit and the size.
var ErrTooLarge = errors.New("over the host's limit")

// withDefaults returns l with its zero fields set to the defaults.
func (l *Limits) withDefaults() Limits {
	var out Limits
	if l != nil {
		out = *l
	}
	for _, f := range []struct {
		v   *int
		def int
	}{{&out.MaxResultSize, DefaultMaxResultSize}, {&out.MaxItems, DefaultMaxItems},
		{&out.MaxDefinitionSize, DefaultMaxDefinitionSize}, {&out.MaxListSize, DefaultMaxListSize},
		{&out.MaxHookQuestions, DefaultMaxHookQuestions}} {
		if *f.v <= 0 {
			*f.v = f.def
		}
	}
	return out
}

// grpcTooLarge matches gRPC's refusal of a received message over the
// limit, which names both sizes.
var grpcTooLarge = regexp.MustCompile(`received message larger than max \((\d+) vs\. (\d+)\)`)

// tooLarge turns gRPC's refusal of an over-long message into an error
// wrapping ErrTooLarge that names the sizes and limit (named as in Limits);
// other errors give nil.
func tooLarge(what, limit string, err error) error {
	if status.Code(err) != codes.ResourceExhausted {
		return nil
	}
	m := grpcTooLarge.FindStringSubmatch(status.Convert(err).Message())
	if m == nil {
		return nil
	}
	return fmt.Errorf("%s: %w: the plugin sent a message of %s bytes, over %s (%s bytes)", what, ErrTooLarge, m[1], limit, m[2])
}

// checkList checks a plugin's list against the limits: its number of
// items, each item's size and the total.
func (l *Limits) checkList(what string, items [][]byte) error {
	if len(items) > l.MaxItems {
		return fmt.Errorf("%s: %w: %d items, over MaxItems (%d)", what, ErrTooLarge, len(items), l.MaxItems)
	}
	total := 0
	for i, it := range items {
		if len(it) > l.MaxDefinitionSize {
			return fmt.Errorf("%s: %w: item %d (%s) is %d bytes, over MaxDefinitionSize (%d bytes)",
				what, ErrTooLarge, i, nameOf(it), len(it), l.MaxDefinitionSize)
		}
		total += len(it)
	}
	if total > l.MaxListSize {
		return fmt.Errorf("%s: %w: %d bytes in all, over MaxListSize (%d bytes)", what, ErrTooLarge, total, l.MaxListSize)
	}
	return nil
}

// nameOf quotes the name (or uri, or uriTemplate) of a definition, for an
// error; "unnamed" when it has none.
func nameOf(def []byte) string {
	var k struct{ Name, URI, URITemplate string }
	_ = json.Unmarshal(def, &k)
	for _, s := range []string{k.Name, k.URI, k.URITemplate} {
		if s != "" {
			return strconv.Quote(s)
		}
	}
	return "unnamed"
}
