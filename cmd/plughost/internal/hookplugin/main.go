// Command hookplugin is a guardrail plugin of the end-to-end tests: it
// serves every hook point, and how it answers is chosen per hook by the
// operator's name for the hook (the label of its hook block), up to its
// first "-" ("refuse-2" behaves as "refuse"), or for every hook by
// HOOKPLUGIN_BEHAVIOUR:
//
//   - pass: passes;
//   - refuse: refuses, with HOOKPLUGIN_REASON (default "refused by the test hook");
//   - refuse_word: refuses what mentions HOOKPLUGIN_WORD (default "secret"), passes the rest;
//   - rewrite: rewrites the arguments: the JSON object HOOKPLUGIN_ARGS
//     (default {"rewritten":true}) merged into them;
//   - redact: rewrites a result (or definition) with every HOOKPLUGIN_WORD
//     replaced by "[redacted]"; passes what does not mention it;
//   - hide: hides a definition that mentions HOOKPLUGIN_WORD, with the
//     reason `mentions "WORD"`; passes the rest;
//   - sleep: waits until the host gives up (its context ends), or
//     HOOKPLUGIN_SLEEP (default 1m), then passes;
//   - crash: exits at once with status 3, the question unanswered;
//   - flood: writes 1 MiB to stderr, then answers a rewrite of 32 MiB, over
//     the host's limit (the SDK answers an error naming it instead);
//   - error: answers that it could not decide; panic: panics.
//
// HOOKPLUGIN_POINTS (a comma-separated list) restricts the points it
// offers. With HOOKPLUGIN_LOG set, every question is appended to that
// file as one JSON line (point, hook, item, caller, arguments, result,
// definition) before it is answered. The plugin also offers one tool,
// say, returning its "text" argument: its own item, which its hooks never
// judge.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/plughost/plughost/pluginproto"
)

func main() {
	p := pluginproto.New("hookplugin", "1.0.0")
	p.AddTool(pluginproto.Tool{Name: "say", Description: "Returns its text.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		func(_ context.Context, r *pluginproto.Request) (*pluginproto.Result, error) {
			var args struct{ Text string }
			if err := r.Bind(&args); err != nil {
				return nil, err
			}
			return pluginproto.TextResult(args.Text), nil
		})
	points := []pluginproto.HookPoint{pluginproto.BeforeCall, pluginproto.AfterCall, pluginproto.BeforeRead,
		pluginproto.AfterRead, pluginproto.BeforeGet, pluginproto.AfterGet, pluginproto.OnDefinitions}
	if only := os.Getenv("HOOKPLUGIN_POINTS"); only != "" {
		points = nil
		for _, s := range strings.Split(only, ",") {
			points = append(points, pluginproto.HookPoint(strings.TrimSpace(s)))
		}
	}
	p.AddHook(answer, points...)
	pluginproto.Serve(p)
}

// answer is the one hook: its behaviour, after recording the question.
func answer(ctx context.Context, q *pluginproto.HookRequest) (pluginproto.HookAnswer, error) {
	record(q)
	word := env("HOOKPLUGIN_WORD", "secret")
	mentions := strings.Contains(string(q.Arguments)+string(q.Result)+string(q.Definition)+q.URI, word)
	switch behaviour(q.Hook) {
	case "pass":
		return pluginproto.Pass(), nil
	case "refuse":
		return pluginproto.Refuse(env("HOOKPLUGIN_REASON", "refused by the test hook")), nil
	case "refuse_word":
		if mentions {
			return pluginproto.Refuse(fmt.Sprintf("mentions %q", word)), nil
		}
		return pluginproto.Pass(), nil
	case "rewrite":
		args := map[string]any{}
		if len(q.Arguments) > 0 {
			if err := json.Unmarshal(q.Arguments, &args); err != nil {
				return pluginproto.HookAnswer{}, err
			}
		}
		extra := map[string]any{}
		if err := json.Unmarshal([]byte(env("HOOKPLUGIN_ARGS", `{"rewritten":true}`)), &extra); err != nil {
			return pluginproto.HookAnswer{}, fmt.Errorf("HOOKPLUGIN_ARGS: %w", err)
		}
		maps.Copy(args, extra)
		return pluginproto.Rewrite(args, "arguments rewritten by the test hook"), nil
	case "redact":
		what := q.Result
		if q.Point == pluginproto.OnDefinitions {
			what = q.Definition
		}
		if !strings.Contains(string(what), word) {
			return pluginproto.Pass(), nil
		}
		return pluginproto.Rewrite(json.RawMessage(strings.ReplaceAll(string(what), word, "[redacted]")), fmt.Sprintf("redacted %q", word)), nil
	case "hide":
		if mentions && q.Point == pluginproto.OnDefinitions {
			return pluginproto.Hide(fmt.Sprintf("mentions %q", word)), nil
		}
		return pluginproto.Pass(), nil
	case "sleep":
		d, err := time.ParseDuration(env("HOOKPLUGIN_SLEEP", "1m"))
		if err != nil {
			return pluginproto.HookAnswer{}, fmt.Errorf("HOOKPLUGIN_SLEEP: %w", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
		return pluginproto.Pass(), nil
	case "crash":
		os.Exit(3)
	case "flood":
		line := strings.Repeat("flood ", 170) + "\n" // 1 KiB
		for range 1024 {
			fmt.Fprint(os.Stderr, line)
		}
		return pluginproto.Rewrite(map[string]string{"flood": strings.Repeat("x", 32<<20)}, "flood"), nil
	case "error":
		return pluginproto.HookAnswer{}, errors.New("the test hook could not decide")
	case "panic":
		panic("the test hook panicked")
	}
	return pluginproto.HookAnswer{}, fmt.Errorf("hookplugin: no behaviour %q (hook %q)", behaviour(q.Hook), q.Hook)
}

// behaviour is how the hook named hook answers.
func behaviour(hook string) string {
	if b := os.Getenv("HOOKPLUGIN_BEHAVIOUR"); b != "" {
		return b
	}
	b, _, _ := strings.Cut(hook, "-")
	return b
}

var logMu sync.Mutex

// record appends q to HOOKPLUGIN_LOG, when set.
func record(q *pluginproto.HookRequest) {
	path := os.Getenv("HOOKPLUGIN_LOG")
	if path == "" {
		return
	}
	line, err := json.Marshal(q)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hookplugin: record:", err)
		return
	}
	logMu.Lock()
	defer logMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hookplugin: record:", err)
		return
	}
	defer f.Close()
	_, _ = f.Write(append(line, '\n'))
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}
