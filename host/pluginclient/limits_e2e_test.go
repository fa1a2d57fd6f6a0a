package pluginclient_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/internal/pluginhost"
)

// startHelperLimited is startHelper with the host's limits.
func startHelperLimited(t *testing.T, limits *pluginclient.Limits) *pluginclient.Client {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	c, _ := startPluginLimited(t, cmd, limits)
	onLane(t, c)
	return c
}

// TestResultOverLimit: a result over MaxResultSize fails its call with
// ErrTooLarge naming the plugin's size and the limit; the plugin's next
// call succeeds (on a new stream).
func TestResultOverLimit(t *testing.T) {
	t.Parallel()
	c := startHelperLimited(t, &pluginclient.Limits{MaxResultSize: 1 << 20})
	ctx := context.Background()
	_, err := c.CallTool(ctx, &pluginhost.CallRequest{Tool: "big", Arguments: []byte(`{"Size":2097152}`)})
	if !errors.Is(err, pluginclient.ErrTooLarge) || !strings.Contains(err.Error(), "over MaxResultSize (1048576 bytes)") ||
		!strings.Contains(err.Error(), "a message of 2097") {
		t.Fatalf("a 2 MiB result under a 1 MiB limit: err = %v, want ErrTooLarge naming both sizes", err)
	}
	res, err := c.CallTool(ctx, &pluginhost.CallRequest{Tool: "big", Arguments: []byte(`{"Size":1000}`)})
	if err != nil || len(res) < 1000 {
		t.Fatalf("the next call, of 1000 bytes: %d bytes, %v", len(res), err)
	}
}

// TestListOverLimits: a tool list over MaxItems, or with a definition
// over MaxDefinitionSize, is an error naming the limit.
func TestListOverLimits(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		limits pluginclient.Limits
		want   string
	}{
		"items":      {pluginclient.Limits{MaxItems: 2}, "items, over MaxItems (2)"},
		"definition": {pluginclient.Limits{MaxDefinitionSize: 20}, `bytes, over MaxDefinitionSize (20 bytes)`},
		"list":       {pluginclient.Limits{MaxListSize: 100}, "over MaxListSize (100 bytes)"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := startHelperLimited(t, &tc.limits)
			_, err := c.ListTools(context.Background())
			if !errors.Is(err, pluginclient.ErrTooLarge) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ListTools = %v, want ErrTooLarge with %q", err, tc.want)
			}
		})
	}
}

// TestResultOverLimitFailsOnlyItsCall: a plugin of this SDK answers a
// result over the host's limit with an error instead of sending it, so a
// call in flight beside it on the same stream goes on.
func TestResultOverLimitFailsOnlyItsCall(t *testing.T) {
	t.Parallel()
	c := startHelperLimited(t, &pluginclient.Limits{MaxResultSize: 1 << 20})
	if _, err := c.Describe(t.Context(), "test"); err != nil { // tells the plugin the limit, as a host does first
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	progress := make(chan struct{}, 1)
	blocked := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, &pluginhost.CallRequest{Tool: "block", Arguments: []byte(`{"ID":"beside"}`),
			Progress: func(float64, float64, string) {
				select {
				case progress <- struct{}{}:
				default:
				}
			}})
		blocked <- err
	}()
	<-progress // block runs
	_, err := c.CallTool(context.Background(), &pluginhost.CallRequest{Tool: "big", Arguments: []byte(`{"Size":2097152}`)})
	if !errors.Is(err, pluginclient.ErrTooLarge) || !strings.Contains(err.Error(), "over MaxResultSize (1048576 bytes); it was not sent") {
		t.Fatalf("a 2 MiB result under a 1 MiB limit: err = %v, want ErrTooLarge naming both sizes", err)
	}
	select {
	case err := <-blocked:
		t.Fatalf("the call beside it ended with it: %v", err)
	default:
	}
	cancel()
	if err := <-blocked; !errors.Is(err, context.Canceled) {
		t.Errorf("the call beside it, cancelled: %v, want context.Canceled", err)
	}
}
