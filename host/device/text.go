package device

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Text tasks: the device sends a user's words as TEXT frames of one task
// and ends the task with END; the answer comes back as TEXT frames of the
// same task, then END.

const (
	// maxToolRounds bounds the sampling rounds in which the model asks
	// for tools before it must answer.
	maxToolRounds = 8
	// maxTextChunk is the largest TEXT payload the server sends; a longer
	// answer is split (at a character boundary) over several frames.
	maxTextChunk = 4000

	systemPrompt = "A user is talking to a small device (a voice box, a board, an appliance). " +
		"Answer briefly, in plain text and in the user's language: the answer is shown or spoken on the device."
	noSamplerText = "Sorry, I cannot answer: no connected MCP client offers a language model (sampling)."
)

// text collects a TEXT frame of a task being received.
func (c *conn) text(f Frame) {
	c.mu.Lock()
	buf := c.texts[f.Task]
	switch {
	case buf == nil && len(c.texts)+c.answering >= maxTextTasks:
		c.mu.Unlock()
		c.statusError(f.Task, f.Seq, fmt.Sprintf("too many text tasks open (%d): end one first", maxTextTasks))
		return
	case buf == nil:
		buf = new(bytes.Buffer)
		c.texts[f.Task] = buf
	case buf.Len()+len(f.Payload) > c.s.opts.MaxFrame:
		delete(c.texts, f.Task)
		c.mu.Unlock()
		c.statusError(f.Task, f.Seq, fmt.Sprintf("text task longer than %d bytes: dropped", c.s.opts.MaxFrame))
		return
	}
	buf.Write(f.Payload)
	c.mu.Unlock()
}

