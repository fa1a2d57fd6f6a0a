package mcptest

import (
	"context"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// CallChatty calls the fake's "chatty" tool with a progress token and checks
// its result, then that its progress (1, 2) and the log levels wantLogs reach
// the client's handlers, which report them on progress and logs.
func CallChatty(t *testing.T, ctx context.Context, cs *sdk.ClientSession, progress <-chan float64, logs <-chan string, wantLogs ...string) {
	t.Helper()
	p := &sdk.CallToolParams{Name: "chatty", Arguments: map[string]any{}}
	p.SetProgressToken("tok")
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if txt, ok := res.Content[0].(*sdk.TextContent); !ok || txt.Text != "chatty done" || res.IsError {
		t.Errorf("result %+v", res)
	}
	// Notifications are handled asynchronously by the client: wait for them.
	for _, want := range []float64{1, 2} {
		select {
		case got := <-progress:
			if got != want {
				t.Errorf("progress %v, want %v", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no progress %v", want)
		}
	}
	for _, want := range wantLogs {
		select {
		case got := <-logs:
			if got != want {
				t.Errorf("log level %s, want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %s log", want)
		}
	}
}

// SDKClient is a go-sdk client whose handlers report list_changed,
// progress values and log levels on the channels it returns.
func SDKClient() (c *sdk.Client, changed chan struct{}, progress chan float64, logs chan string) {
	changed, progress, logs = make(chan struct{}, 10), make(chan float64, 10), make(chan string, 10)
	c = sdk.NewClient(&sdk.Implementation{Name: "go-sdk", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			progress <- r.Params.Progress
		},
		LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) { logs <- string(r.Params.Level) },
	})
	return c, changed, progress, logs
}
