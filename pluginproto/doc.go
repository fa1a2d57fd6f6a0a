// Package pluginproto is the contract between plughost and its plugins, and
// the Go SDK for writing a plugin.
//
// # Writing a plugin
//
// A plugin is a program that offers MCP tools (and, if it likes, resources,
// prompts and completions). It builds a Plugin, adds its tools and calls
// Serve from main:
//
//	func main() {
//		p := pluginproto.New("greeter", "1.0.0")
//		p.AddTool(pluginproto.Tool{
//			Name:        "greet",
//			Description: "Greets someone by name.",
//			InputSchema: json.RawMessage(`{"type":"object",
//				"properties":{"name":{"type":"string"}},"required":["name"]}`),
//		}, greet)
//		pluginproto.Serve(p)
//	}
//
//	func greet(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
//		var args struct{ Name string }
//		if err := req.Bind(&args); err != nil {
//			return nil, err
//		}
//		return pluginproto.TextResult("Hello, " + args.Name + "!"), nil
//	}
//
// Build it, drop the binary into the host's plugin directory, and the host
// lists greet to every client. A handler's error becomes an isError result
// the model reads (so it can correct its arguments); a panic is recovered,
// and the plugin answers that it failed running the call (the client reads
// that as an isError result too, naming the panic). A handler may report progress (Request.Progress) and send log messages
// to the client (Request.Log, at a Level: LevelDebug, LevelInfo, …,
// LevelWarning, …, LevelEmergency, MCP's levels) before it returns; its
// context is cancelled when the client cancels the call. Tools may be added
// and removed while the plugin runs: the host is told and tells its clients.
//
// The host checks what reaches the handler and what leaves it: the
// arguments against the tool's InputSchema (a call that breaks it is
// answered by the host, and the handler never runs), and, for a tool with
// an OutputSchema, the result's StructuredContent against it (a result
// without it, or one that breaks it, reaches the client as an isError
// result naming the violations, and the host logs it at WARN; results with
// IsError set are exempt).
//
// A plugin may say what it is as a whole, as an MCP server's serverInfo
// does: a title and a description (Plugin.SetAbout). The host's tool
// search scores them with all the plugin's tools, so a query about what
// the plugin is for finds its tools even when no tool repeats its words:
//
//	p.SetAbout(pluginproto.About{
//		Title:       "Greeter",
//		Description: "Greets people by name, politely, in several languages.",
//	})
//
// The host keeps at most 256 bytes of the title and 4096 of the
// description.
//
// A plugin may say what it needs the operator to grant it (Plugin.Request):
// paths it reads and writes, network destinations, host environment
// variables. The host shows it next to what the plugin's sandbox policy
// grants and logs the difference; asking grants nothing:
//
//	p.Request(pluginproto.Requests{Read: []string{"/srv/notes"}, Net: []string{"api.example.com:443"}})
//
// Nothing may be printed to stdout before Serve: stdout carries the
// go-plugin handshake. Operator logs go to stderr through Plugin.Logger.
//
// # Resources, prompts and completion
//
// Resources are data the client reads by URI; a ResourceTemplate (an RFC
// 6570 URI template) stands for a family of them, and its handler gets the
// template's variables:
//
//	p.AddResource(pluginproto.Resource{URI: "notes://today", Name: "today", MIMEType: "text/markdown"},
//		func(ctx context.Context, r *pluginproto.ResourceRead) (*pluginproto.ResourceResult, error) {
//			return pluginproto.TextContents("", today()), nil
//		})
//	p.AddResourceTemplate(pluginproto.ResourceTemplate{URITemplate: "notes://{day}", Name: "day"},
//		func(ctx context.Context, r *pluginproto.ResourceRead) (*pluginproto.ResourceResult, error) {
//			return pluginproto.TextContents("text/markdown", notes(r.Vars["day"])), nil
//		})
//
// A client may subscribe to a resource; call Plugin.ResourceUpdated when its
// contents change, and the subscribers are told (the SDK keeps track of the
// host's subscriptions). Prompts are message templates the user picks,
// with string arguments the SDK checks before the handler runs:
//
//	p.AddPrompt(pluginproto.Prompt{Name: "review", Arguments: []pluginproto.PromptArgument{{Name: "code", Required: true}}},
//		func(ctx context.Context, g *pluginproto.PromptGet) (*pluginproto.PromptResult, error) {
//			return &pluginproto.PromptResult{Messages: []pluginproto.Message{
//				{Role: "user", Content: pluginproto.Text("Review this:\n" + g.Arguments["code"])},
//			}}, nil
//		})
//
// A CompleteFunc in Prompt.Complete or ResourceTemplate.Complete suggests
// values for an argument or a variable as the user types it.
//
// What a plugin offers besides tools (resources, prompts, completions) is
// fixed when the host starts it: the SDK offers what is registered then.
// A plugin that registers its first resource, prompt or completer only
// later declares it with Plugin.Offer before Serve.
//
// # Asking the client
//
// A handler (of a tool, a prompt or a resource) may ask the client for
// something: the user, through a form (Request.Elicit); the client's LLM
// (Request.Sample); the client's roots (Request.Roots). It does not wait
// for the answer. It runs in rounds, and the plugin keeps nothing in
// memory between them:
//
//	answer, err := req.Elicit(ctx, pluginproto.ElicitParams{Message: "Delete everything?"})
//	if err != nil {
//		return nil, err // ErrInputRequired: the handler runs again with the answer
//	}
//
// In the first round Elicit returns ErrInputRequired at once, and the
// handler returns. The SDK answers the host with InputRequired: every
// request the handler made without an answer, each under its key, and a
// request state holding the answers of earlier rounds. The host gets the
// client's answers and runs the same call again with them (Input); the
// handler runs from the start, and each request now returns the answer
// under its key. The retry may reach another process of the plugin (on
// another replica of the host): everything it needs is in the retry. So a
// handler must be deterministic up to its requests: make them in the same
// order each round, and do nothing before them that must not happen twice
// (its progress and log messages, too, are sent again). Requests made
// without returning in between (in a loop) are asked together, 16 at most
// per round. The answers so far travel in the request state, which may take
// at most 64 KiB (deflated): ask for little.
//
// A request's key is "1" for the handler's first request without a key of
// its own, "2" for its second, ...; or the key it names (ElicitParams.Key,
// SampleParams.Key, Request.RootsKeyed), when the keys must be known in
// advance (a protocol or a test suite fixes them). A named key may not be
// all digits (those are the numbers'), and no key may name two requests of
// one round: such a request fails with an error saying so, and so does the
// call (read, get), whatever the handler returns. Answers are looked up by
// key in the retry's responses and its state alike, so a retry with
// responses and no state is served from the responses. An answer under a
// key the handler does not ask is ignored (and not kept in the state); one
// that is not the result its request expects (an ElicitResult with action
// accept, decline or cancel; a CreateMessageResult with a role and content;
// a ListRootsResult) counts as no answer: the request is asked again.
//
// This is the shape of MCP 2026-07-28's multi-round-trip requests
// (InputRequiredResult); with a 2025-11-25 session the host turns each
// round into real requests to the client. A client that did not declare
// the capability a request needs is not asked: the request returns an
// error wrapping ErrClientUnsupported at once. Return it from the handler
// (wrapped is fine) and the client is told which capability the tool
// needs: MCP 2026-07-28 answers -32021 MissingRequiredClientCapability
// (naming it, e.g. {"sampling":{}}); older sessions get an isError result
// naming it. To degrade instead, handle it:
//
//	res, err := req.Sample(ctx, params)
//	switch {
//	case errors.Is(err, pluginproto.ErrClientUnsupported):
//		return pluginproto.TextResult(summaryWithoutLLM()), nil
//	case err != nil:
//		return nil, err // ErrInputRequired, or the client's refusal
//	}
//
// (Only a tool's handler has its capability error told so; a prompt's or
// a resource's fails its request as any other error does.) A client's
// refusal is an *InputError.
//
// # Long calls as tasks
//
// A client of MCP 2026-07-28 that declares the tasks extension
// (io.modelcontextprotocol/tasks) accepts a task in answer to a call: a
// handle it polls (tasks/get) until the call's result is there, instead of
// holding its request open. The server decides, call by call; here, the
// handler. A tool that may go on as a task declares it (Tool.TaskSupport:
// TaskOptional, or TaskRequired for one that runs only as a task), and its
// handler calls Request.RunAsTask once it knows the call will take a
// while:
//
//	p.AddTool(pluginproto.Tool{Name: "render", TaskSupport: pluginproto.TaskOptional, ...},
//		func(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
//			if small(req) {
//				return render(ctx, req) // quick: answered at once
//			}
//			req.RunAsTask() // the client gets a task now; we go on
//			for i, frame := range frames {
//				req.Progress(float64(i), float64(len(frames)), "frame "+frame.Name) // the task's status
//				if err := frame.Render(ctx); err != nil {
//					return nil, err // ctx ends when the task is cancelled
//				}
//			}
//			return pluginproto.TextResult("rendered"), nil // completes the task
//		})
//
// RunAsTask reports whether the call went on as a task; when the client
// accepts no task, it reports false and the call simply goes on
// synchronously, so one handler serves both kinds of client. A returned
// error (an isError result) completes the task as it would the call; a
// panic fails it with a JSON-RPC error. A TaskRequired tool is never
// called by a client that cannot take a task: the host refuses the call
// (MCP error -32021, naming the extension) before the handler runs.
//
// Tasks and input rounds (see "Asking the client") go together in either
// order. A handler that asks the client first and calls RunAsTask with the
// answers runs its input rounds synchronously, as MCP asks: only its last
// round, the one that goes on, becomes a task. A handler that asks after
// RunAsTask gets its answers through the task: the host parks the task in
// input_required, and once the client has answered, runs the handler
// again with the answers, as in any input round; RunAsTask, called again
// in that run, reports true. Its requests' keys must be new over the
// task's whole life, which the numbered keys of requests made in the same
// order each round, and named keys not reused for another request, are.
//
// # Testing without a host
//
// Test tools through package pluginproto/plugintest: its CallTool runs a
// tool in-process with the host's own checks around it (the definition,
// the arguments against InputSchema, the result against OutputSchema), so
// a unit test fails exactly where a client of the host would, and its
// CheckTools finds the tools the host would refuse to list:
//
//	res, err := plugintest.CallTool(t.Context(), p, &plugintest.CallRequest{
//		Tool: "count", Arguments: json.RawMessage(`{"n":-5}`),
//	})
//	// err: invalid arguments for tool "count": /n: minimum: got -5, want 0
//
// Underneath, plugintest.CallTool, ReadResource and GetPrompt run a
// handler in-process exactly as a request from the host would run it in
// the plugin, and return the MCP result JSON the host would get (or the
// error: a tool that needs a capability the client did not declare
// returns a *CapabilityRequiredError). Give plugintest.CallRequest (ReadRequest,
// PromptRequest) the client's capabilities and an AnswerInput function,
// and they run the input rounds themselves, answering each request the
// way a client would; without AnswerInput they return the
// *InputRequiredError of the first round. Set CallRequest.Tasks to call as
// a client that accepts a task, and CallRequest.Detach to see whether the
// handler went on as one:
//
//	detached := false
//	res, err := plugintest.CallTool(t.Context(), p, &plugintest.CallRequest{
//		Tool: "render", Arguments: big, Tasks: true, Detach: func() { detached = true },
//	})
//	// detached: RunAsTask reported true; res is the result that completes the task
//
// # The contract
//
// Serve speaks gRPC through hashicorp/go-plugin with plughost's handshake
// (the magic cookie PLUGHOST_PLUGIN=019544a273a2bc73910caf0182d93962b8325e5cc6bd15d4,
// which the host sets in the plugin's environment); the service is in
// proto/plugin.proto. MCP shapes (tool definitions, arguments,
// results, log data) travel as JSON bytes inside protobuf envelopes, so a
// plugin in another language needs only a gRPC server, the go-plugin
// handshake and that file.
//
// The contract has versions, and the version is go-plugin's application
// protocol version: the host starts a plugin with PLUGIN_PROTOCOL_VERSIONS
// listing every version it speaks (1,2), and the plugin answers with one in
// the second field of its handshake line (1|2|unix|/path/to.sock|grpc for
// version 2). A plugin in another language picks its version there;
// Describe's contract_version must say the same.
//
// Contract 2 (what Serve speaks) runs every call of a
// plugin on one long-lived CallsV2 stream: the host names each call by an id
// and sends Start (then, for arguments over 64 KiB, Arguments chunks) and
// Cancel frames; the plugin answers with progress, log (and, for a call
// that goes on as a task, one detach) and finally result, error or
// input_required frames. When the host hands the plugin a frame lane (a
// socket named by PLUGHOST_LANE_FD) and offers it at Describe, Serve takes
// it and the same frames travel there, length-prefixed, without gRPC
// (lane.go); nothing changes for handlers. A plugin of contract 2 also lists in
// Describe what it offers besides tools, and serves the unary rpcs of
// those (ListResources, ReadResource, GetPrompt, Complete, ...). Contract 1 ran each call on a CallTool stream of its own;
// the host still serves plugins built against it, through an adapter chosen
// once when the plugin starts (pluginproto/testdata/contract1 holds such a plugin,
// built with the SDK of that time, for the tests).
//
// # The host
//
// The host's side of the contract is package host/pluginclient: it starts
// nothing, but speaks to a plugin go-plugin started, in every contract
// version.
package pluginproto
