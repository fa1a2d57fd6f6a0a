package manager

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/internal/atomicfile"
)

// How a failure reaches the operator. Three rules:
//
//   - A failure says why in the terms of what failed. A native plugin that
//     breaks the go-plugin handshake gets go-plugin's message and the
//     launcher's hint (Launch.Diagnose: built for this platform, nothing
//     on stdout first). A declared server knows nothing of go-plugin: its
//     wrapper exits when the server does, so its error is the exit
//     ("exited while starting: exit status 1") and the last lines of its
//     stderr, where the server wrote why.
//   - A start that runs out of time names the limit and what sets it
//     (Options.StartTimeoutSetting), so that the operator knows what to
//     raise, and what was not answered in time.
//   - A failure is logged once per change of state: the first failure
//     after a load, or a failure other than the last one logged (its
//     error, its next step or its stderr's last line differ), at ERROR
//     with its stderr and next step; the same failure again (a restart
//     failing as the last one did, or another plughost command loading
//     the same broken plugin: Options.FailureDir remembers the last one
//     logged) in one line at INFO. A successful load forgets it.

// ErrStartTimeout is matched (errors.Is) by the error of a plugin that did
// not complete its start within its limit (Options.StartTimeout).
var ErrStartTimeout = errors.New("start timed out")

// startTimeout is the error of a start over its limit.
type startTimeout struct {
	what    string // what was not answered in time
	limit   time.Duration
	setting string // Options.StartTimeoutSetting
}

func (e *startTimeout) Error() string {
	s := fmt.Sprintf("%s within %v", e.what, e.limit)
	if e.setting != "" {
		s += " (" + e.setting + ")"
	}
	return s
}

func (e *startTimeout) Is(target error) bool { return target == ErrStartTimeout }

// goPluginTimeout is go-plugin's (v1.8.0) error when the handshake line
// did not come within ClientConfig.StartTimeout.
const goPluginTimeout = "timeout while waiting for plugin to start"

// startFailure rewrites the error of a failed start (err, with exit the
// process's own exit, "" when it was killed or never started) in the terms
// of what failed; see the rules above. ctx is the start's: when it ended,
// the start was cancelled, not timed out.
func (in *instance) startFailure(ctx context.Context, err error, exit string) error {
	declared := in.wrapper() != nil
	limit := in.opts.StartTimeoutOf(in.name)
	switch {
	case strings.Contains(err.Error(), goPluginTimeout):
		what := "did not complete the go-plugin handshake"
		if declared {
			// The wrapper shakes hands once the server has answered
			// initialize and listed what it offers.
			what = "the server did not answer initialize and list what it offers"
		}
		return &startTimeout{what: what, limit: limit, setting: in.opts.StartTimeoutSetting}
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		// Describe or a first list after the handshake.
		return &startTimeout{what: "did not describe itself and list what it offers", limit: limit, setting: in.opts.StartTimeoutSetting}
	case declared && exit != "" && !strings.HasPrefix(exit, "signal: "):
		return fmt.Errorf("exited while starting: %s", exit)
	}
	return nil
}

// stderrForError is the excerpt of the plugin's stderr its errors quote:
// the head and tail of a native plugin's (a Go panic's first line is at
// its head), the last lines of a declared server's, where a server says
// why it gave up.
func (in *instance) stderrForError() string {
	if in.wrapper() != nil {
		return in.out.excerpt.lastLines(tailLines)
	}
	return in.out.excerpt.String()
}

// tailLines is how many of its last stderr lines a declared server's
// error quotes (within excerptTail bytes).
const tailLines = 10

