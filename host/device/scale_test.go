package device

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/catalog"
	"github.com/plughost/plughost/host/tool"
)

// TestManyDevices: 200 devices at once, each registering 5 tools. The
// catalog lists all 1000, the registrations reach subscribers as a few
// coalesced events, and every call reaches the device that offers the tool.
//
// The devices authenticate first and register together when all have; the
// catalog waits 2 s of quiet (not the default 50 ms) so that a loaded
// machine's scheduling gaps between registrations do not end a burst: what
// is asserted is that the bridge's registrations go through the catalog's
// coalescing, not how fast 200 goroutines run.
func TestManyDevices(t *testing.T) {
	t.Parallel()
	const devices, perDevice = 200, 5
	cat := catalog.New(&catalog.Options{Logger: hclog.NewNullLogger(), Quiet: 2 * time.Second, MaxDelay: waitLong})
	t.Cleanup(cat.Close)
	b := startBridge(t, &Options{Publisher: cat})
	var events atomic.Int64
	b.cat.Subscribe(func(tool.Change) { events.Add(1) })

	var want []string
	var wg, authed sync.WaitGroup
	register := make(chan struct{})
	for i := range devices {
		voice := fmt.Sprintf("dev%03d", i)
		var names []string
		for k := range perDevice {
			names = append(names, fmt.Sprintf("%s_tool%d", voice, k))
		}
		want = append(want, names...)
		d := dial(t, b.addr)
		wg.Add(1)
		authed.Add(1)
		go func() {
			defer wg.Done()
			d.sendFrame(TypeAuth, SystemTask, 0, "##voiceid:"+voice)
			d.expect(TypeStatus, "##INFO:AUTH_OK")
			authed.Done()
			<-register
			d.register(names...)
			d.serveCalls(func(method string, _ json.RawMessage) string { return voice + "/" + method })
		}()
	}
	authed.Wait()
	close(register)
	b.waitTools(want...)

	// Every page of tools/list, end to end.
	var listed int
	for cursor := ""; ; {
		page, next, err := b.cat.ListTools(cursor)
		if err != nil {
			t.Fatal(err)
		}
		listed += len(page)
		if next == "" {
			break
		}
		cursor = next
	}
	if listed != devices*perDevice {
		t.Errorf("tools/list has %d tools, want %d", listed, devices*perDevice)
	}
	if n := len(b.cat.Providers()); n != devices {
		t.Errorf("%d providers, want %d", n, devices)
	}

	// Every tool, 20 calls at a time.
	sem := make(chan struct{}, 20)
	var cwg sync.WaitGroup
	for _, name := range want {
		cwg.Add(1)
		sem <- struct{}{}
		go func() {
			defer cwg.Done()
			defer func() { <-sem }()
			res, err := call(t, b, name, `{"x":"y"}`)
			voice := name[:6]
			if exp := string(tool.TextResult(voice + "/" + name)); err != nil || string(res) != exp {
				t.Errorf("call %s: got %s, %v; want %s", name, res, err, exp)
			}
		}()
	}
	cwg.Wait()
	n := events.Load()
	t.Logf("%d registrations reached subscribers as %d change events", devices, n)
	if n < 1 || n >= devices/2 {
		t.Errorf("%d change events for %d registrations: want them coalesced", n, devices)
	}
}
