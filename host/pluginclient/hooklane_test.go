package pluginclient

import (
	"encoding/binary"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/lane"
	"github.com/plughost/plughost/internal/pluginpb"
)

// A plugin that took the lane gets the questions to its hooks there, as
// frames of lane.KindHook, and its answers in any order reach their own
// questions; a plugin that breaks the lane's framing fails the question
// then in flight at once, and the next one goes on the Hooks rpc.
func TestHookQuestionsOnTheLane(t *testing.T) {
	f := &fake{describe: &pluginpb.DescribeResponse{Name: "guard", ContractVersion: 2, Lane: true,
		Offers: &pluginpb.Offers{Hooks: []string{"before_call"}}}}
	c, plugin, broke := describedOnLane(t, f)

	type reply struct {
		a   *tool.HookAnswer
		err error
	}
	ask := func(hook string) <-chan reply {
		ch := make(chan reply, 1)
		go func() {
			a, err := c.Hook(t.Context(), &tool.HookCall{Point: tool.BeforeCall, Hook: hook})
			ch <- reply{a, err}
		}()
		return ch
	}
	r := lane.NewReader(plugin, 1<<20)
	next := func() *pluginpb.HookCall {
		t.Helper()
		kind, msg, err := r.Next()
		if err != nil || kind != lane.KindHook {
			t.Fatalf("a question on the lane: kind %d, %v; want kind %d", kind, err, lane.KindHook)
		}
		q := new(pluginpb.HookCall)
		if err := proto.Unmarshal(msg, q); err != nil {
			t.Fatal(err)
		}
		return q
	}
	w := lane.NewWriter(plugin)

	first, second := ask("first"), ask("second")
	q1, q2 := next(), next()
	if !c.HooksOnLane() {
		t.Fatal("the questions came on the lane, but HooksOnLane says not")
	}
	byHook := map[string]*pluginpb.HookCall{q1.GetHook(): q1, q2.GetHook(): q2}
	// The second answered first, each with its own decision.
	if err := w.Write(lane.KindHook, &pluginpb.HookAnswer{Id: byHook["second"].GetId(), Decision: pluginpb.HookAnswer_REFUSE, Reason: "no"}); err != nil {
		t.Fatal(err)
	}
	if got := <-second; got.err != nil || got.a.Decision != tool.HookRefuse || got.a.Reason != "no" {
		t.Fatalf("the second question: %+v, %v; want a refusal", got.a, got.err)
	}
	if err := w.Write(lane.KindHook, &pluginpb.HookAnswer{Id: byHook["first"].GetId(), Decision: pluginpb.HookAnswer_PASS}); err != nil {
		t.Fatal(err)
	}
	if got := <-first; got.err != nil || got.a.Decision != tool.HookPass {
		t.Fatalf("the first question: %+v, %v; want a pass", got.a, got.err)
	}

	third := ask("third")
	next()
	if _, err := plugin.Write(append(binary.BigEndian.AppendUint32(nil, 6), lane.KindHook, 0xff, 0xff, 0xff, 0xff, 0xff)); err != nil {
		t.Fatal(err)
	}
	if got := <-third; !errors.Is(got.err, ErrPluginClosed) {
		t.Fatalf("the question in flight on a broken lane: %v, want ErrPluginClosed", got.err)
	}
	if err := <-broke; !errors.Is(err, lane.ErrBroken) {
		t.Errorf("the break: %v, want ErrBroken", err)
	}
	if c.HooksOnLane() {
		t.Error("questions still on the broken lane")
	}
	// The fake serves no Hooks rpc: that the next question reached it is
	// what its error says.
	if _, err := c.Hook(t.Context(), &tool.HookCall{Point: tool.BeforeCall, Hook: "after"}); err == nil || c.HooksOnLane() {
		t.Errorf("the question after the break: %v, on the lane %v; want the Hooks rpc's refusal", err, c.HooksOnLane())
	}
}
