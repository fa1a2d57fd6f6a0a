package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/mcp"
)

// newObserver's rules: metrics with --http or --metrics-listen, the latter
// on loopback unless --metrics-public; the audit log from the flags, else
// the configuration's audit block; --audit-arguments needs a file.
func TestNewObserver(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flagFile, blockFile := filepath.Join(dir, "flag.jsonl"), filepath.Join(dir, "block.jsonl")
	tests := map[string]struct {
		f        ObserveOptions
		block    *config.Audit
		http     bool
		metrics  bool
		audit    string // the file written, "" for none
		withArgs bool
		err      string
	}{
		"nothing":               {},
		"http has metrics":      {http: true, metrics: true},
		"metrics listener":      {f: ObserveOptions{MetricsListen: "127.0.0.1:0"}, metrics: true},
		"beyond loopback":       {f: ObserveOptions{MetricsListen: "0.0.0.0:9464"}, err: "reachable from other machines"},
		"beyond, public":        {f: ObserveOptions{MetricsListen: "0.0.0.0:0", MetricsPublic: true}, metrics: true},
		"audit flag":            {f: ObserveOptions{AuditLog: flagFile}, audit: flagFile},
		"audit block":           {block: &config.Audit{File: blockFile, Arguments: true}, audit: blockFile, withArgs: true},
		"flag wins":             {f: ObserveOptions{AuditLog: flagFile}, block: &config.Audit{File: blockFile, Arguments: true}, audit: flagFile},
		"arguments flag":        {f: ObserveOptions{AuditArgs: true}, block: &config.Audit{File: blockFile}, audit: blockFile, withArgs: true},
		"arguments without log": {f: ObserveOptions{AuditArgs: true}, err: "--audit-arguments needs --audit-log"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o, err := newObserver(&tc.f, tc.block, tc.http, hclog.NewNullLogger())
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer o.close()
			if (o.metrics != nil) != tc.metrics {
				t.Errorf("metrics on: %v, want %v", o.metrics != nil, tc.metrics)
			}
			if (o.audit != nil) != (tc.audit != "") {
				t.Fatalf("audit on: %v, want %v", o.audit != nil, tc.audit != "")
			}
			if tc.audit == "" {
				return
			}
			before, _ := os.ReadFile(tc.audit)
			o.onCallEnd()(&mcp.CallEnd{Tool: "echo", Outcome: mcp.OutcomeOK, Arguments: []byte(`{"a":1}`)})
			after, err := os.ReadFile(tc.audit)
			if err != nil {
				t.Fatal(err)
			}
			line := string(after[len(before):])
			if got := strings.Contains(line, `"arguments":{"a":1}`); got != tc.withArgs {
				t.Errorf("line %q: arguments in it %v, want %v", line, got, tc.withArgs)
			}
		})
	}
}
