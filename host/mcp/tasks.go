package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/jsonrpc"
)

// Tasks: MCP 2026-07-28's tasks extension (io.modelcontextprotocol/tasks,
// SEP-2663). A tools/call of a stateless request whose _meta declares the
// extension, of a tool whose definition declares execution.taskSupport
// ("optional" or "required"), may go on as a task: when its provider says
// so (a plugin's Request.RunAsTask) or when it is still running after
// Options.EscalateAfter, the server creates the task (durably: any replica
// finds it when the client learns its id), answers the request with a
// CreateTaskResult, and keeps the call running with a context of its own:
// the request is over, the call is not. From then on the call's progress
// and logs become the task's statusMessage, a need for the client's input
// parks the task in input_required until tasks/update has answered every
// request (then the provider runs again with the answers, as in an input
// round), and the call's outcome ends the task: completed with its result
// (isError results included), or failed with a JSON-RPC error when the
// call could not be carried out (the plugin crashed, was unloaded or
// timed out; its handler panicked). tasks/cancel, on any replica, cancels
// the call in its plugin. A task lives for its TTL (Options.Tasks), then
// is forgotten; its call is cancelled then if it still runs.
//
// tasks/get, tasks/update and tasks/cancel need the extension declared in
// the request's _meta (otherwise -32021 naming it), answer -32602 for a
// task id nobody knows, or another caller's (taskowner.go), and are
// acknowledged with an empty result. A
// subscriptions/listen naming taskIds gets notifications/tasks, each the
// task as tasks/get would show it.

// extTasks is the tasks extension's identifier.
const extTasks = "io.modelcontextprotocol/tasks"

// needTasks is the -32021 error of a request that needs the tasks
// extension declared.
func needTasks(what string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeMissingCapability, Message: "missing required client capability: " + what +
		" needs the " + extTasks + " extension declared in _meta's clientCapabilities.extensions",
		Data: []byte(`{"requiredCapabilities":{"extensions":{"` + extTasks + `":{}}}}`)}
}

// taskSupport returns a tool definition's execution.taskSupport ("" when
// absent or "forbidden").
func taskSupport(def []byte) string {
	ts, _ := jsonrpc.Unquote(jsonrpc.Member(jsonrpc.Member(def, "execution"), "taskSupport"))
	if ts == "optional" || ts == "required" {
		return ts
	}
	return ""
}

// mayBecomeTask reports whether a tools/call may go on as a task: the
// server runs tasks, and the request is stateless and declares the
// extension. Whether the tool supports tasks is the catalog's to say when
// the call reaches it (it clears Call.Tasks for a tool that does not; the
// catalog may still be loading now).
func (srv *Server) mayBecomeTask(st *stateless) bool {
	return srv.tasks != nil && st != nil && st.caps.tasks
}

// The states of a call that may go on as a task.
const (
	taskNone     = iota // running for the request; no task yet
	taskCreating        // the task is being created
	taskRunning         // a task: the request is answered
	taskNever           // answered for the request (or the task could not be made): never a task
)

// callTask is a call's life as a task.
type callTask struct {
	mu       sync.Mutex
	state    int
	ready    chan struct{} // closed when taskCreating ends
	run      *tasks.Run
	escalate *time.Timer // Options.EscalateAfter's; nil when off
	// unhook stops watching the request's context, which ends the call
	// while it is not a task.
	unhook func() bool
	req    context.Context // the request's context
	// answered is closed once the request is answered (with the call's
	// result, or the task), or will never be (cancelled).
	answered chan struct{}
	// hooks run once the task exists (tool.Call.BecameTask).
	hooks []func()
}

// startTaskable sets up a call that may go on as a task: its context
// outlives the request once it is one, and ends with the request until
// then.
func (c *call) startTaskable(req context.Context) {
	t := &callTask{req: req, answered: make(chan struct{})}
	c.task = t
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(req))
	t.unhook = context.AfterFunc(req, func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.state != taskRunning && t.state != taskCreating {
			c.cancel()
		}
	})
	c.tc.Tasks = true
	c.tc.Detach = c.detach
	c.tc.BecameTask = t.onTask
	c.tc.Progress = c.progress // a task's status message, even without a progressToken
}

// arm starts Options.EscalateAfter's timer, once the call is about to
// reach its provider (never for a call refused or still queued: it has
// nothing to become a task).
func (t *callTask) arm(c *call) {
	d := c.s.srv.tuned().escalateAfter
	if d <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.escalate = time.AfterFunc(d, func() {
		if taskSupport(c.s.srv.Tool(c.tc.Name)) != "" {
			c.detach()
		}
	})
}

