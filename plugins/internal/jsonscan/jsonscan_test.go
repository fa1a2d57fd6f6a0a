package jsonscan

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestWalkReportsValuesWithPathsAndKeys(t *testing.T) {
	doc := []byte(`{"a":"x","b":[1,"y",{"c d":"z\n"}],"n":null,"t":true}`)
	var got []string
	err := Walk(doc, false, func(s *String) error {
		got = append(got, s.Path()+"="+s.Value+"|"+s.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`$.a=x|a`, `$.b[1]=y|`, `$.b[2]["c d"]=z` + "\n" + `|c d`}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestWalkReportsMemberNamesWhenAsked(t *testing.T) {
	var keys []string
	err := Walk([]byte(`{"outer":{"inner":"v"}}`), true, func(s *String) error {
		if s.IsKey {
			keys = append(keys, s.Path()+":"+s.Value)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(keys, ","); got != "$.outer:outer,$.outer.inner:inner" {
		t.Fatalf("keys %s", got)
	}
}

func TestWalkRefusesInvalidJSON(t *testing.T) {
	err := Walk([]byte(`{"a":`), false, func(*String) error { return nil })
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
}

func TestApplyKeepsEveryOtherByte(t *testing.T) {
	doc := []byte(`{ "z": "keep",  "a": "se\"cret", "n": 1.50 }`)
	var edits []Edit
	_ = Walk(doc, false, func(s *String) error {
		if s.Key == "a" {
			edits = append(edits, Edit{s.Start, s.End, "[gone]"})
		}
		return nil
	})
	got := string(Apply(doc, edits))
	if want := `{ "z": "keep",  "a": "[gone]", "n": 1.50 }`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if !json.Valid([]byte(got)) {
		t.Fatal("invalid result")
	}
}

func TestBinaryContent(t *testing.T) {
	doc := []byte(`{"content":[{"type":"image","data":"QUJD"},{"type":"resource","resource":{"uri":"x","blob":"QUJD"}},{"type":"text","text":"t"}],` +
		`"structuredContent":{"data":"kept"}}`)
	var binary, text []string
	_ = Walk(doc, false, func(s *String) error {
		if s.BinaryContent() {
			binary = append(binary, s.Path())
		} else {
			text = append(text, s.Path())
		}
		return nil
	})
	if got := strings.Join(binary, ","); got != "$.content[0].data,$.content[1].resource.blob" {
		t.Fatalf("binary %s", got)
	}
	if !strings.Contains(strings.Join(text, ","), "$.structuredContent.data") {
		t.Fatalf("text %s", text)
	}
}

// Walk decodes every escape as encoding/json does.
func TestWalkDecodesEscapesAsEncodingJSON(t *testing.T) {
	for _, tok := range []string{`"a\"b\\c\/d"`, `"\b\f\n\r\t"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00 smile"`, `"lone \ud83d here"`, `"\u0041\u0000"`} {
		var want string
		if err := json.Unmarshal([]byte(tok), &want); err != nil {
			t.Fatal(err)
		}
		var got string
		if err := Walk([]byte(`{"k":`+tok+`}`), false, func(s *String) error { got = s.Value; return nil }); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", tok, got, want)
		}
	}
}
