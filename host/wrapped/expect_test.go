package wrapped

import (
	"testing"

	"github.com/plughost/plughost/internal/pluginhost"
)

func TestExpectedCompare(t *testing.T) {
	l := pluginhost.ProxyLists{Tools: [][]byte{[]byte(`{"name":"a"}`), []byte(`{"name":"b"}`)}, Prompts: [][]byte{[]byte(`{"name":"p"}`)}}
	for _, c := range []struct {
		e    Expected
		want string
	}{
		{Expected{Tools: []string{"a", "b"}, Prompts: []string{"p"}}, ""},
		{Expected{Tools: []string{"b", "a"}}, ""}, // prompts not declared: not compared
		{Expected{Tools: []string{"a", "c"}}, "tools declared and not listed: c; tools listed and not declared: b"},
		{Expected{Prompts: []string{}}, ""}, // an empty list declares nothing either
		{Expected{Prompts: []string{"p", "q"}}, "prompts declared and not listed: q"},
	} {
		if got := c.e.compare(l); got != c.want {
			t.Errorf("%+v: %q, want %q", c.e, got, c.want)
		}
	}
}
