package config

import (
	"fmt"
	"maps"
	"math/big"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Tasks holds the settings of the tasks block (MCP's tasks extension,
// package tasks). A zero field is one the file does not set.
type Tasks struct {
	// TTL is ttl: how long a task is kept after its creation.
	TTL time.Duration
	// PollInterval is poll_interval, the pollIntervalMs suggested to
	// clients.
	PollInterval time.Duration
	// MaxRunning is max_running, the tasks this replica runs at once.
	MaxRunning int
	// MaxResultSize is max_result_size in bytes, the largest result (or
	// input request set) a task keeps.
	MaxResultSize int64
	// EscalateAfter is escalate_after: a call of a tool that supports
	// tasks, still running after this long, goes on as a task.
	EscalateAfter time.Duration
	// EscalateOff is true for escalate_after = "0s": a call goes on as a
	// task only when its plugin says so.
	EscalateOff bool
	// Redis is the redis block; nil when absent, for tasks kept in this
	// process.
	Redis *Redis
}

// Redis holds the settings of the redis block inside tasks: the server
// the replicas share their tasks through. Its password is never in the
// file: PasswordFile names a file holding it.
type Redis struct {
	// Address is "host:port", or the path of a unix socket (absolute).
	Address string
	// Username is the ACL user; "" for the default one.
	Username string
	// PasswordFile is password_file, joined to the configuration file's
	// directory when relative; "" when not set.
	PasswordFile string
	DB           int
	// KeyPrefix starts every key; "" when not set.
	KeyPrefix string
	// ReplicaTimeout is replica_timeout: a replica silent this long is
	// dead, and its tasks fail.
	ReplicaTimeout time.Duration
}

// The bounds of the tasks block's settings (the error messages spell them).
// A task outliving a week is a job for a queue, not a tool call; a poll
// interval under 100ms is a busy loop; a replica timeout under a second
// would take a GC pause for a death.
const (
	minTaskTTL, maxTaskTTL           = time.Minute, 7 * 24 * time.Hour
	minPollInterval, maxPollInterval = 100 * time.Millisecond, time.Minute
	maxTasksRunning                  = 100000
	minResultSize, maxResultSize     = 1 << 10, 64 << 20
	maxEscalateAfter                 = time.Hour
	minReplicaTimeout                = time.Second
	maxReplicaTimeout                = time.Minute
)

var tasksSchema = hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "ttl"}, {Name: "poll_interval"}, {Name: "max_running"}, {Name: "max_result_size"}, {Name: "escalate_after"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "redis"}},
}

var redisSchema = hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "address", Required: true}, {Name: "username"}, {Name: "password_file"},
		{Name: "db"}, {Name: "key_prefix"}, {Name: "replica_timeout"}},
}

// decode reads the tasks block; dir is the configuration file's
// directory, against which a relative password_file is resolved.
func (tk *Tasks) decode(body hcl.Body, dir string) error {
	content, err := attributes(body, &tasksSchema, func(name string, a *hcl.Attribute, v cty.Value) (err error) {
		switch name {
		case "ttl":
			tk.TTL, err = durationIn(a, v, minTaskTTL, maxTaskTTL, "1m to 168h (7 days)")
		case "poll_interval":
			tk.PollInterval, err = durationIn(a, v, minPollInterval, maxPollInterval, "100ms to 1m")
		case "max_running":
			tk.MaxRunning, err = wholeIn(a, v, 1, maxTasksRunning)
		case "max_result_size":
			var n int64
			if n, err = parseBytes(v); err != nil {
				return diag(a.Expr.Range(), "Invalid max_result_size", "max_result_size must be "+err.Error())
			}
			if n < minResultSize || n > maxResultSize {
				return diag(a.Expr.Range(), "Invalid max_result_size", fmt.Sprintf("max_result_size must be from 1KiB to 64MiB, not %d bytes", n))
			}
			tk.MaxResultSize = n
		case "escalate_after":
			tk.EscalateAfter, err = durationIn(a, v, 0, maxEscalateAfter, `0s (only when the plugin says so) to 1h`)
			tk.EscalateOff = err == nil && tk.EscalateAfter == 0
		}
		return err
	})
	if err != nil {
		return err
	}
	for _, b := range content.Blocks {
		if tk.Redis != nil {
			return diag(b.DefRange, "Duplicate redis block", "the tasks block may have one redis block")
		}
		tk.Redis = &Redis{}
		if err := tk.Redis.decode(b.Body, dir); err != nil {
			return err
		}
	}
	return nil
}

