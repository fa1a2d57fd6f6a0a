package device

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// scriptedSampler answers each CreateMessage with the next of its answers
// and records the params it was given.
type scriptedSampler struct {
	tools   bool
	answers []string
	err     error
	got     chan json.RawMessage
}

func (s *scriptedSampler) SamplingTools() bool { return s.tools }

func (s *scriptedSampler) CreateMessage(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
	s.got <- params
	if s.err != nil {
		return nil, s.err
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	return json.RawMessage(a), nil
}

func textTask(d *device, text string) {
	d.sendFrame(TypeText, "task0001", 0, text)
	d.sendFrame(TypeEnd, "task0001", 1, "")
}

func TestTextTasks(t *testing.T) {
	t.Parallel()
	const answer = `{"role":"assistant","content":{"type":"text","text":"Hi ##END there"},"model":"m"}`
	tests := map[string]struct {
		sampler  *scriptedSampler
		want     string
		noTools  bool // the sampling request offers no tools
		wantCall bool // the device gets a call of "svc" during the task
	}{
		"no sampler": {want: noSamplerText},
		"no client can sample": {
			sampler: &scriptedSampler{err: ErrNoSampler},
			want:    noSamplerText,
		},
		"the client fails": {
			sampler: &scriptedSampler{err: errors.New("user declined")},
			want:    "Sorry, I cannot answer: the model's client failed: user declined",
		},
		"answer escaped": {
			sampler: &scriptedSampler{tools: true, answers: []string{answer}},
			want:    "Hi #\u200b#END there",
		},
		"client without sampling.tools gets no tools": {
			sampler: &scriptedSampler{answers: []string{answer}},
			want:    "Hi #\u200b#END there",
			noTools: true,
		},
		"invalid arguments are fed back, not sent": {
			sampler: &scriptedSampler{tools: true, answers: []string{
				`{"role":"assistant","content":[{"type":"tool_use","id":"u1","name":"svc","input":{"x":1}}],"model":"m"}`,
				`{"role":"assistant","content":[{"type":"tool_use","id":"u2","name":"svc","input":{"x":"ok"}}],"model":"m"}`,
				`{"role":"assistant","content":[{"type":"text","text":"done"}],"model":"m"}`,
			}},
			want:     "done",
			wantCall: true,
		},
		"endless tool use gives up": {
			sampler: &scriptedSampler{tools: true, answers: func() []string {
				var a []string
				for range maxToolRounds + 1 {
					a = append(a, `{"role":"assistant","content":[{"type":"tool_use","id":"u","name":"nope","input":{}}],"model":"m"}`)
				}
				return a
			}()},
			want: "Sorry, I gave up: the model was still calling tools after 8 rounds.",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts := &Options{}
			if tt.sampler != nil {
				tt.sampler.got = make(chan json.RawMessage, 20)
				opts.Sampler = tt.sampler
			}
			b := startBridge(t, opts)
			d := dial(t, b.addr)
			d.register("svc")
			b.waitTools("svc")
			textTask(d, "hello")
			if tt.wantCall {
				f := d.expect(TypeMCP, `{"type":"call","data":{"call_id":"call_001","method":"svc","params":{"x":"ok"}}}`)
				d.sendFrame(TypeMCP, f.Task, 0, `{"type":"result","data":{"call_id":"call_001","result":{"success":true,"data":"fine"}}}`)
			}
			f := d.expect(TypeText, "")
			if string(f.Payload) != tt.want || f.Task != "task0001" || f.Seq != 0 {
				t.Errorf("answer %v, want %q in task0001 seq 0", f, tt.want)
			}
			if f := d.expect(TypeEnd, ""); f.Task != "task0001" || f.Seq != 1 {
				t.Errorf("END %v, want task0001 seq 1", f)
			}
			if tt.sampler == nil || tt.sampler.err != nil {
				return
			}
			first := string(<-tt.sampler.got)
			if hasTools := strings.Contains(first, `"tools":`); hasTools == tt.noTools {
				t.Errorf("tools offered = %v, want %v: %s", hasTools, !tt.noTools, first)
			}
			if tt.wantCall {
				second := string(<-tt.sampler.got)
				if !strings.Contains(second, `"toolUseId":"u1","content":[{"type":"text","text":"invalid arguments for tool \"svc\"`) || !strings.Contains(second, `"isError":true`) {
					t.Errorf("the invalid call was not fed back as an error: %s", second)
				}
				third := string(<-tt.sampler.got)
				if !strings.Contains(third, `{"type":"tool_result","toolUseId":"u2","content":[{"type":"text","text":"fine"}]}`) {
					t.Errorf("the result was not fed back: %s", third)
				}
			}
		})
	}
}

