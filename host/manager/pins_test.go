package manager

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/trust"
)

// TestPinnedDefinitionsHoldANewTool follows a plugin approved by its
// digest alone (as before definitions were pinned): its first listing is
// the baseline, so a tool it adds at runtime (through its change stream)
// is held back: not published, shown in PluginStatus.Held, reported to
// OnDefinition. Once its definitions are approved (pinned by Pin from
// Manager.Definitions, as plughost approve does), the tool is published
// without a restart.
func TestPinnedDefinitionsHoldANewTool(t *testing.T) {
	t.Parallel()
	dir, state := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "tp")
	copyFile(t, pluginV1, path, 0o755)
	trustFile := filepath.Join(state, "trust.json")
	digest := approveFile(t, trustFile, path)
	checker, err := trust.New(&trust.Options{Mode: trust.ModePinned, File: trustFile})
	if err != nil {
		t.Fatal(err)
	}
	defs := make(chan DefinitionEvent, 16)
	h := start(t, dir, Options{Trust: checker, OnDefinition: func(e DefinitionEvent) { defs <- e }})
	h.ready()
	e := h.expect("set", "tp")
	if _, err := call(t, e.p, "grow", ""); err != nil { // adds the tool "grown"
		t.Fatal(err)
	}
	var ev DefinitionEvent
	select {
	case ev = <-defs:
	case <-time.After(waitLong):
		t.Fatal("no definition event after the plugin added a tool")
	}
	if ev.Kind != trust.KindTool || ev.Name != "grown" || ev.State != DefPending || !ev.Held || ev.Digest != digest {
		t.Fatalf("definition event %+v", ev)
	}
	held := h.status("tp").Held
	if diff := cmp.Diff([]Held{{Kind: trust.KindTool, Name: "grown", State: DefPending, Listed: held[0].Listed}}, held); diff != "" {
		t.Fatalf("held (-want +got):\n%s", diff)
	}
	h.noEvent() // nothing new is published

	listed, ok := h.m.Definitions("tp")
	if !ok || !slices.ContainsFunc(listed, func(d trust.Definition) bool { return d.Key() == "tool/grown" }) {
		t.Fatalf("Definitions = %v, %v", listed, ok)
	}
	pins := map[string]trust.Pinned{}
	for _, d := range listed {
		if pins[d.Key()], err = trust.Pin(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := trust.Update(trustFile, func(f *trust.File) error {
		en := f.Plugins["tp"]
		en.Definitions = pins
		f.Plugins["tp"] = en
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e = h.expect("set", "tp")
	if !slices.Contains(e.tools, "grown") {
		t.Fatalf("published tools %v once approved", e.tools)
	}
	if ev := <-defs; ev.Name != "grown" || ev.State != DefApproved || ev.Held {
		t.Fatalf("definition event once approved: %+v", ev)
	}
	if held := h.status("tp").Held; held != nil {
		t.Fatalf("held once approved: %+v", held)
	}
}
