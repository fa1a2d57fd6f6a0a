package manager

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/pluginproto"
)

var _ tool.HookAsker = (*Manager)(nil)

// AskHook asks the plugin named plugin one question as the hook q.Hook
// (tool.HookAsker), through the plugin's Hooks stream.
//
// A plugin that runs is asked at once. One that is starting (a lazy
// plugin idle, one published from the cache, one loading or restarting)
// is started and waited for first, up to its start limit
// (Options.StartTimeoutOf plus StopTimeout, as any request waits): that
// wait does not count against the question's own time, so when ctx has a
// deadline (the hook's timeout), the question gets, once the plugin is
// ready, the time ctx had left when AskHook was called. Cancelling ctx
// ends the wait and the question at once, with ctx's error; while the
// plugin starts, only a cancel does, not the deadline.
//
// Errors: tool.ErrRefused when no plugin of that name is loaded, when it
// is down (parked, quarantined, failed, unloaded: the error says which),
// or when it does not offer q.Point (Describe's Offers.Hooks);
// tool.ErrTimedOut or tool.ErrGone when it did not start; otherwise
// those of pluginclient.Client.Hook (ctx's error when ctx ended,
// ErrHookFailed, ErrPluginClosed when it died …), naming the plugin.
// The plugin sees the caller as its tools do: only the claims of
// Options.PassClaims.
func (m *Manager) AskHook(ctx context.Context, plugin string, q *tool.HookCall) (*tool.HookAnswer, error) {
	subject := fmt.Sprintf("hook %q", q.Hook)
	m.mu.Lock()
	s := m.plugins[plugin]
	m.mu.Unlock()
	if s == nil {
		return nil, tool.Errorf(tool.ErrRefused, "%s: no plugin %s is loaded (the plugin directory has no such file, or another file has its name)", subject, plugin)
	}
	in := s.g.ready()
	if in == nil {
		var err error
		if in, ctx, err = s.awaitStart(ctx, subject); err != nil {
			return nil, err
		}
	}
	defer in.leave()
	if !slices.Contains(in.desc.Offers.Hooks, pluginproto.HookPoint(q.Point)) {
		return nil, tool.Errorf(tool.ErrRefused, "%s: plugin %s serves no hook at %s (it offers %v)", subject, plugin, q.Point, in.desc.Offers.Hooks)
	}
	fwd := *q
	fwd.Caller = passedCaller(q.Caller, m.opts.PassClaims)
	a, err := in.pp.Hook(ctx, &fwd)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", plugin, err)
	}
	return a, nil
}

// awaitStart waits for the plugin's process, started for the question if
// need be, and returns it entered, with the context to ask it under: ctx,
// or, when ctx's deadline passed during the wait, a context with the
// deadline moved by the time the wait took, which ctx's cancel still
// ends. The wait ends when ctx is cancelled, not when its deadline
// passes; the gate bounds it.
func (s *supervisor) awaitStart(ctx context.Context, subject string) (*instance, context.Context, error) {
	began := time.Now()
	wait, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	unwatch := context.AfterFunc(ctx, func() {
		if ctx.Err() == context.Canceled {
			stop()
		}
	})
	defer unwatch()
	in, err := s.g.acquire(wait, subject)
	if err != nil {
		if ctx.Err() == context.Canceled {
			return nil, nil, fmt.Errorf("%s: waiting for plugin %s to start: %w", subject, s.name, ctx.Err())
		}
		return nil, nil, err
	}
	deadline, timed := ctx.Deadline()
	if !timed || ctx.Err() == nil {
		return in, ctx, nil // no deadline, or it has not passed: ctx holds
	}
	// The deadline passed while the plugin started: the question gets the
	// time it had then, and ctx's cancel.
	asked, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline.Add(time.Since(began)))
	stopWatch := context.AfterFunc(ctx, func() {
		if ctx.Err() == context.Canceled {
			cancel()
		}
	})
	context.AfterFunc(asked, func() { stopWatch() })
	return in, asked, nil
}

// passedCaller is c with only the claims named in pass.
func passedCaller(c *tool.Caller, pass []string) *tool.Caller {
	if c == nil || len(c.Claims) == 0 {
		return c
	}
	out := *c
	out.Claims = nil
	for _, name := range pass {
		if v, ok := c.Claims[name]; ok {
			if out.Claims == nil {
				out.Claims = map[string]any{}
			}
			out.Claims[name] = v
		}
	}
	return &out
}
