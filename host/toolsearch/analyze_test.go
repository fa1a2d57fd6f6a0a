package toolsearch

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAnalyzer(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		a    analyzer
		text string
		want []string
	}{
		"snake_case": {defaultAnalyzer, "get_current_time", []string{"get", "current", "time"}},
		"camelCase, kept whole too": {defaultAnalyzer, "getCurrentTime",
			[]string{"get", "current", "getcurrenttim", "time"}},
		"kebab and dots":    {defaultAnalyzer, "list-component.examples", []string{"list", "compon", "exampl"}},
		"acronym then word": {defaultAnalyzer, "HTMLParser", []string{"html", "htmlparser", "parser"}},
		"a brand":           {defaultAnalyzer, "papers on arXiv", []string{"paper", "ar", "arxiv", "xiv"}},
		"digits stay with letters": {defaultAnalyzer, "base64 mp3 get-36kr-trending",
			[]string{"base64", "mp3", "get", "36kr", "trend"}},
		"stop words and one letter": {defaultAnalyzer, "I'm saving the files to a disk",
			[]string{"save", "file", "disk"}},
		"stemming":          {defaultAnalyzer, "searches searching searched", []string{"search", "search", "search"}},
		"Han bigrams":       {defaultAnalyzer, "使用必应搜索", []string{"使用", "用必", "必应", "应搜", "搜索"}},
		"one Han character": {defaultAnalyzer, "汤 soup", []string{"汤", "soup"}},
		"Han next to Latin": {defaultAnalyzer, "获取36氪热榜", []string{"获取", "36", "氪热", "热榜"}},
		"nothing on: identifiers whole": {analyzer{}, "get_current_time, the getTime.",
			[]string{"get_current_time", "the", "gettime"}},
		"nothing on: Han run whole": {analyzer{}, "必应搜索", []string{"必应搜索"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, tt.a.terms(nil, tt.text)); diff != "" {
				t.Errorf("terms(%q) (-want +got):\n%s", tt.text, diff)
			}
		})
	}
}

func TestReadTool(t *testing.T) {
	t.Parallel()
	def := `{
		"name": "create_event",
		"title": "Create event",
		"description": "Adds an event to a calendar.",
		"annotations": {"title": "New event"},
		"inputSchema": {"type": "object", "properties": {
			"when": {"type": "string", "description": "Start time"},
			"attendees": {"type": "array", "items": {"type": "object", "properties": {
				"email": {"type": "string", "title": "Email address"},
				"deep": {"type": "object", "properties": {"tooDeep": {"description": "not read"}}}
			}}},
			"where": {"anyOf": [{"type": "object", "properties": {"room": {"description": "Room name"}}}]}
		}}
	}`
	tt, err := readTool(json.RawMessage(def))
	if err != nil {
		t.Fatal(err)
	}
	want := toolText{name: "create_event", fields: [nFields][]string{
		fName:  {"create_event"},
		fTitle: {"Create event", "New event"},
		fDesc:  {"Adds an event to a calendar."},
		// Depth 3 reaches the fields of an array's objects, not one
		// object deeper.
		fParams: {"attendees", "deep", "email", "Email address", "when", "Start time", "where", "room", "Room name"},
	}}
	if diff := cmp.Diff(want, tt, cmp.AllowUnexported(toolText{})); diff != "" {
		t.Errorf("readTool (-want +got):\n%s", diff)
	}

	for name, bad := range map[string]string{
		"not JSON":      `{"name": `,
		"not an object": `["x"]`,
		"no name":       `{"description": "d"}`,
		"name a number": `{"name": 3}`,
	} {
		if _, err := readTool(json.RawMessage(bad)); err == nil {
			t.Errorf("%s: readTool(%s) succeeded", name, bad)
		}
	}
}
