package manager

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/host/trust"
)

// TestPinnedDefinitionsHoldANewTool follows a plugin whose trust pins no
// definitions: approved by its digest alone (as before definitions were
// pinned), or signed (no approval at all). Its first listing is the
// baseline, so a tool it adds at runtime (through its change stream) is
// held back: not published, shown in PluginStatus.Held, reported to
// OnDefinition. Once its definitions are approved (pinned by Pin from
// Manager.Definitions, as plughost approve does), the tool is published
// without a restart.
func TestPinnedDefinitionsHoldANewTool(t *testing.T) {
	t.Parallel()
	tests := map[string]func(t *testing.T, path, trustFile string) *trust.Options{
		"pinned, approved by digest": func(t *testing.T, path, trustFile string) *trust.Options {
			approveFile(t, trustFile, path)
			return &trust.Options{Mode: trust.ModePinned, File: trustFile}
		},
		"signed": func(t *testing.T, path, trustFile string) *trust.Options {
			keys := t.TempDir()
			key := filepath.Join(keys, "author")
			sshKeygen(t, "-q", "-t", "ed25519", "-N", "", "-C", "author", "-f", key)
			pub, err := os.ReadFile(key + ".pub")
			if err != nil {
				t.Fatal(err)
			}
			signers := filepath.Join(keys, "allowed_signers")
			if err := os.WriteFile(signers, []byte("author@example.com "+string(pub)), 0o600); err != nil {
				t.Fatal(err)
			}
			sshKeygen(t, "-Y", "sign", "-f", key, "-n", trust.Namespace, path)
			return &trust.Options{Mode: trust.ModeSigned, AllowedSigners: signers, File: trustFile}
		},
	}
	for name, setup := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir, state := t.TempDir(), t.TempDir()
			path := filepath.Join(dir, "tp")
			copyFile(t, pluginV1, path, 0o755)
			trustFile := filepath.Join(state, "trust.json")
			checker, err := trust.New(setup(t, path, trustFile))
			if err != nil {
				t.Fatal(err)
			}
			digest, _ := trust.Digest(path)
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
			// The same tools are published again, by a provider that says
			// why it withholds the new one (a call of it gets that, not
			// "unknown tool").
			e = h.expect("set", "tp")
			if slices.Contains(e.tools, "grown") {
				t.Fatalf("the held tool is published: %v", e.tools)
			}
			const why = "tool grown of plugin tp is new since its approval; held until `plughost approve tp` (plughost plugins --diff tp)"
			if got := e.p.(tool.Withholder).WithheldTool("grown"); got != why {
				t.Fatalf("WithheldTool(grown) = %q, want %q", got, why)
			}

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
				f.Plugins["tp"] = trust.Entry{Digest: digest, ApprovedAt: time.Now().UTC(), Definitions: pins}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			e = h.expect("set", "tp")
			if !slices.Contains(e.tools, "grown") {
				t.Fatalf("published tools %v once approved", e.tools)
			}
			select {
			case ev = <-defs:
			case <-time.After(waitLong):
				t.Fatal("no definition event once approved")
			}
			if ev.Name != "grown" || ev.State != DefApproved || ev.Held {
				t.Fatalf("definition event once approved: %+v", ev)
			}
			if held := h.status("tp").Held; held != nil {
				t.Fatalf("held once approved: %+v", held)
			}
		})
	}
}