func (r *Redis) decode(body hcl.Body, dir string) error {
	_, err := attributes(body, &redisSchema, func(name string, a *hcl.Attribute, v cty.Value) (err error) {
		bad := func(want string) error { return diag(a.Expr.Range(), "Invalid "+name, name+" must be "+want) }
		str := ""
		if v.Type() == cty.String {
			str = v.AsString()
		}
		switch name {
		case "address":
			if !validAddress(str) {
				return bad(`"host:port", or the path of a unix socket starting with /`)
			}
			r.Address = str
		case "username":
			if strings.TrimSpace(str) == "" {
				return bad("a user name")
			}
			r.Username = str
		case "password_file":
			if strings.TrimSpace(str) == "" {
				return bad("the path of a file holding the password (not the password itself)")
			}
			r.PasswordFile = inDir(dir, str)
		case "db":
			r.DB, err = wholeIn(a, v, 0, 1<<20)
		case "key_prefix":
			if str == "" || strings.ContainsAny(str, " \t\r\n") {
				return bad(`a prefix without spaces, such as "plughost:"`)
			}
			r.KeyPrefix = str
		case "replica_timeout":
			r.ReplicaTimeout, err = durationIn(a, v, minReplicaTimeout, maxReplicaTimeout, "1s to 1m")
		}
		return err
	})
	return err
}

// attributes decodes body by schema and hands each attribute, with its
// value (which must be set), to set, in name order (so that the first
// error is always the same); it returns the content, for the blocks.
func attributes(body hcl.Body, schema *hcl.BodySchema, set func(name string, a *hcl.Attribute, v cty.Value) error) (*hcl.BodyContent, error) {
	content, diags := body.Content(schema)
	if diags.HasErrors() {
		return nil, diags
	}
	for _, name := range slices.Sorted(maps.Keys(content.Attributes)) {
		a := content.Attributes[name]
		v, err := value(a)
		if err != nil {
			return nil, err
		}
		if err := set(name, a, v); err != nil {
			return nil, err
		}
	}
	return content, nil
}

// value evaluates a's expression, which must be set.
func value(a *hcl.Attribute) (cty.Value, error) {
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return v, diags
	}
	if v.IsNull() || !v.IsKnown() {
		return v, diag(a.Expr.Range(), "Invalid "+a.Name, a.Name+" must be set")
	}
	return v, nil
}

// durationIn reads a duration from lo to hi, which span spells.
func durationIn(a *hcl.Attribute, v cty.Value, lo, hi time.Duration, span string) (time.Duration, error) {
	if v.Type() != cty.String {
		return 0, diag(a.Expr.Range(), "Invalid "+a.Name, a.Name+` must be a duration such as "500ms", "5s" or "1h"`)
	}
	d, err := time.ParseDuration(v.AsString())
	if err != nil {
		return 0, diag(a.Expr.Range(), "Invalid "+a.Name, a.Name+` must be a duration such as "500ms", "5s" or "1h"`)
	}
	if d < lo || d > hi {
		return 0, diag(a.Expr.Range(), "Invalid "+a.Name, fmt.Sprintf("%s must be from %s, not %v", a.Name, span, d))
	}
	return d, nil
}

// wholeIn reads a whole number from lo to hi.
func wholeIn(a *hcl.Attribute, v cty.Value, lo, hi int64) (int, error) {
	if v.Type() == cty.Number {
		if i, acc := v.AsBigFloat().Int64(); acc == big.Exact && i >= lo && i <= hi {
			return int(i), nil
		}
	}
	return 0, diag(a.Expr.Range(), "Invalid "+a.Name, fmt.Sprintf("%s must be a whole number from %d to %d", a.Name, lo, hi))
}

// validAddress reports whether s is an absolute socket path or a
// "host:port" with a port from 1 to 65535.
func validAddress(s string) bool {
	if strings.HasPrefix(s, "/") {
		return true
	}
	host, port, err := net.SplitHostPort(s)
	p, perr := strconv.Atoi(port)
	return err == nil && host != "" && perr == nil && p >= 1 && p <= 65535
}
