package manager

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/override"
	"github.com/plughost/plughost/host/trust"
)

// TestOverridesAfterHooks: the operator's overrides change what is
// served, after the hooks judged the plugin's own text (a hook's rewrite
// included); an override of another plugin changes nothing; the status
// shows each change beside the plugin's text.
func TestOverridesAfterHooks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyFile(t, pluginV1, filepath.Join(dir, "tp"), 0o755)
	hooks := &fakeHooks{hookPlugin: "guard", rewrite: "pid"}
	hooks.ready.Store(true)
	ours := "The process id, as the operator says."
	set := override.New([]config.Override{
		{Kind: override.Tool, Name: "pid", Description: &ours, Annotations: map[string]any{"readOnlyHint": true}},
		{Kind: override.Tool, Name: "env", Plugin: "other", Description: &ours},
	})
	h := start(t, dir, Options{Hooks: hooks, Overrides: set})
	h.ready()
	e := h.expect("set", "tp")
	for _, d := range e.p.Tools() {
		switch d.Name {
		case "pid":
			if got := description(t, d.JSON); got != ours {
				t.Errorf("pid is served described %q, want the override's", got)
			}
		case "env":
			if got := description(t, d.JSON); got == ours {
				t.Error("env is served with the override of another plugin")
			}
		}
	}
	st := h.status("tp")
	if len(st.Overridden) != 1 {
		t.Fatalf("overridden = %+v, want pid only", st.Overridden)
	}
	o := st.Overridden[0]
	if o.Kind != trust.KindTool || o.Name != "pid" || !slices.Equal(o.Members, []string{"description", "annotations.readOnlyHint"}) {
		t.Errorf("overridden = %+v", o)
	}
	// The plugin's text as the hooks left it: their rewrite, not the override.
	if got := description(t, o.Plugin); got != "rewritten by scan" {
		t.Errorf("the plugin's text of pid is described %q, want the hook's rewrite", got)
	}
	// The pins keep the plugin's text: what it lists.
	listed, _ := h.m.Definitions("tp")
	for _, d := range listed {
		if d.Name == "pid" && description(t, d.JSON) == ours {
			t.Error("Definitions (what approve pins) carries the override")
		}
	}
}