// TestPinnedDefinitionsServeTheApprovedForm: of a plugin whose approval
// pins other definitions than it lists, clients are served each
// approved definition as approved, and its requests (a call, a prompt
// get, a read) are refused naming how to approve it; a definition whose
// approval kept only its pin, and one never approved, are not served.
func TestPinnedDefinitionsServeTheApprovedForm(t *testing.T) {
	t.Parallel()
	dir, state := t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "tp")
	copyFile(t, pluginV1, path, 0o755)
	trustFile := filepath.Join(state, "trust.json")
	approveFile(t, trustFile, path)
	checker, err := trust.New(&trust.Options{Mode: trust.ModePinned, File: trustFile})
	if err != nil {
		t.Fatal(err)
	}
	h := start(t, dir, Options{Trust: checker})
	h.ready()
	h.expect("set", "tp")
	listed, ok := h.m.Definitions("tp")
	if !ok {
		t.Fatal("no definitions listed")
	}

	// The approval: pid, greet and test://doc as they were "before" (with
	// a description), test://item/{id} by its pin alone, variant_v1 as
	// listed, nothing else.
	before := func(d trust.Definition) trust.Definition {
		var m map[string]any
		if err := json.Unmarshal(d.JSON, &m); err != nil {
			t.Fatal(err)
		}
		m["description"] = "As approved."
		d.JSON, _ = json.Marshal(m)
		return d
	}
	pins := map[string]trust.Pinned{}
	for _, d := range listed {
		switch d.Key() {
		case "tool/pid", "prompt/greet", "resource/test://doc", "template/test://item/{id}":
			d = before(d)
		case "tool/variant_v1":
		default:
			continue
		}
		p, err := trust.Pin(d)
		if err != nil {
			t.Fatal(err)
		}
		if d.Kind == trust.KindTemplate {
			p.Definition = nil
		}
		pins[d.Key()] = p
	}
	if len(pins) != 5 {
		t.Fatalf("pins %v of %v", pins, listed)
	}
	if err := trust.Update(trustFile, func(f *trust.File) error {
		e := f.Plugins["tp"]
		e.Definitions = pins
		f.Plugins["tp"] = e
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e := h.expect("set", "tp")
	if diff := cmp.Diff([]string{"pid", "variant_v1"}, e.tools); diff != "" {
		t.Fatalf("published tools (-want +got):\n%s", diff)
	}
	srv := e.p.(tool.Server)
	descriptions := map[string]string{}
	for _, d := range srv.Tools() {
		descriptions["tool/"+d.Name] = description(t, d.JSON)
	}
	for _, d := range srv.Prompts() {
		descriptions["prompt/"+d.Name] = description(t, d.JSON)
	}
	for _, d := range srv.Resources() {
		descriptions["resource/"+d.URI] = description(t, d.JSON)
	}
	want := map[string]string{"tool/pid": "As approved.", "tool/variant_v1": "", "prompt/greet": "As approved.", "resource/test://doc": "As approved."}
	if diff := cmp.Diff(want, descriptions); diff != "" {
		t.Fatalf("served descriptions (-want +got):\n%s", diff)
	}
	if len(srv.Templates()) != 0 {
		t.Fatalf("the template approved by its pin alone is served: %v", srv.Templates())
	}

	ctx := t.Context()
	refusals := map[string]func() error{
		"tool pid": func() error { _, err := call(t, e.p, "pid", ""); return err },
		"prompt greet": func() error {
			_, err := srv.GetPrompt(ctx, &tool.PromptGet{Name: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
			return err
		},
		"resource test://doc": func() error { _, err := srv.ReadResource(ctx, &tool.Read{URI: "test://doc"}); return err },
	}
	for what, do := range refusals {
		err := do()
		wantErr := what + " of plugin tp changed since it was approved; held until `plughost approve tp` (plughost plugins --diff tp)"
		if !errors.Is(err, tool.ErrRefused) || err.Error() != wantErr {
			t.Errorf("%s: %v, want %q", what, err, wantErr)
		}
	}
	if out, err := call(t, e.p, "variant_v1", ""); err != nil || out != "v1" {
		t.Errorf("variant_v1, served as approved: %q, %v", out, err)
	}

	var states []string
	for _, hd := range h.status("tp").Held {
		states = append(states, hd.Kind+" "+hd.Name+" "+string(hd.State))
	}
	if !slices.Contains(states, "tool pid changed") || !slices.Contains(states, "resource template test://item/{id} changed") ||
		!slices.Contains(states, "tool stdin pending") {
		t.Errorf("held: %v", states)
	}
}

// description is a definition's description.
func description(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var d struct{ Description string }
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	return d.Description
}

// TestPinnedDefinitionsFromTheCache: a plugin published from its catalog
// cache entry, before any process of it runs, is vetted as a listing is:
// only what is approved is published, and the holds are announced.
func TestPinnedDefinitionsFromTheCache(t *testing.T) {
	t.Parallel()
	dir, cacheDir, state := t.TempDir(), t.TempDir(), t.TempDir()
	path := filepath.Join(dir, "tp")
	copyFile(t, pluginV1, path, 0o755)
	h := start(t, dir, Options{CacheDir: cacheDir})
	h.ready()
	h.expect("set", "tp") // ran once, in mode open: its entry is written
	listed, _ := h.m.Definitions("tp")
	h.stop()

	trustFile := filepath.Join(state, "trust.json")
	approveFile(t, trustFile, path)
	pins := map[string]trust.Pinned{}
	for _, d := range listed {
		if d.Key() == "tool/pid" {
			var err error
			if pins[d.Key()], err = trust.Pin(d); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := trust.Update(trustFile, func(f *trust.File) error {
		e := f.Plugins["tp"]
		e.Definitions = pins
		f.Plugins["tp"] = e
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	checker, err := trust.New(&trust.Options{Mode: trust.ModePinned, File: trustFile})
	if err != nil {
		t.Fatal(err)
	}
	defs := make(chan DefinitionEvent, 64)
	h = start(t, dir, Options{CacheDir: cacheDir, Start: StartLazy, Trust: checker, OnDefinition: func(e DefinitionEvent) { defs <- e }})
	h.ready()
	e := h.expect("set", "tp")
	if diff := cmp.Diff([]string{"pid"}, e.tools); diff != "" {
		t.Fatalf("tools published from the cache (-want +got):\n%s", diff)
	}
	if st := h.status("tp"); st.State != StateIdle || len(st.Held) == 0 {
		t.Fatalf("status: %+v", st)
	}
	select {
	case ev := <-defs:
		if ev.State != DefPending || !ev.Held {
			t.Fatalf("definition event %+v", ev)
		}
	case <-time.After(waitLong):
		t.Fatal("the holds of the cached listing were not announced")
	}
}
