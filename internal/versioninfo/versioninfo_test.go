package versioninfo

import (
	"bytes"
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/plughost/plughost/host/pluginclient"
)

// TestFallbacks: the -X values win; without them the module version of a
// `go install …@version` and the VCS revision of a checkout build are
// used; without either, "dev" and "unknown".
func TestFallbacks(t *testing.T) {
	installed := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.0"}}
	checkout := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	for _, c := range []struct {
		name, version, commit   string
		bi                      *debug.BuildInfo
		wantVersion, wantCommit string
	}{
		{"release build", "v0.5.0", "fff000", checkout, "v0.5.0", "fff000"},
		{"go install", "dev", "", installed, "v0.4.0", "unknown"},
		{"checkout build", "dev", "", checkout, "dev", "abc123-dirty"},
		{"no build info", "dev", "", nil, "dev", "unknown"},
	} {
		got := fromBuild(c.version, c.commit, c.bi)
		if got.Version != c.wantVersion || got.Commit != c.wantCommit {
			t.Errorf("%s: version %q, commit %q; want %q, %q", c.name, got.Version, got.Commit, c.wantVersion, c.wantCommit)
		}
		if got.Contract != pluginclient.ContractVersion || got.OldestContract != pluginclient.OldestContractVersion || got.GoVersion == "" {
			t.Errorf("%s: %+v lacks the contract or Go versions", c.name, got)
		}
	}
}

// TestWrite: the text names every field; the JSON's field names are the
// command's interface.
func TestWrite(t *testing.T) {
	info := Info{Version: "v0.4.0", Commit: "abc123", GoVersion: "go1.26.8", Platform: "linux/arm64", Contract: 2, OldestContract: 1}
	var text bytes.Buffer
	if err := info.Write(&text, false); err != nil {
		t.Fatal(err)
	}
	want := "plughost v0.4.0\ncommit:          abc123\ngo:              go1.26.8\nplatform:        linux/arm64\n" +
		"plugin contract: 2 (loads plugins of contracts 1 to 2)\n"
	if text.String() != want {
		t.Errorf("text =\n%s\nwant\n%s", text.String(), want)
	}
	var js bytes.Buffer
	if err := info.Write(&js, true); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{"version": "v0.4.0", "commit": "abc123", "go_version": "go1.26.8", "platform": "linux/arm64",
		"plugin_contract": 2.0, "oldest_plugin_contract": 1.0} {
		if got[k] != v {
			t.Errorf("JSON %s = %v, want %v (all: %s)", k, got[k], v, strings.TrimSpace(js.String()))
		}
	}
}
