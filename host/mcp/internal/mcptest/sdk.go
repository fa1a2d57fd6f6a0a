package mcptest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/host/tool"
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

// InputClientOptions shape the go-sdk client of InputClient.
type InputClientOptions struct {
	// NoElicitation leaves elicitation undeclared.
	NoElicitation bool
	// RefuseSampling answers sampling with JSON-RPC error -1.
	RefuseSampling bool
	// Elicit, when set, answers elicitation instead of the survey's
	// answers (name Ada, color teal).
	Elicit func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error)
}

// InputClient is a go-sdk client answering a provider's requests: sampling
// ("Noon."), form elicitation (the survey's name Ada and color teal) and
// roots (file:///home/ada).
func InputClient(o InputClientOptions) *sdk.Client {
	opts := &sdk.ClientOptions{
		CreateMessageHandler: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			if o.RefuseSampling {
				return nil, &jsonrpc.Error{Code: -1, Message: "User rejected sampling request"}
			}
			return &sdk.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &sdk.TextContent{Text: "Noon."}}, nil
		},
	}
	if !o.NoElicitation {
		opts.ElicitationHandler = o.Elicit
		if opts.ElicitationHandler == nil {
			opts.ElicitationHandler = func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				if strings.Contains(r.Params.Message, "color") {
					return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"color": "teal"}}, nil
				}
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
			}
		}
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-input", Version: "1"}, opts)
	c.AddRoots(&sdk.Root{URI: "file:///home/ada", Name: "home"})
	return c
}

// CallText calls the tool name and returns its result's text and isError.
func CallText(t *testing.T, ctx context.Context, cs *sdk.ClientSession, name string) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	txt, ok := res.Content[0].(*sdk.TextContent)
	if !ok {
		t.Fatalf("tools/call %s: content %+v", name, res.Content)
	}
	return txt.Text, res.IsError
}

// CheckInputRounds drives the input scripts through an InputClient's
// session: a tool needing sampling, one needing elicitation twice, one
// needing roots, a resource read needing sampling, a prompt needing
// elicitation twice; and that the client's capabilities reach the
// provider.
func CheckInputRounds(t *testing.T, ctx context.Context, cs *sdk.ClientSession) {
	t.Helper()
	for name, want := range map[string]string{
		"sample": "the model said: Noon.",
		"survey": "name=Ada color=teal",
		"roots":  "roots: file:///home/ada",
	} {
		if got, isErr := CallText(t, ctx, cs, name); got != want || isErr {
			t.Errorf("tools/call %s = %q (isError %v), want %q", name, got, isErr, want)
		}
	}
	if got, _ := CallText(t, ctx, cs, "caps"); !strings.Contains(got, `"sampling":{}`) || !strings.Contains(got, `"elicitation":`) ||
		!strings.Contains(got, `"roots":`) {
		t.Errorf("the provider got client capabilities %s", got)
	}
	read, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "input://sample"})
	if err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	if len(read.Contents) != 1 || read.Contents[0].Text != "the model said: Noon." {
		t.Errorf("resources/read input://sample = %+v", read.Contents)
	}
	got, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "survey"})
	if err != nil {
		t.Fatalf("prompts/get: %v", err)
	}
	if txt, ok := got.Messages[0].Content.(*sdk.TextContent); !ok || txt.Text != "name=Ada color=teal" {
		t.Errorf("prompts/get survey = %+v", got.Messages[0].Content)
	}
}

// SurfaceEvents are what a SurfaceClient's handlers report.
type SurfaceEvents struct {
	Updated                          chan string // resources/updated URIs
	ResourcesChanged, PromptsChanged chan struct{}
}

// SurfaceClient is a go-sdk client whose handlers report resource updates
// and list changes of resources and prompts.
func SurfaceClient() (*sdk.Client, *SurfaceEvents) {
	ev := &SurfaceEvents{Updated: make(chan string, 10), ResourcesChanged: make(chan struct{}, 10), PromptsChanged: make(chan struct{}, 10)}
	c := sdk.NewClient(&sdk.Implementation{Name: "go-sdk-surface", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler:     func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) { ev.Updated <- r.Params.URI },
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { ev.ResourcesChanged <- struct{}{} },
		PromptListChangedHandler:   func(context.Context, *sdk.PromptListChangedRequest) { ev.PromptsChanged <- struct{}{} },
	})
	return c, ev
}

func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
		var zero T
		return zero
	}
}

// CheckSurface drives a SurfaceClient's session through resources,
// templates, prompts and completion, a subscription (updates of the
// subscribed resource only, none after unsubscribing) and list changes of
// resources and prompts, made in cat.
func CheckSurface(t *testing.T, ctx context.Context, cs *sdk.ClientSession, cat *Catalog, ev *SurfaceEvents) {
	t.Helper()
	var uris []string
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	if got, want := strings.Join(uris, ","), strings.Join(ResourceURIs, ","); got != want {
		t.Errorf("resources %s, want %s", got, want)
	}
	var templates []string
	for r, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		templates = append(templates, r.URITemplate)
	}
	if len(templates) != 1 || templates[0] != "file:///{name}" {
		t.Errorf("templates %v", templates)
	}
	var prompts []string
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	if got, want := strings.Join(prompts, ","), strings.Join(PromptNames, ","); got != want {
		t.Errorf("prompts %s, want %s", got, want)
	}
	read, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "file:///a.txt"})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "contents of file:///a.txt" {
		t.Errorf("resources/read = %+v, %v", read, err)
	}
	var rpcErr *jsonrpc.Error
	if _, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "file:///nope"}); !errors.As(err, &rpcErr) || rpcErr.Code != -32002 {
		t.Errorf("resources/read of an unknown resource: %v, want error -32002", err)
	}
	got, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	if txt, ok := got.Messages[0].Content.(*sdk.TextContent); !ok || txt.Text != "Hello, Ada!" {
		t.Errorf("prompts/get greet = %+v", got.Messages[0].Content)
	}
	comp, err := cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "greet"},
		Argument: sdk.CompleteParamsArgument{Name: "name", Value: "Al"}})
	if err != nil || strings.Join(comp.Completion.Values, ",") != "Alice,Alicia" {
		t.Errorf("completion/complete = %+v, %v", comp, err)
	}

	// Updates reach the subscribed resource only, in order, and stop when
	// it is unsubscribed.
	for _, uri := range []string{"file:///a.txt", "file:///b.txt"} {
		if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
	cat.Update("file:///c.txt")
	cat.Update("file:///a.txt")
	if got := await(t, ev.Updated, "resources/updated"); got != "file:///a.txt" {
		t.Errorf("updated %s, want file:///a.txt", got)
	}
	if err := cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: "file:///a.txt"}); err != nil {
		t.Fatal(err)
	}
	if n := cat.Subscriptions(); n != 1 {
		t.Errorf("%d live subscriptions after unsubscribing one of two", n)
	}
	cat.Update("file:///a.txt")
	cat.Update("file:///b.txt")
	if got := await(t, ev.Updated, "resources/updated"); got != "file:///b.txt" {
		t.Errorf("updated %s, want file:///b.txt (a.txt is unsubscribed)", got)
	}

	cat.ChangeLists(tool.Change{Resources: true})
	await(t, ev.ResourcesChanged, "resources/list_changed")
	cat.ChangeLists(tool.Change{Prompts: true})
	await(t, ev.PromptsChanged, "prompts/list_changed")
}
