package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/pluginclient"
)

// TestVersionCommand: `plughost version --json` names the version the
// build gave and the contract versions the host loads; a stray argument
// is a usage error.
func TestVersionCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"version", "--json"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("plughost version --json: status %d, %s", code, errOut.String())
	}
	var got struct {
		Version        string `json:"version"`
		Contract       uint32 `json:"plugin_contract"`
		OldestContract uint32 `json:"oldest_plugin_contract"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	if got.Version != version || got.Contract != pluginclient.ContractVersion || got.OldestContract != pluginclient.OldestContractVersion {
		t.Errorf("plughost version --json = %s", out.String())
	}
	errOut.Reset()
	if code := run([]string{"version", "extra"}, nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), `"extra"`) {
		t.Errorf("plughost version extra: status %d, %q; want 2 naming the argument", code, errOut.String())
	}
}