// lastLines returns the last n lines of the stderr, within its last
// excerptTail bytes, after a line "…" when earlier lines are left out.
func (e *excerpt) lastLines(n int) string {
	e.mu.Lock()
	var text string
	if e.total == int64(len(e.head)+len(e.tail)) {
		text = string(e.head) + string(e.tail)
	} else {
		tail := e.tail
		if len(tail) > excerptTail {
			tail = tail[len(tail)-excerptTail:]
		}
		text = "…\n" + string(tail)
	}
	e.mu.Unlock()
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if strings.HasPrefix(text, "…\n") {
		lines = lines[1:] // the marker
		if len(lines) > 1 {
			lines = lines[1:] // the first line, most likely cut
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.Join(lines, "\n")
	if out != strings.TrimRight(text, "\n") && out != "" {
		out = "…\n" + out
	}
	return out
}

// recentLines is how many of its last stderr lines a running plugin's
// status shows (PluginStatus.Stderr), within the excerpt's tail.
const recentLines = 50

// recent is PluginStatus.Stderr: the last recentLines lines of the
// excerpt's tail (lastLines), blank ones left out; after a first line
// "…" when earlier ones are not kept. The excerpt that errors quote is
// the one store of a plugin's stderr: nothing more is kept per line.
func (e *excerpt) recent() []string {
	var out []string
	for _, l := range strings.Split(e.lastLines(recentLines), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// nextStep is the operator's next step for the failure err (Options.NextStep).
func (s *supervisor) nextStep(err error) string {
	if s.m.opts.NextStep == nil || err == nil {
		return ""
	}
	text, stderr := splitStderr(err)
	return s.m.opts.NextStep(s.name, s.path, text, stderr)
}

// setError records err as the plugin's last error, with its next step.
func (s *supervisor) setError(st *PluginStatus, err error, suffix string) {
	st.setError(err, suffix)
	st.NextStep = s.nextStep(err)
}

// reportFailure logs the failure err under msg: at ERROR with its stderr
// and next step when it is news (see the rules above), else in one line at
// INFO.
func (s *supervisor) reportFailure(msg string, err error) {
	text, stderr := splitStderr(err)
	step := s.nextStep(err)
	key := failureKey(s.path, text, step, stderr)
	s.mu.Lock()
	seen := s.lastFailure == key
	s.lastFailure = key
	s.mu.Unlock()
	if !seen {
		seen = s.m.failures.seen(s.name, key)
	}
	if seen {
		s.log.Info(msg+", as when last logged (plughost plugins shows its stderr and next step)", "error", firstLine(text))
		return
	}
	args := []any{"error", err}
	if step != "" {
		args = append(args, "next_step", step)
	}
	s.log.Error(msg, args...)
	s.m.failures.note(s.name, key)
}

// recovered forgets the last failure logged: the plugin loaded.
func (s *supervisor) recovered() {
	s.mu.Lock()
	s.lastFailure = ""
	s.mu.Unlock()
	s.m.failures.forget(s.name)
}

// failureKey identifies a failure of the plugin at path by its error's
// text, its next step and the last line of its stderr (where a server
// says why it gave up), not the rest of its stderr, which may hold times
// and pids: the same exit after the operator fixed one grant, a server
// now missing another, is news.
func failureKey(path, text, step, stderr string) string {
	stderr = strings.TrimRight(stderr, "\n")
	last := stderr[strings.LastIndexByte(stderr, '\n')+1:]
	sum := sha256.Sum256([]byte(path + "\x00" + text + "\x00" + step + "\x00" + last))
	return hex.EncodeToString(sum[:])
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// failureMemory keeps the failure last logged whole of each plugin in a
// directory (Options.FailureDir) as <name>.failure, holding its
// failureKey: another plughost process that meets the same failure does
// not log it whole again. A zero failureMemory remembers nothing.
type failureMemory struct {
	dir string
	log hclog.Logger
}

func (f failureMemory) path(name string) string { return filepath.Join(f.dir, name+".failure") }

func (f failureMemory) seen(name, key string) bool {
	if f.dir == "" {
		return false
	}
	b, err := os.ReadFile(f.path(name))
	return err == nil && strings.TrimSpace(string(b)) == key
}

func (f failureMemory) note(name, key string) {
	if f.dir == "" {
		return
	}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		f.log.Debug("could not remember the failure logged", "plugin", name, "error", err)
		return
	}
	if err := atomicfile.Write(f.path(name), []byte(key+"\n")); err != nil {
		f.log.Debug("could not remember the failure logged", "plugin", name, "error", err)
	}
}

func (f failureMemory) forget(name string) {
	if f.dir == "" {
		return
	}
	if err := os.Remove(f.path(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		f.log.Debug("could not forget the failure logged", "plugin", name, "error", err)
	}
}

// maxAdvisedResult bounds the tool results adviseCall reads: an error
// result is a few lines, and a large result is not read twice.
const maxAdvisedResult = 16 << 10

// maxAdvised bounds the distinct next steps adviseCall logs per process
// of a plugin: its results are the plugin's to word, and one naming a new
// host in every call would otherwise grow the steps remembered, and the
// log, without end.
const maxAdvised = 16

// adviseCall logs at WARN, once per process of the plugin and step (and
// for at most maxAdvised steps, then once that it stops), the
// next step (Options.NextStep) for a tool call whose isError result says
// why in words it knows: a server without network that tried to reach a
// host, a path its sandbox hides. Such a server starts well and fails
// only when called, so its calls are where the operator learns it.
func (in *instance) adviseCall(toolName string, res json.RawMessage) {
	if in.opts.NextStep == nil || len(res) > maxAdvisedResult || !bytes.Contains(res, []byte(`"isError"`)) {
		return
	}
	var r struct {
		Content []struct{ Type, Text string } `json:"content"`
		IsError bool                          `json:"isError"`
	}
	if json.Unmarshal(res, &r) != nil || !r.IsError {
		return
	}
	var text []string
	for _, c := range r.Content {
		if c.Type == "text" {
			text = append(text, c.Text)
		}
	}
	step := in.opts.NextStep(in.name, in.path, strings.Join(text, "\n"), "")
	if step == "" {
		return
	}
	in.advisedMu.Lock()
	switch {
	case in.advised[step]:
		in.advisedMu.Unlock()
		return
	case len(in.advised) >= maxAdvised:
		stop := !in.advisedOff
		in.advisedOff = true
		in.advisedMu.Unlock()
		if stop {
			in.log.Warn("tool calls failed for more reasons than are worth advising on: no more next steps for its failed calls until it restarts", "tool", toolName, "advised", maxAdvised)
		}
		return
	}
	if in.advised == nil {
		in.advised = map[string]bool{}
	}
	in.advised[step] = true
	in.advisedMu.Unlock()
	in.log.Warn("a tool call failed for a reason the operator can fix", "tool", toolName, "error", firstLine(strings.Join(text, "\n")), "next_step", step)
}