// TestLongAnswer: an answer longer than one frame is split at character
// boundaries over numbered TEXT frames.
func TestLongAnswer(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("日本語", 3000) // 27000 bytes
	a, _ := json.Marshal(map[string]any{"role": "assistant", "model": "m", "content": map[string]string{"type": "text", "text": long}})
	s := &scriptedSampler{answers: []string{string(a)}, got: make(chan json.RawMessage, 1)}
	b := startBridge(t, &Options{Sampler: s})
	d := dial(t, b.addr)
	textTask(d, "talk")
	var got strings.Builder
	seq := 0
	for {
		f := d.next()
		if f.Seq != seq {
			t.Fatalf("frame %d has sequence %d", seq, f.Seq)
		}
		seq++
		if f.Type == TypeEnd {
			break
		}
		if len(f.Payload) > maxTextChunk || !utf8.Valid(f.Payload) {
			t.Fatalf("chunk of %d bytes, valid UTF-8 %v", len(f.Payload), utf8.Valid(f.Payload))
		}
		got.Write(f.Payload)
	}
	if got.String() != long || seq != 8 {
		t.Errorf("got %d bytes in %d frames, want %d bytes in 7 TEXT + END", got.Len(), seq, len(long))
	}
}

// blockingSampler holds every CreateMessage until release is closed.
type blockingSampler struct {
	asked   chan struct{}
	release chan struct{}
}

func (s *blockingSampler) SamplingTools() bool { return false }

func (s *blockingSampler) CreateMessage(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
	s.asked <- struct{}{}
	select {
	case <-s.release:
		return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}`), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Text tasks being answered count against the limit too: a device cannot
// keep an unbounded number of sampling requests running at the user's model.
func TestTextTasksBeingAnsweredAreBounded(t *testing.T) {
	t.Parallel()
	s := &blockingSampler{asked: make(chan struct{}, maxTextTasks+1), release: make(chan struct{})}
	b := startBridge(t, &Options{Sampler: s})
	d := dial(t, b.addr)
	for i := range maxTextTasks {
		task := fmt.Sprintf("task%04d", i)
		d.sendFrame(TypeText, task, 0, "hello")
		d.sendFrame(TypeEnd, task, 1, "")
		<-s.asked
	}
	d.sendFrame(TypeText, "taskMORE", 0, "one more")
	d.expect(TypeStatus, "##ERROR:too many text tasks open")
	close(s.release)
	// Every held task is answered (in any order): a TEXT "ok" and an END each.
	texts, ends := map[string]bool{}, map[string]bool{}
	for range 2 * maxTextTasks {
		f := d.next()
		switch {
		case f.Type == TypeText && string(f.Payload) == "ok":
			texts[f.Task] = true
		case f.Type == TypeEnd:
			ends[f.Task] = true
		default:
			t.Fatalf("unexpected frame %s", f)
		}
	}
	if len(texts) != maxTextTasks || len(ends) != maxTextTasks {
		t.Errorf("answered %d tasks and ended %d, want %d each", len(texts), len(ends), maxTextTasks)
	}
}