// end finishes a text task: the answer is prepared in the background.
func (c *conn) end(f Frame) {
	c.mu.Lock()
	buf := c.texts[f.Task]
	delete(c.texts, f.Task)
	if buf != nil {
		c.answering++ // counts against maxTextTasks until answered
	}
	c.mu.Unlock()
	if buf == nil {
		c.log().Debug("END of a task with no text", "task", f.Task)
		return
	}
	text := strings.ToValidUTF8(buf.String(), "\uFFFD")
	c.tasks.Add(1)
	go func() {
		defer c.tasks.Done()
		defer func() {
			c.mu.Lock()
			c.answering--
			c.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(c.ctx, c.s.opts.TextTimeout)
		defer cancel()
		answer := c.answer(ctx, f.Task, text)
		c.reply(f.Task, answer)
	}()
}

// reply sends answer as TEXT frames of task, numbered from 0, then END.
func (c *conn) reply(task, answer string) {
	answer = sanitizeText(answer)
	seq := 0
	for first := true; first || answer != ""; first = false {
		n := len(answer)
		if n > maxTextChunk {
			n = maxTextChunk
			for n > 0 && !utf8.RuneStart(answer[n]) {
				n--
			}
		}
		if c.write(Frame{Type: TypeText, Task: task, Seq: seq % 10000, Payload: []byte(answer[:n])}) != nil {
			return
		}
		answer = answer[n:]
		seq++
	}
	c.write(Frame{Type: TypeEnd, Task: task, Seq: seq % 10000, Payload: []byte{}})
}

// Shapes of sampling/createMessage (MCP 2025-11-25).
type (
	samplingMessage struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	createMessageParams struct {
		Messages     []samplingMessage `json:"messages"`
		SystemPrompt string            `json:"systemPrompt"`
		MaxTokens    int               `json:"maxTokens"`
		Tools        []json.RawMessage `json:"tools,omitempty"`
		ToolChoice   *toolChoice       `json:"toolChoice,omitempty"`
	}
	textBlock struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	toolChoice struct {
		Mode string `json:"mode"`
	}
	contentBlock struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	toolResultBlock struct {
		Type              string          `json:"type"`
		ToolUseID         string          `json:"toolUseId"`
		Content           json.RawMessage `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
		IsError           bool            `json:"isError,omitempty"`
	}
)

// answer asks the sampler for an answer to text, running the tools the
// model asks for (when the client can sample with tools) and feeding their
// results back until the model answers in text.
func (c *conn) answer(ctx context.Context, task, text string) string {
	sm := c.s.opts.Sampler
	if sm == nil {
		return noSamplerText
	}
	userText, _ := json.Marshal(textBlock{"text", text})
	p := createMessageParams{
		Messages:     []samplingMessage{{Role: "user", Content: userText}},
		SystemPrompt: systemPrompt,
		MaxTokens:    c.s.opts.MaxTokens,
	}
	if sm.SamplingTools() {
		c.mu.Lock()
		for _, s := range c.services {
			p.Tools = append(p.Tools, s.json)
		}
		c.mu.Unlock()
		if len(p.Tools) > 0 {
			p.ToolChoice = &toolChoice{Mode: "auto"}
		}
	}
	for round := 0; ; round++ {
		params, err := json.Marshal(p)
		if err != nil {
			return "Sorry, I cannot answer: " + err.Error()
		}
		raw, err := sm.CreateMessage(ctx, params)
		if errors.Is(err, ErrNoSampler) {
			return noSamplerText
		}
		if err != nil {
			c.log().Warn("sampling failed", "task", task, "error", err)
			return "Sorry, I cannot answer: the model's client failed: " + err.Error()
		}
		var res struct {
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(raw, &res); err != nil || len(res.Content) == 0 {
			return "Sorry, I cannot answer: the model's client sent a malformed result."
		}
		blocks, rawBlocks, err := parseContent(res.Content)
		if err != nil {
			return "Sorry, I cannot answer: the model's client sent a malformed result: " + err.Error()
		}
		var texts []string
		var uses []contentBlock
		for _, b := range blocks {
			switch b.Type {
			case "text":
				texts = append(texts, b.Text)
			case "tool_use":
				uses = append(uses, b)
			}
		}
		if len(uses) == 0 || len(p.Tools) == 0 {
			if a := strings.Join(texts, ""); a != "" {
				return a
			}
			return "Sorry, the model gave no answer."
		}
		if round >= maxToolRounds {
			return fmt.Sprintf("Sorry, I gave up: the model was still calling tools after %d rounds.", maxToolRounds)
		}
		assistant, _ := json.Marshal(rawBlocks)
		p.Messages = append(p.Messages, samplingMessage{Role: "assistant", Content: assistant})
		results := make([]toolResultBlock, len(uses))
		for i, u := range uses {
			results[i] = c.runToolUse(ctx, u)
		}
		user, _ := json.Marshal(results)
		p.Messages = append(p.Messages, samplingMessage{Role: "user", Content: user})
	}
}

// parseContent reads a sampling result's content: one block or an array.
func parseContent(raw json.RawMessage) ([]contentBlock, []json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	var rawBlocks []json.RawMessage
	if raw[0] == '[' {
		if err := json.Unmarshal(raw, &rawBlocks); err != nil {
			return nil, nil, err
		}
	} else {
		rawBlocks = []json.RawMessage{raw}
	}
	blocks := make([]contentBlock, len(rawBlocks))
	for i, rb := range rawBlocks {
		if err := json.Unmarshal(rb, &blocks[i]); err != nil {
			return nil, nil, err
		}
	}
	return blocks, rawBlocks, nil
}

// runToolUse runs one tool the model asked for and returns its result.
func (c *conn) runToolUse(ctx context.Context, u contentBlock) toolResultBlock {
	out := toolResultBlock{Type: "tool_result", ToolUseID: u.ID}
	fail := func(msg string) toolResultBlock {
		out.Content, _ = json.Marshal([]textBlock{{"text", msg}})
		out.IsError = true
		return out
	}
	// The model's calls reach the device without a client or the catalog:
	// the same default for absent arguments, and the same check.
	args := u.Input
	if len(bytes.TrimSpace(args)) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	svc, err := c.service(u.Name)
	if err != nil {
		return fail(err.Error())
	}
	if msg := svc.validate(args); msg != "" {
		return fail(msg)
	}
	res, err := c.call(ctx, u.Name, args)
	if err != nil {
		return fail(err.Error())
	}
	var r struct {
		Content           json.RawMessage `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return fail("malformed result: " + err.Error())
	}
	out.Content, out.StructuredContent, out.IsError = r.Content, r.StructuredContent, r.IsError
	return out
}
