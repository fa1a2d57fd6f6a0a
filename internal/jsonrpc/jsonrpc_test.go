package jsonrpc

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	type want struct {
		Kind               Kind
		ID, Method, Params string
		Result, Error      string
		ErrCode            int
		ErrMsg, ErrID      string
	}
	tests := map[string]struct {
		in   string
		want want
	}{
		"request": {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
			want{Kind: Request, ID: "1", Method: "tools/call", Params: `{"name":"x"}`}},
		"string id, spaces": {` { "jsonrpc" : "2.0" , "id" : "a" , "method" : "ping" } `,
			want{Kind: Request, ID: `"a"`, Method: "ping"}},
		"notification": {`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			want{Kind: Notification, Method: "notifications/initialized"}},
		"escaped method": {`{"jsonrpc":"2.0","id":2,"method":"tools\/list"}`,
			want{Kind: Request, ID: "2", Method: "tools/list"}},
		"response": {`{"jsonrpc":"2.0","id":"p-1","result":{}}`,
			want{Kind: Response, ID: `"p-1"`, Result: "{}"}},
		"error response": {`{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}`,
			want{Kind: Response, ID: "3", Error: `{"code":-1,"message":"no"}`}},
		"not an object": {`[1]`,
			want{ErrCode: CodeInvalidRequest, ErrMsg: "invalid request: a message must be a JSON object"}},
		"duplicate id": {`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`,
			want{ID: "2", ErrCode: CodeInvalidRequest, ErrMsg: `invalid request: duplicate member "id"`}},
		"null id": {`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
			want{ID: "null", ErrCode: CodeInvalidRequest, ErrMsg: "invalid request: id must be a string or an integer"}},
		"fractional id": {`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
			want{ID: "1.5", ErrCode: CodeInvalidRequest, ErrMsg: "invalid request: id must be a string or an integer"}},
		"wrong version": {`{"jsonrpc":"1.0","id":7,"method":"ping"}`,
			want{ID: "7", ErrCode: CodeInvalidRequest, ErrMsg: `invalid request: "jsonrpc" must be "2.0"`, ErrID: "7"}},
		"missing method": {`{"jsonrpc":"2.0","id":7}`,
			want{ID: "7", ErrCode: CodeInvalidRequest, ErrMsg: "invalid request: missing method", ErrID: "7"}},
		"method not a string": {`{"jsonrpc":"2.0","id":7,"method":5}`,
			want{ID: "7", ErrCode: CodeInvalidRequest, ErrMsg: "invalid request: method must be a string", ErrID: "7"}},
		"params not an object": {`{"jsonrpc":"2.0","id":7,"method":"ping","params":[]}`,
			want{ID: "7", Params: "[]", ErrCode: CodeInvalidParams, ErrMsg: "invalid params: params must be an object", ErrID: "7"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in := []byte(tt.in)
			if perr := Check(in); perr != nil {
				t.Fatalf("Check: %v", perr)
			}
			m, err := Decode(in)
			got := want{Kind: m.Kind, ID: string(m.ID), Method: string(m.Method), Params: string(m.Params),
				Result: string(m.Result), Error: string(m.Error)}
			if err != nil {
				got.Kind, got.ErrCode, got.ErrMsg, got.ErrID = Invalid, err.Code, err.Message, string(err.ID)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("Decode(%s) (-want +got):\n%s", tt.in, d)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"a":1}`:          "",
		`{"a":`:            "parse error: invalid JSON",
		"\"\xff\"":         "parse error: invalid UTF-8",
		`[{"a":1},2]`:      "",
		"{\"a\":\"\xc3\"}": "parse error: invalid UTF-8",
	} {
		got := ""
		if e := Check([]byte(in)); e != nil {
			got = e.Message
			if e.Code != CodeParseError {
				t.Errorf("Check(%q) code = %d", in, e.Code)
			}
		}
		if got != want {
			t.Errorf("Check(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestElements(t *testing.T) {
	t.Parallel()
	got := Elements([]byte(` [ {"a":[1,2]} , "x,y" ,3,{} ] `))
	want := []string{`{"a":[1,2]}`, `"x,y"`, "3", "{}"}
	if d := cmp.Diff(want, toStrings(got)); d != "" {
		t.Errorf("Elements (-want +got):\n%s", d)
	}
	if got := Elements([]byte("[ ]")); len(got) != 0 {
		t.Errorf("Elements of an empty array = %q", got)
	}
}

func toStrings(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

func TestIDKey(t *testing.T) {
	t.Parallel()
	same := [][2]string{{`"a"`, `"\u0061"`}, {"0", "-0"}, {"12", "12"}}
	for _, p := range same {
		if IDKey([]byte(p[0])) != IDKey([]byte(p[1])) {
			t.Errorf("IDKey(%s) != IDKey(%s)", p[0], p[1])
		}
	}
	if IDKey([]byte(`"1"`)) == IDKey([]byte("1")) {
		t.Error(`IDKey("1") == IDKey(1): a string id must never equal an integer`)
	}
}

func TestMember(t *testing.T) {
	t.Parallel()
	obj := []byte(`{"a":1,"b":{"c":[1,"}"]},"\u0061":2}`)
	if got := string(Member(obj, "a")); got != "2" {
		t.Errorf(`Member(a) = %s, want the last one, 2`, got)
	}
	if got := string(Member(obj, "b")); got != `{"c":[1,"}"]}` {
		t.Errorf(`Member(b) = %s`, got)
	}
	if Member(obj, "z") != nil || Member(nil, "a") != nil || Member([]byte("[1]"), "a") != nil {
		t.Error("Member of something absent is not nil")
	}
}

func TestAppend(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		got  []byte
		want string
		kind Kind
	}{
		"result":       {AppendResult(nil, []byte("1"), []byte(`{"x":1}`)), `{"jsonrpc":"2.0","id":1,"result":{"x":1}}`, Response},
		"error":        {AppendError(nil, nil, NewError(CodeParseError, `bad "x"`)), `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad \"x\""}}`, Response},
		"error + data": {AppendError(nil, []byte(`"a"`), &Error{Code: -32029, Message: "slow", Data: []byte(`{"retryAfterMs": 5}`)}), `{"jsonrpc":"2.0","id":"a","error":{"code":-32029,"message":"slow","data":{"retryAfterMs": 5}}}`, Response},
		"notification": {AppendNotification(nil, "notifications/tools/list_changed", nil), `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, Notification},
		"with params":  {AppendNotification(nil, "n", []byte(`{"a":1}`)), `{"jsonrpc":"2.0","method":"n","params":{"a":1}}`, Notification},
		"request":      {AppendRequest(nil, []byte(`"p-1"`), "sampling/createMessage", []byte(`{}`)), `{"jsonrpc":"2.0","id":"p-1","method":"sampling/createMessage","params":{}}`, Request},
		"batch":        {[]byte(`[{"jsonrpc":"2.0","id":1,"result":{}}]`), `[{"jsonrpc":"2.0","id":1,"result":{}}]`, Response},
		"without":      {AppendObjectWithout(nil, []byte(`{"a":1, "tools":[], "b":{"c" : 2}}`), "tools"), `{"a":1,"b":{"c" : 2}}`, Invalid},
	}
	for name, tt := range tests {
		if string(tt.got) != tt.want {
			t.Errorf("%s: got %s, want %s", name, tt.got, tt.want)
		}
		if !json.Valid(tt.got) {
			t.Errorf("%s: not valid JSON: %s", name, tt.got)
		}
		if k := Classify(tt.got); k != tt.kind {
			t.Errorf("%s: Classify = %v, want %v", name, k, tt.kind)
		}
	}
}

func TestAppendObject(t *testing.T) {
	t.Parallel()
	if got, ok := AppendObject(nil, []byte(" {\"a\":\n1} ")); !ok || string(got) != `{"a":1}` {
		t.Errorf("AppendObject compacts line breaks: got %q, %v", got, ok)
	}
	if got, ok := AppendObject([]byte("x"), []byte(`[1]`)); ok || string(got) != "x" {
		t.Errorf("AppendObject of an array: got %q, %v", got, ok)
	}
	if got, ok := AppendObject(nil, []byte("{\"a\":\n")); ok || len(got) != 0 {
		t.Errorf("AppendObject of broken JSON with a line break: got %q, %v", got, ok)
	}
}

// FuzzDecode: whatever passes Check, Decode never panics, and what it
// returns agrees with encoding/json's reading of the same bytes.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a\u0062"}}`,
		`{"jsonrpc":"2.0","id":"x","result":{"content":[]}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]`,
		`{"jsonrpc":"2.0","id":-0,"method":"\u0070ing","params":{"a":[{"b":"]}"}]}}`,
		`{}`, `[]`, `"x"`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if Check(b) != nil {
			return
		}
		msgs := [][]byte{b}
		if IsBatch(b) {
			msgs = Elements(b)
			var arr []json.RawMessage
			if err := json.Unmarshal(b, &arr); err != nil || len(arr) != len(msgs) {
				t.Fatalf("Elements gave %d elements of %s, encoding/json %d (%v)", len(msgs), b, len(arr), err)
			}
		}
		for _, msg := range msgs {
			checkDecode(t, msg)
		}
	})
}

func checkDecode(t *testing.T, msg []byte) {
	m, err := Decode(msg)
	var generic map[string]json.RawMessage
	isObj := json.Unmarshal(msg, &generic) == nil
	if !isObj {
		if err == nil {
			t.Fatalf("Decode accepted a non-object: %s", msg)
		}
		return
	}
	if err != nil {
		if err.ID != nil && !ValidID(err.ID) {
			t.Fatalf("error answers with an invalid id %s", err.ID)
		}
		return
	}
	if m.Kind == Request || m.Kind == Notification {
		var method string
		if json.Unmarshal(generic["method"], &method) != nil || method != string(m.Method) {
			t.Fatalf("method %q, encoding/json reads %s", m.Method, generic["method"])
		}
		if m.Params != nil && !IsObject(m.Params) {
			t.Fatalf("params %s is not an object", m.Params)
		}
	}
	if (m.Kind == Request) != (m.ID != nil && m.Method != nil) {
		t.Fatalf("kind %v with id %s and method %q", m.Kind, m.ID, m.Method)
	}
	if m.ID != nil && m.Kind != Response {
		_ = IDKey(m.ID)
		out := AppendResult(nil, m.ID, []byte("{}"))
		if !json.Valid(out) || Classify(out) != Response {
			t.Fatalf("response to id %s is broken: %s", m.ID, out)
		}
	}
	for k, v := range Members(m.Params) {
		if !json.Valid(k) || !json.Valid(v) {
			t.Fatalf("member %s: %s of params %s", k, v, m.Params)
		}
	}
}

// FuzzAppendString: every Go string becomes a JSON string that reads back
// as itself (invalid UTF-8 as encoding/json replaces it).
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote \" and \\", "line\nbreak", "ünï", "\xff", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("AppendString(%q) = %s: %v", s, b, err)
		}
		want, _ := json.Marshal(s)
		var wantBack string
		_ = json.Unmarshal(want, &wantBack)
		if back != wantBack || strings.ContainsAny(string(b), "\n\r") {
			t.Fatalf("AppendString(%q) = %s reads back %q", s, b, back)
		}
	})
}

// AppendJSON never writes bytes that are not UTF-8: inside a string they
// become U+FFFD (found by FuzzSession: a plugin's log data).
func TestAppendJSONInvalidUTF8(t *testing.T) {
	t.Parallel()
	got, ok := AppendJSON(nil, []byte("{\"\xe3\":\"a\xffb\"}"))
	if want := "{\"\uFFFD\":\"a\uFFFDb\"}"; !ok || string(got) != want {
		t.Errorf("AppendJSON = %q, %v; want %q", got, ok, want)
	}
}
