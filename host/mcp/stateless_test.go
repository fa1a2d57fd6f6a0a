package mcp

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/host/mcp/sealed"
)

const statelessMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

// askSurvey sends a stateless tools/call of the survey script (with
// extra params) and returns the one line the server answers.
func askSurvey(t *testing.T, c *client, id int, extra string) string {
	t.Helper()
	c.write(`{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":{"name":"survey",` + extra + statelessMeta + `}}`)
	c.settle()
	out := c.take()
	if len(out) != 1 {
		t.Fatalf("answer: %q, want one line", out)
	}
	return out[0]
}

// firstState runs the survey's first round and returns its requestState.
func firstState(t *testing.T, c *client) string {
	t.Helper()
	var r struct {
		Result struct {
			ResultType   string `json:"resultType"`
			RequestState string `json:"requestState"`
		} `json:"result"`
	}
	line := askSurvey(t, c, 1, "")
	if err := json.Unmarshal([]byte(line), &r); err != nil || r.Result.ResultType != "input_required" || r.Result.RequestState == "" {
		t.Fatalf("first round: %s, want an InputRequiredResult with a requestState", line)
	}
	return r.Result.RequestState
}

// TestRequestStateRefused: a requestState that expired, is too long, or
// was sealed by a server with another key is refused with -32602 naming
// why, and the provider is not run; a fresh one from this server's key
// goes through.
func TestRequestStateRefused(t *testing.T) {
	t.Parallel()
	answer := `"inputResponses":{"name":{"action":"accept","content":{"name":"Ada"}}},"requestState":`
	t.Run("expired", func(t *testing.T) {
		t.Parallel()
		c := newClient(t, clientOptions{stdio: true, server: Options{StateTTL: time.Millisecond}})
		state := firstState(t, c)
		time.Sleep(5 * time.Millisecond) // the state's lifetime passes: the point of the test
		runs := c.cat.ScriptRuns()
		line := askSurvey(t, c, 2, answer+`"`+state+`",`)
		if !strings.Contains(line, `"code":-32602`) || !strings.Contains(line, "has expired") {
			t.Errorf("an expired state: %s, want -32602 saying it expired", line)
		}
		if c.cat.ScriptRuns() != runs {
			t.Error("the provider ran with an expired state")
		}
	})
	t.Run("too long", func(t *testing.T) {
		t.Parallel()
		c := newClient(t, clientOptions{stdio: true})
		line := askSurvey(t, c, 2, answer+`"v1.`+strings.Repeat("A", sealed.MaxSealed)+`",`)
		if !strings.Contains(line, `"code":-32602`) || !strings.Contains(line, "longer than 131072 bytes") {
			t.Errorf("an oversized state: %s, want -32602 naming the limit", line)
		}
	})
	t.Run("another key", func(t *testing.T) {
		t.Parallel()
		a, err := sealed.New([]byte(strings.Repeat("a", 32)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := sealed.New([]byte(strings.Repeat("b", 32)))
		ca := newClient(t, clientOptions{stdio: true, server: Options{StateSealer: a}})
		cb := newClient(t, clientOptions{stdio: true, server: Options{StateSealer: b}})
		cb2 := newClient(t, clientOptions{stdio: true, server: Options{StateSealer: b}})
		state := firstState(t, ca)
		if line := askSurvey(t, cb, 2, answer+`"`+state+`",`); !strings.Contains(line, "fails the integrity check") {
			t.Errorf("a state sealed with another key: %s, want -32602", line)
		}
		// Replicas with one key open each other's states.
		state = firstState(t, cb)
		if line := askSurvey(t, cb2, 2, answer+`"`+state+`",`); !strings.Contains(line, `"resultType":"input_required"`) ||
			!strings.Contains(line, "favourite color") {
			t.Errorf("a state sealed by a replica with the same key: %s, want the second round", line)
		}
	})
}
