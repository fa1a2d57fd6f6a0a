package manager

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
)

// A long stderr keeps its head and its tail: the first line of a Node.js
// exception ("Error: boom") and the end of its stack both survive, the
// middle is counted, and the excerpt is bounded.
func TestExcerptKeepsHeadAndTail(t *testing.T) {
	t.Parallel()
	var e excerpt
	e.add([]byte("/srv/plugin.js:3"), 0)
	e.add([]byte("Error: boom"), 0)
	written := len("/srv/plugin.js:3\nError: boom\n")
	for i := range 200 {
		line := fmt.Sprintf("    at Object.<anonymous> (/srv/node_modules/some/long/path/index.js:%d:17)", i)
		e.add([]byte(line), 0)
		written += len(line) + 1
	}
	e.add([]byte("Node.js v22.12.0"), 0)
	written += len("Node.js v22.12.0\n")

	got := e.String()
	if !strings.HasPrefix(got, "/srv/plugin.js:3\nError: boom\n") {
		t.Errorf("excerpt does not start with the exception's first lines:\n%.300s", got)
	}
	if !strings.HasSuffix(got, "index.js:199:17)\nNode.js v22.12.0") {
		t.Errorf("excerpt does not end with the stderr's last lines:\n…%s", got[max(0, len(got)-300):])
	}
	// The head ends and the tail starts at a line boundary, and the
	// marker counts the bytes between them.
	m := regexp.MustCompile(`\n… (\d+) bytes elided …\n`).FindStringSubmatchIndex(got)
	if m == nil {
		t.Fatalf("excerpt has no elision marker:\n%s", got)
	}
	elided, _ := strconv.Atoi(got[m[2]:m[3]])
	if kept := m[0] + 1 + len(got) - m[1] + 1; kept+elided != written {
		t.Errorf("excerpt keeps %d bytes and says %d are elided, of %d written", kept, elided, written)
	}
	if !strings.HasPrefix(got[m[1]:], "    at Object") {
		t.Errorf("the tail does not start at a line: %.80q", got[m[1]:])
	}
	if n := len(got); n > excerptHead+excerptTail+50 {
		t.Errorf("excerpt is %d bytes, want at most about %d", n, excerptHead+excerptTail)
	}

	var short excerpt
	short.add([]byte("only line"), 0)
	if got := short.String(); got != "only line" {
		t.Errorf("short excerpt = %q, want the whole stderr", got)
	}
	var empty excerpt
	if got := empty.String(); got != "" {
		t.Errorf("empty excerpt = %q", got)
	}
}

// Written in small pieces or in one large one, the excerpt is the same, and
// never splits a character.
func TestExcerptWrites(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("é", 5000) // 10000 bytes of 2-byte characters
	var one, many excerpt
	_, _ = one.Write([]byte(text))
	for i := 0; i < len(text); i += 7 {
		_, _ = many.Write([]byte(text[i:min(i+7, len(text))]))
	}
	if one.String() != many.String() {
		t.Errorf("one write and many give different excerpts")
	}
	got := one.String()
	if !utf8.ValidString(got) {
		t.Errorf("excerpt is not valid UTF-8")
	}
	if !strings.Contains(got, " bytes elided …") {
		t.Errorf("excerpt of 10000 bytes has no elision marker")
	}
}

