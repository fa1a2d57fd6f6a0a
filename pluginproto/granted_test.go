package pluginproto

import (
	"sync"
	"testing"

	"github.com/plughost/plughost/grants"
)

// Granted reads $PLUGHOST_GRANTS as the host writes it (package grants; the sandbox's tests pin
// its JSON).
func TestGrantedReadsTheEnvironment(t *testing.T) {
	t.Setenv(grants.Env, `{"plugin":"notes","dirs":{"notes":{"path":"/srv/notes","write":true}},"allow_read":[],"allow_write":["/srv/notes"],"allow_net":"none","net_allow":[],"env":["LANG"]}`)
	grantsOnce = sync.Once{}
	g := Granted()
	if g.Plugin != "notes" || g.Dirs["notes"].Path != "/srv/notes" || !g.Dirs["notes"].Write || g.AllowNet != "none" || len(g.Env) != 1 {
		t.Errorf("Granted() = %+v", g)
	}
}
