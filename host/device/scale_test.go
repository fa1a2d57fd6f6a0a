package device

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/plughost/plughost/host/tool"
)

// TestManyDevices: 200 devices at once, each registering 5 tools. The
// catalog lists all 1000, the registrations reach subscribers as a few
// coalesced events, and every call reaches the device that offers the tool.
func TestManyDevices(t *testing.T) {
	t.Parallel()
	const devices, perDevice = 200, 5
	b := startBridge(t, nil)
	var events atomic.Int64
	b.cat.Subscribe(func(tool.Change) { events.Add(1) })

	var want []string
	var wg sync.WaitGroup
	for i := range devices {
		voice := fmt.Sprintf("dev%03d", i)
		var names []string
		for k := range perDevice {
			names = append(names, fmt.Sprintf("%s_tool%d", voice, k))
		}
		want = append(want, names...)
		d := dial(t, b.addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.sendFrame(TypeAuth, SystemTask, 0, "##voiceid:"+voice)
			d.expect(TypeStatus, "##INFO:AUTH_OK")
			d.register(names...)
			d.serveCalls(func(method string, _ json.RawMessage) string { return voice + "/" + method })
		}()
	}
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