// onTask is the call's tool.Call.BecameTask: f runs once the task exists,
// at once when it does already.
func (t *callTask) onTask(f func()) {
	t.mu.Lock()
	if t.state != taskRunning {
		t.hooks = append(t.hooks, f)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	f()
}

// abandon gives up a call that was refused before it started.
func (c *call) abandon() {
	c.cancel()
	if c.task != nil {
		c.task.unhook()
	}
}

// detach makes the call a task, unless it has been answered already. It
// runs on the provider's goroutine (or the escalation timer's), which must
// not wait: the task is created on a goroutine of its own.
func (c *call) detach() {
	t := c.task
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != taskNone {
		return
	}
	t.state, t.ready = taskCreating, make(chan struct{})
	go c.createTask()
}

// claim is called with what the provider returned; it reports whether the
// task takes it (the call is a task, or is becoming one), else the
// request is answered as usual and the call never becomes a task.
func (t *callTask) claim(c *call, res json.RawMessage, err error) bool {
	t.mu.Lock()
	switch t.state {
	case taskNone, taskNever:
		t.state = taskNever
		t.mu.Unlock()
		t.stop()
		return false
	}
	t.mu.Unlock()
	// Creating or running: once the request is answered with the task (or
	// the task could not be made), on a goroutine of its own.
	go func() {
		<-t.ready
		if t.state == taskRunning { // decided before ready closed
			c.runTask(res, err)
			return
		}
		c.settle(res, err)
	}()
	return true
}

// stop stops what watches a call that will not be a task (or is one).
func (t *callTask) stop() {
	t.mu.Lock()
	if t.escalate != nil {
		t.escalate.Stop()
	}
	t.mu.Unlock()
	t.unhook()
}

// settle answers the request with what the provider returned, as a call
// that is no task does.
func (c *call) settle(res json.RawMessage, err error) {
	if err != nil && needsInput(err) {
		c.statelessInput(err, false)
		return
	}
	c.finish(res, err)
}

// createTask creates the task, answers the request with it, and hands the
// call's notifications to the task. When it cannot (too many tasks, the
// store failing), the call goes on for the request.
func (c *call) createTask() {
	srv, t := c.s.srv, c.task
	who := c.s.taskCaller()
	task, run, err := srv.tasks.Create(c.ctx, who, c.tc.Name)
	t.mu.Lock()
	if err != nil {
		t.state = taskNever
		close(t.ready)
		t.mu.Unlock()
		srv.log.Warn("a call goes on without a task: the task cannot be created", "tool", c.tc.Name, "error", err)
		if t.req.Err() != nil {
			c.cancel() // the request is gone meanwhile
		}
		return
	}
	t.state, t.run = taskRunning, run
	hooks := t.hooks
	t.hooks = nil
	t.mu.Unlock()
	t.stop()
	for _, f := range hooks {
		f()
	}
	srv.log.Debug("a call goes on as a task", "tool", c.tc.Name, "task", task.ID)
	c.mu.Lock()
	c.taskRun = run
	if c.hasEarly { // the status it reported while the task was being made
		run.Progress(progressMessage(c.early))
	}
	c.mu.Unlock()

	// The request is answered before anything may end the call (ready
	// holds runTask back): only the client's cancellation of the request
	// stops the answer.
	cancelled, done := c.leave()
	if cancelled || t.req.Err() != nil { // nobody learns of the task: it is cancelled
		// The host's own cancel: the caller's rules, which may have
		// changed meanwhile, are not asked.
		_ = srv.tasks.CancelAs(context.WithoutCancel(c.ctx), tasks.Caller{Key: who.Key}, task.ID)
	} else {
		bp := jsonrpc.GetBuf()
		b := jsonrpc.AppendResultHead(*bp, c.id)
		b = append(b, `{"resultType":"task",`...)
		b = task.AppendWire(b, false)
		b = append(b, "}}"...)
		*bp = b
		c.s.respond(c.rp, b)
		jsonrpc.PutBuf(bp)
	}
	done()
	close(t.ready)

	// The task's end: cancelled by a client (on any replica), by its TTL,
	// or by the service closing.
	ttl := time.AfterFunc(time.Until(task.Created.Add(task.TTL)), c.cancel)
	go func() {
		select {
		case <-run.Cancelled():
			c.cancel()
		case <-c.ctx.Done():
		}
		ttl.Stop()
	}()
}

// runTask ends the task with the call's outcome, after as many input
// rounds as its provider asks for; it runs on a goroutine of its own, once
// the request has been answered with the task.
func (c *call) runTask(res json.RawMessage, err error) {
	srv, run := c.s.srv, c.task.run
	defer run.Close()
	defer c.cancel()
	defer func() { c.ended(res, err, c.ctx.Err() != nil, true) }()
	bg := context.WithoutCancel(c.ctx)
	var hostErr error // the host's failure to carry the input rounds
	for err != nil && needsInput(err) && c.ctx.Err() == nil {
		var in *tool.Input
		if in, hostErr = c.taskInput(err); hostErr != nil {
			break
		}
		res, err = c.exec(in)
	}
	switch {
	case c.ctx.Err() != nil:
		// Cancelled (the task is already), expired, or the service is
		// closing (it fails the task itself). A task nobody ended is
		// failed by run.Close ("the call ended without an outcome"):
		// the Run stops only for a task that did end (Run.Cancelled).
		srv.log.Debug("a task's call ended", "task", run.ID(), "why", context.Cause(c.ctx))
	case hostErr != nil:
		srv.log.Warn("a task failed in its input rounds", "task", run.ID(), "tool", c.tc.Name, "error", hostErr)
		msg := hostErr.Error()
		if errors.Is(hostErr, errTaskStore) {
			msg = errTaskStore.Error() // the store's detail is the operator's, in the log
		}
		_ = run.Fail(bg, jsonrpc.CodeInternalError, "the task's input round failed: "+msg)
	case err == nil:
		_ = run.Complete(bg, res)
	case missingCapability(err) != nil:
		e := missingCapability(err)
		_ = run.Fail(bg, e.Code, e.Message)
	default:
		if _, rpcErr := tool.Outcome(err); rpcErr != nil {
			_ = run.Fail(bg, rpcErr.Code, rpcErr.Message)
		} else if failedCall(err) {
			_ = run.Fail(bg, jsonrpc.CodeInternalError, err.Error())
		} else {
			_ = run.Complete(bg, tool.ErrorResult(err.Error()))
		}
	}
}

// errTaskStore wraps a failure of the task store (Redis unreachable, say)
// in a task's input round.
var errTaskStore = errors.New("the task store failed")

// failedCall reports whether a call's error means it could not be carried
// out (a task fails with it), rather than a failure of the tool itself (a
// task completes with an isError result).
func failedCall(err error) bool {
	for _, k := range []error{tool.ErrGone, tool.ErrTimedOut, tool.ErrRefused, tool.ErrInternal} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// taskInput parks the task until the client has answered the provider's
// requests (err is a *tool.InputRequired) and returns the input to run the
// provider again with. Requests the client did not declare the capability
// for are not asked: they get an InputError, as in an input round. The
// client sees each key prefixed with the round ("2/confirm"): a task's
// keys must be unique over its life, a provider's only within a round.
// The error is the host's own (the round limit, a malformed request, the
// store failing, the task cancelled).
func (c *call) taskInput(err error) (*tool.Input, error) {
	var ir *tool.InputRequired
	errors.As(err, &ir)
	if c.round >= maxInputRounds {
		return nil, errors.New("the provider asked for the client's input more than " + strconv.Itoa(maxInputRounds) + " times for one task, the most allowed")
	}
	c.round++
	all, perr := parseInputRequests(ir.Requests)
	if perr != nil {
		return nil, errors.New("the provider's request for the client's input is malformed: " + perr.Error())
	}
	in := &tool.Input{State: ir.State, Provider: ir.Provider}
	prefix := strconv.Itoa(c.round) + "/"
	b := []byte{'{'}
	for _, r := range all {
		if why := cannotAsk(r, &c.st.caps, -1); why != "" {
			if in.Errors == nil {
				in.Errors = map[string]tool.InputError{}
			}
			in.Errors[r.key] = tool.InputError{Code: tool.CodeNotSupported, Message: why}
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = jsonrpc.AppendString(b, prefix+r.key)
		b = append(b, `:{"method":`...)
		b = jsonrpc.AppendString(b, r.method)
		b = append(b, `,"params":`...)
		b = append(b, r.params...)
		b = append(b, '}')
	}
	if len(b) == 1 {
		return in, nil // nothing to ask: the provider runs again at once
	}
	run := c.task.run
	if err := run.NeedInput(c.ctx, append(b, '}'), ir.State); err != nil {
		return nil, fmt.Errorf("%w: %w", errTaskStore, err)
	}
	answers, state, err := run.WaitInput(c.ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errTaskStore, err)
	}
	// The provider's own keys again.
	r := []byte{'{'}
	for k, v := range jsonrpc.Members(answers) {
		key, _ := jsonrpc.Unquote(k)
		if own, ok := strings.CutPrefix(key, prefix); ok {
			if len(r) > 1 {
				r = append(r, ',')
			}
			r = jsonrpc.AppendString(r, own)
			r = append(r, ':')
			r = append(r, v...)
		}
	}
	in.Responses, in.State = append(r, '}'), state
	return in, nil
}

// progressMessage is a task's status message for a progress notification.
func progressMessage(p tool.Progress) string {
	n := strconv.FormatFloat(p.Progress, 'g', -1, 64)
	if p.Total != 0 && finite(p.Total) {
		n += "/" + strconv.FormatFloat(p.Total, 'g', -1, 64)
	}
	if p.Message == "" {
		return "progress " + n
	}
	return p.Message + " (" + n + ")"
}

// logMessage is a task's status message for a log message of level lv:
// its data, as text when it is a string.
func logMessage(lv int, l tool.Log) string {
	text, ok := jsonrpc.Unquote(l.Data)
	if !ok {
		text = string(l.Data)
	}
	return levels[lv] + ": " + text
}

// tasksHandler serves the tasks extension's tasks/get, tasks/update and
// tasks/cancel (tasks.go).
type tasksHandler struct {
	calls sessionCalls
	store *tasks.Service // Options.Tasks; nil when the server runs none
}

func tasksOf(s *Session) tasksHandler { return tasksHandler{calls: callsOf(s), store: s.srv.tasks} }

// taskParams are the params of tasks/get, tasks/update and tasks/cancel:
// a taskId, a string, and for tasks/update inputResponses, an object of
// objects.
type taskParams struct {
	method    string
	id        string
	responses json.RawMessage // tasks/update's inputResponses, owned
}

func (p taskParams) decode(method string, raw []byte) (taskParams, *jsonrpc.Error) {
	p.method = method
	var ok bool
	if p.id, ok = jsonrpc.Unquote(jsonrpc.Member(raw, "taskId")); !ok || p.id == "" {
		return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: "+method+" needs taskId, a non-empty string")
	}
	if method != "tasks/update" {
		return p, nil
	}
	resp := jsonrpc.Member(raw, "inputResponses")
	if !jsonrpc.IsObject(resp) {
		return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: tasks/update needs inputResponses, an object (key → the client's result)")
	}
	for k, v := range jsonrpc.Members(resp) {
		if !jsonrpc.IsObject(v) {
			key, _ := jsonrpc.Unquote(k)
			return p, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: inputResponses["+strconv.Quote(key)+
				"] is not an object (a CreateMessageResult, ElicitResult or ListRootsResult)")
		}
	}
	p.responses, _ = jsonrpc.AppendJSON(nil, resp) // the transport's bytes: copy
	return p, nil
}

// startTask starts tasks/get, tasks/update or tasks/cancel: a long call,
// since the store may be Redis.
func (h tasksHandler) start(in incoming, p taskParams) func() {
	switch {
	case h.store == nil:
		h.calls.respondError(in.rp, in.msg.ID, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "method not found: "+p.method+" (this server runs no tasks)"))
		return nil
	case in.st == nil || !in.st.caps.tasks:
		h.calls.respondError(in.rp, in.msg.ID, needTasks(p.method))
		return nil
	}
	return h.calls.startOp(in, &taskOp{p: p})
}

// taskOp is one tasks/get, tasks/update or tasks/cancel.
type taskOp struct {
	p    taskParams
	task *tasks.Task // tasks/get's
}

func (o *taskOp) exec(c *call, _ *tool.Input) (json.RawMessage, error) {
	svc, who := c.s.srv.tasks, c.s.taskCaller() // another's task is as unknown (taskowner.go)
	var err error
	switch o.p.method {
	case "tasks/get":
		o.task, err = svc.GetAs(c.ctx, who, o.p.id)
	case "tasks/update":
		err = svc.UpdateAs(c.ctx, who, o.p.id, o.p.responses)
	case "tasks/cancel":
		err = svc.CancelAs(c.ctx, who, o.p.id)
	}
	return nil, err
}

func (o *taskOp) answer(b []byte, c *call, _ json.RawMessage, err error) []byte {
	switch {
	case errors.Is(err, tasks.ErrTooLarge):
		return jsonrpc.AppendError(b, c.id, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: "+err.Error()))
	case errors.Is(err, tasks.ErrNotFound):
		return jsonrpc.AppendError(b, c.id, jsonrpc.NewError(jsonrpc.CodeInvalidParams, "invalid params: no task "+strconv.Quote(o.p.id)+
			": it never existed, or it expired"))
	case err != nil:
		// The store's failure (Redis unreachable, say): its detail is the
		// operator's, in the log.
		c.s.srv.log.Error("a task request failed", "method", o.p.method, "task", o.p.id, "error", err)
		return jsonrpc.AppendError(b, c.id, jsonrpc.NewError(jsonrpc.CodeInternalError, "internal error: "+o.p.method+
			": the task store failed; try again later"))
	}
	b = jsonrpc.AppendResultHead(b, c.id)
	b = append(b, `{"resultType":"complete"`...)
	if o.task != nil {
		b = append(b, ',')
		b = o.task.AppendWire(b, true)
	}
	return append(b, "}}"...)
}