// captureLog returns a JSON hclog logger at level, named "host", and the
// entries it logged.
func captureLog(level hclog.Level) (hclog.Logger, func() []map[string]any) {
	var mu sync.Mutex
	var buf strings.Builder
	l := hclog.New(&hclog.LoggerOptions{Name: "host", Level: level, JSONFormat: true, Output: writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	})})
	return l, func() []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		var out []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			if line == "" {
				continue
			}
			var e map[string]any
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				panic(fmt.Sprintf("log line %q: %v", line, err))
			}
			out = append(out, e)
		}
		return out
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// Plain lines become INFO under the plugin's name; hclog JSON keeps its
// level and fields; [LEVEL] prefixes and Go crashes are honoured; long
// lines are cut with a marker; lines below the logger's level are not
// logged; stderr goes to the excerpt.
func TestPluginOutputLevels(t *testing.T) {
	t.Parallel()
	log, entries := captureLog(hclog.Info)
	o := newPluginOutput(log, "demo")
	stdout := o.writer("stdout")
	stderr := o.writer("stderr")
	long := strings.Repeat("z", maxOutputLine+100)
	for _, w := range []struct {
		w    io.Writer
		text string
	}{
		{stdout, "hello from fmt.Println\n"},
		{stdout, "split "}, {stdout, "in two\r\n"},
		{stdout, "\n   \n"}, // blank: skipped
		{stderr, `{"@level":"warn","@message":"disk low","@module":"demo-sdk","@timestamp":"2026-01-02T03:04:05.000000Z","free":12}` + "\n"},
		{stderr, `{"@level":"debug","@message":"below the level"}` + "\n"},
		{stderr, `{"not":"hclog"}` + "\n"},
		{stderr, "[WARN] prefixed\n"},
		{stderr, "[DEBUG] prefixed debug\n"},
		{stdout, long + "\n"},
		{stderr, "2026/01/02 03:04:05 from log.Printf\n"},
		{stderr, "panic: oops\n\ngoroutine 1 [running]:\n"},
		{stdout, "after the panic, on stdout"}, // no newline: flushed by finish
	} {
		if _, err := w.w.Write([]byte(w.text)); err != nil {
			t.Fatal(err)
		}
	}
	stdout.Flush()

	type line struct{ Level, Module, Message, Stream string }
	var got []line
	for _, e := range entries() {
		s, _ := e["stream"].(string)
		got = append(got, line{fmt.Sprint(e["@level"]), fmt.Sprint(e["@module"]), fmt.Sprint(e["@message"]), s})
	}
	cutMsg := strings.Repeat("z", maxOutputLine) + " … [100 more bytes cut]"
	want := []line{
		{"info", "host.demo", "hello from fmt.Println", "stdout"},
		{"info", "host.demo", "split in two", "stdout"},
		{"warn", "host.demo", "disk low", ""},
		{"info", "host.demo", `{"not":"hclog"}`, "stderr"},
		{"warn", "host.demo", "[WARN] prefixed", "stderr"},
		{"info", "host.demo", cutMsg, "stdout"},
		{"info", "host.demo", "2026/01/02 03:04:05 from log.Printf", "stderr"},
		{"error", "host.demo", "panic: oops", "stderr"},
		{"error", "host.demo", "goroutine 1 [running]:", "stderr"},
		{"info", "host.demo", "after the panic, on stdout", "stdout"},
	}
	if len(got) != len(want) {
		t.Fatalf("logged %d lines, want %d:\n%v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %+v,\nwant %+v", i, got[i], want[i])
		}
	}
	hcl := entries()[2]
	if hcl["plugin_module"] != "demo-sdk" || hcl["free"] != float64(12) || hcl["timestamp"] != "2026-01-02T03:04:05.000000Z" {
		t.Errorf("hclog entry's fields = %v", hcl)
	}
	ex := o.excerpt.String()
	if !strings.Contains(ex, "disk low") || !strings.Contains(ex, "panic: oops") || strings.Contains(ex, "fmt.Println") {
		t.Errorf("stderr excerpt = %q, want stderr's lines only", ex)
	}
}

// A flood is rate-limited: past the burst, lines are dropped and counted,
// and the count is logged.
func TestPluginOutputFlood(t *testing.T) {
	t.Parallel()
	log, entries := captureLog(hclog.Info)
	o := newPluginOutput(log, "noisy")
	w := o.writer("stdout")
	const n = 3 * outputBurst
	for i := range n {
		fmt.Fprintf(w, "line %d\n", i)
	}
	o.finish()
	logged, dropped := 0, 0.0
	for _, e := range entries() {
		if d, ok := e["dropped"].(float64); ok {
			dropped += d
			continue
		}
		logged++
	}
	if logged < outputBurst || logged > outputBurst+outputRate*10 {
		t.Errorf("logged %d of %d lines, want about the burst of %d", logged, n, outputBurst)
	}
	if int(dropped)+logged != n {
		t.Errorf("logged %d and reported %v dropped, want %d in all", logged, dropped, n)
	}
}

// go-plugin reads the handshake line, then EOF; the rest of stdout is
// logged.
func TestStdoutHandshakeThenLogs(t *testing.T) {
	t.Parallel()
	log, entries := captureLog(hclog.Info)
	o := newPluginOutput(log, "p")
	hs := newHandshakeReader()
	o.copyStdout(strings.NewReader("1|2|unix|/tmp/sock|grpc\nprinted later\n"), hs)
	b, err := io.ReadAll(hs)
	if err != nil || string(b) != "1|2|unix|/tmp/sock|grpc\n" {
		t.Errorf("go-plugin read %q, %v", b, err)
	}
	if e := entries(); len(e) != 1 || e[0]["@message"] != "printed later" || e[0]["@level"] != "info" {
		t.Errorf("logged %v", e)
	}

	empty := newHandshakeReader()
	o.copyStdout(strings.NewReader(""), empty)
	if b, err := io.ReadAll(empty); err != nil || len(b) != 0 {
		t.Errorf("go-plugin read %q, %v from an empty stdout", b, err)
	}
}
