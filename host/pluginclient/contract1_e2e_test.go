package pluginclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/internal/pluginhost"
)

// TestContract1Plugin builds testdata/contract1, a plugin made with the SDK
// as it was at contract version 1 (frozen there), and drives it through the
// host's Client, which must serve it through its contract-1 adapter. The
// plugin runs as released (serving CallTool and the optional Calls) and as
// a plugin that serves CallTool only, as one in another language may.
func TestContract1Plugin(t *testing.T) {
	t.Parallel()
	bin := buildContract1(t)
	modes := map[string]string{"as released": "0", "CallTool only": "1"}
	for name, callToolOnly := range modes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := func(t *testing.T) *pluginclient.Client {
				cmd := exec.Command(bin)
				cmd.Env = append(os.Environ(), "CONTRACT1_FIXTURE_CALLTOOL_ONLY="+callToolOnly)
				c, v := startPlugin(t, cmd)
				if v != 1 {
					t.Fatalf("negotiated contract %d, want 1", v)
				}
				return c
			}
			testContract1Plugin(t, start)
		})
	}
}

func testContract1Plugin(t *testing.T, start func(*testing.T) *pluginclient.Client) {
	t.Run("describe and list", func(t *testing.T) {
		t.Parallel()
		c := start(t)
		d, err := c.Describe(t.Context(), "test-host")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(pluginclient.Description{Name: "contract1", Version: "1.0.0", ContractVersion: 1}, d); diff != "" {
			t.Errorf("Describe (-want +got):\n%s", diff)
		}
		tools, err := c.ListTools(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"echo", "report", "block"}, names(t, tools)); diff != "" {
			t.Errorf("ListTools (-want +got):\n%s", diff)
		}
	})

	t.Run("calls, with progress and logs, several in flight", func(t *testing.T) {
		t.Parallel()
		c := start(t)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				text := fmt.Sprintf("héllo %d", i)
				res, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "echo", Arguments: fmt.Appendf(nil, `{"Text":%q}`, text)})
				if want := fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, text); err != nil || string(res) != want {
					t.Errorf("echo = %s, %v; want %s", res, err, want)
				}
			})
		}
		var got []string
		res, err := c.CallTool(t.Context(), &pluginhost.CallRequest{
			Tool: "report",
			Progress: func(progress, total float64, msg string) {
				got = append(got, fmt.Sprintf("progress %v/%v %s", progress, total, msg))
			},
			Log: func(level, logger string, data json.RawMessage) {
				got = append(got, fmt.Sprintf("log %s %q %s", level, logger, data))
			},
		})
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		want := []string{`log info "" {"step":"start"}`, "progress 1/2 half", "progress 2/2 done"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("notifications (-want +got):\n%s", diff)
		}
		if want := `{"content":[{"type":"text","text":"reported"}]}`; string(res) != want {
			t.Errorf("result = %s, want %s", res, want)
		}
	})

	t.Run("unknown tool", func(t *testing.T) {
		t.Parallel()
		c := start(t)
		_, err := c.CallTool(t.Context(), &pluginhost.CallRequest{Tool: "nope"})
		if want := `call "nope": unknown tool: unknown tool "nope"`; !errors.Is(err, pluginclient.ErrUnknownTool) || err.Error() != want {
			t.Errorf("err = %v, want ErrUnknownTool: %s", err, want)
		}
	})

	t.Run("cancellation reaches the handler", func(t *testing.T) {
		t.Parallel()
		c := start(t)
		changes := watch(t, c)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var once sync.Once
		_, err := c.CallTool(ctx, &pluginhost.CallRequest{
			Tool:      "block",
			Arguments: json.RawMessage(`{"ID":"x1"}`),
			Progress:  func(float64, float64, string) { once.Do(cancel) },
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("CallTool = %v, want context.Canceled", err)
		}
		// The handler adds cancelled_x1 only after its context ended.
		awaitTool(t, c, changes, "cancelled_x1")
	})
}

// buildContract1 builds the frozen contract-1 plugin into a temporary
// directory. It is a module of its own (testdata/contract1/go.mod): the
// build needs its dependencies in the module cache or the module proxy.
func buildContract1(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "contract1")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join("..", "..", "pluginproto", "testdata", "contract1")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the contract-1 plugin: %v\n%s", err, out)
	}
	return bin
}
