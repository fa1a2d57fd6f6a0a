package pluginproto

import (
	"encoding/json"
	"os"
	"sync"

	"github.com/plughost/plughost/grants"
)

var (
	grantsOnce sync.Once
	granted    *grants.Grants
)

// Granted returns what the host granted this plugin (package grants),
// read from $PLUGHOST_GRANTS once. Outside a host (a unit test, a run by
// hand) it is empty: no named directory, no network. A plugin asks for a
// directory by a name of its own choosing ("notes"), and the operator's
// configuration decides which directory that is:
//
//	sandbox {
//	  plugin "notes" {
//	    dir "notes" {
//	      path  = "/srv/notes"
//	      write = true
//	    }
//	  }
//	}
//
// and the plugin finds it:
//
//	notes, err := pluginproto.Granted().Dir("notes")
//	if err != nil {
//		log.Fatal(err) // says what the operator must add to the configuration
//	}
func Granted() *grants.Grants {
	grantsOnce.Do(func() {
		granted = &grants.Grants{AllowNet: "none"}
		if raw := os.Getenv(grants.Env); raw != "" {
			var g grants.Grants
			if err := json.Unmarshal([]byte(raw), &g); err == nil {
				granted = &g
			}
		}
	})
	return granted
}
