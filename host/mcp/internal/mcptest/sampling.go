package mcptest

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// A server request's params and a client's result for sampling tests:
// SamplingParams is what a server asks with; SamplingParamsNoTools is the
// same without tools, as a client that cannot take them receives it.
const (
	SamplingParams = `{"messages":[{"role":"user","content":{"type":"text","text":"What time is it?"}}],` +
		`"systemPrompt":"Be brief.","maxTokens":64,"tools":[{"name":"clock","inputSchema":{"type":"object"}}],"toolChoice":{"mode":"auto"}}`
	SamplingParamsNoTools = `{"messages":[{"role":"user","content":{"type":"text","text":"What time is it?"}}],` +
		`"systemPrompt":"Be brief.","maxTokens":64}`
	SamplingResult = `{"role":"assistant","content":{"type":"text","text":"Noon."},"model":"test-model","stopReason":"endTurn"}`
)

// Sampler is what asks a client's model: mcp.Server.CreateMessage.
type Sampler func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)

// Sampled is what a CreateMessage returned.
type Sampled struct {
	Res json.RawMessage
	Err error
}

// CreateMessage runs ask in the background.
func CreateMessage(ctx context.Context, ask Sampler, params string) <-chan Sampled {
	ch := make(chan Sampled, 1)
	go func() {
		res, err := ask(ctx, json.RawMessage(params))
		ch <- Sampled{res, err}
	}()
	return ch
}

// Wait returns what the CreateMessage of ch returned, failing the test
// after 10 seconds.
func Wait(t *testing.T, ch <-chan Sampled) Sampled {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("CreateMessage did not return")
		return Sampled{}
	}
}

// AskModel asks with SamplingParamsNoTools and returns the answering
// model's name.
func AskModel(t *testing.T, ask Sampler) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	raw, err := ask(ctx, json.RawMessage(SamplingParamsNoTools))
	if err != nil {
		t.Fatalf("CreateMessage: %v", err)
	}
	var res struct{ Model string }
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	return res.Model
}
