package config

import (
	"regexp"
	"testing"
)

// fileLine is how a diagnostic names its place: the file name, a colon and
// a line number (hcl writes "plughost.hcl:3,7-9: Summary; Detail").
var fileLine = regexp.MustCompile(`plughost\.hcl:[0-9]+`)

// FuzzParse: whatever a configuration file holds, Parse never panics, and
// every error it returns names the file and the line at fault, so an
// operator can find it. The seeds are one of each block; the corpus the
// fuzzer kept (testdata/fuzz/FuzzParse) replays in every `go test`.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"sandbox {\n  allow_read = [\"/usr/share/dict\"]\n  memory = \"256MiB\"\n  timeout = \"30s\"\n  env = [\"LANG\"]\n" +
			"  plugin \"files\" {\n    allow_write = [\"/srv/ws\"]\n    strict = true\n  }\n" +
			"  plugin \"fetch\" {\n    allow_net = [\"api.example.com:443\"]\n    cpu = 0.5\n    pids = 16\n  }\n}\n",
		"plugins {\n  start = \"lazy\"\n  idle_timeout = \"5m\"\n  plugin \"files\" {\n    start = \"eager\"\n  }\n}\n",
		"stateless {\n  state_key_file = \"state.key\"\n  state_ttl = \"15m\"\n}\n",
		"tasks {\n  ttl = \"1h\"\n  max_result_size = \"4MiB\"\n}\n",
		"search {\n  mode = \"auto\"\n  embeddings {\n    url = \"http://127.0.0.1:1/v1\"\n  }\n}\n",
		"sandbox {}\nsandbox {}\n",
		"memory = 1\n",
		"sandbox { memory = \"1TiB\" }\n",
		"sandbox { plugin \"x\" { cpu = -1 } }\n",
		"${",
		"\xff",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		_, err := Parse(src, "plughost.hcl")
		if err != nil && !fileLine.MatchString(err.Error()) {
			t.Fatalf("the error for %q names no file:line: %v", src, err)
		}
	})
}
