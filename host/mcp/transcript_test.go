package mcp

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/plughost/plughost/host/tool"
)

var update = flag.Bool("update", false, "rewrite the transcripts in testdata/*.txtar with the server's output")

// TestTranscripts replays the protocol transcripts in testdata/*.txtar over
// the stdio transport and compares what the server writes.
//
// A transcript file holds a "transcript" section and, optionally, an
// "options" section (JSON: maxMessageSize, instructions, version). Its lines:
//
//	> MESSAGE    the client sends MESSAGE (one line, verbatim)
//	>& MESSAGE   the same, but the runner waits only until the server has
//	             read it (for a batch whose response waits on a parked call)
//	< MESSAGE    the server wrote MESSAGE in answer to the step above
//	! change     the catalog's tool list changes
//	! change K,… the catalog's lists of those kinds change (tools,
//	             resources, prompts) in one burst
//	! update URI the catalog reports the resource at URI updated
//	! live N     the catalog holds N live resource subscriptions (checked)
//	! release    one parked call of the slow tool returns (once one parks)
//	! long N     the client sends a ping padded to N bytes
//	! eof        the client closes stdin
//	# text       a comment
//
// A requestState the server writes (sealed, different on every run) shows
// as "$STATE" in "<" lines, and "$STATE" in a ">" line stands for the last
// one written.
// After each step the runner waits until the server has read the message
// and written everything it will write (calls parked in the slow tool
// aside), so the output of a step is exact. Batch responses, whose order is
// the order calls finish, are sorted by id. Every line the server writes is
// checked against the official schema of the negotiated version. With
// -update the "<" lines are rewritten.
func TestTranscripts(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			t.Parallel()
			runTranscript(t, file)
		})
	}
}

func runTranscript(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var script *txtar.File
	opts := clientOptions{stdio: true}
	for i, f := range ar.Files {
		switch f.Name {
		case "transcript":
			script = &ar.Files[i]
		case "options":
			var o struct {
				MaxMessageSize   int    `json:"maxMessageSize"`
				Instructions     string `json:"instructions"`
				Version          string `json:"version"`
				MaxSubscriptions int    `json:"maxSubscriptions"`
			}
			dec := json.NewDecoder(bytes.NewReader(f.Data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&o); err != nil {
				t.Fatalf("options: %v", err)
			}
			opts.server = Options{MaxMessageSize: o.MaxMessageSize, Instructions: o.Instructions, Version: o.Version,
				MaxSubscriptions: o.MaxSubscriptions}
		default:
			t.Fatalf("unknown section %q", f.Name)
		}
	}
	if script == nil {
		t.Fatal("no transcript section")
	}

	c := newClient(t, opts)
	var got bytes.Buffer
	state := "" // the last requestState the server wrote
	closed := false
	for n, line := range strings.Split(strings.TrimSuffix(string(script.Data), "\n"), "\n") {
		if strings.HasPrefix(line, "< ") {
			continue
		}
		got.WriteString(line + "\n")
		switch cmd, arg, _ := strings.Cut(line, " "); {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case closed && !strings.HasPrefix(line, "! live "):
			t.Fatalf("line %d: a step after ! eof", n+1)
		case cmd == ">":
			c.write(strings.ReplaceAll(arg, "$STATE", state))
		case cmd == ">&":
			c.write(arg)
			c.await("the server to read", func() bool { return c.obs.reads.Load() > c.sent })
			continue
		case line == "! change":
			c.cat.Change()
		case cmd == "!" && strings.HasPrefix(arg, "change "):
			var ch tool.Change
			for kind := range strings.SplitSeq(strings.TrimPrefix(arg, "change "), ",") {
				switch kind {
				case "tools":
					ch.Tools = true
				case "resources":
					ch.Resources = true
				case "prompts":
					ch.Prompts = true
				default:
					t.Fatalf("line %d: unknown kind %q", n+1, kind)
				}
			}
			c.cat.ChangeLists(ch)
		case cmd == "!" && strings.HasPrefix(arg, "update "):
			c.cat.Update(strings.TrimPrefix(arg, "update "))
		case cmd == "!" && strings.HasPrefix(arg, "live "):
			want, err := strconv.Atoi(strings.TrimPrefix(arg, "live "))
			if err != nil {
				t.Fatalf("line %d: %v", n+1, err)
			}
			if got := c.cat.Subscriptions(); got != want {
				t.Errorf("line %d: %d live subscriptions, want %d", n+1, got, want)
			}
		case line == "! release":
			c.await("a call to park", c.cat.ReleaseOne)
		case cmd == "!" && strings.HasPrefix(arg, "long "):
			size, err := strconv.Atoi(strings.TrimPrefix(arg, "long "))
			if err != nil {
				t.Fatalf("line %d: %v", n+1, err)
			}
			head := `{"jsonrpc":"2.0","id":"long","method":"ping","params":{"pad":"`
			c.write(head + strings.Repeat("x", max(size-len(head)-3, 0)) + `"}}`)
		case line == "! eof":
			if err := c.close(); err != nil {
				t.Fatalf("Serve: %v", err)
			}
			closed = true
		default:
			t.Fatalf("line %d: cannot read %q", n+1, line)
		}
		if !closed {
			c.settle()
		}
		for _, out := range c.take() {
			if m := sealedState.FindStringSubmatch(out); m != nil {
				state = m[1]
				out = sealedState.ReplaceAllString(out, `"requestState":"$$STATE"`)
			}
			got.WriteString("< " + sortBatch(t, out) + "\n")
		}
	}
	if !closed {
		if err := c.close(); err != nil {
			t.Fatalf("Serve: %v", err)
		}
		if rest := c.take(); len(rest) > 0 {
			t.Errorf("output after the last step: %q", rest)
		}
	}

	if *update {
		script.Data = got.Bytes()
		if err := os.WriteFile(file, txtar.Format(ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if diff := cmp.Diff(string(script.Data), got.String()); diff != "" {
		t.Errorf("transcript differs (-file +server; rerun with -update to accept):\n%s", diff)
	}
}

// sealedState finds the requestState of an InputRequiredResult.
var sealedState = regexp.MustCompile(`"requestState":"([^"]*)"`)

// sortBatch orders a batch response's elements by id.
func sortBatch(t *testing.T, line string) string {
	if !strings.HasPrefix(line, "[") {
		return line
	}
	var elems []json.RawMessage
	if err := json.Unmarshal([]byte(line), &elems); err != nil {
		t.Fatalf("batch response %s: %v", line, err)
	}
	id := func(m json.RawMessage) string {
		var e struct{ ID json.RawMessage }
		json.Unmarshal(m, &e)
		return string(e.ID)
	}
	slices.SortStableFunc(elems, func(a, b json.RawMessage) int { return strings.Compare(id(a), id(b)) })
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range elems {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e)
	}
	b.WriteByte(']')
	return b.String()
}
