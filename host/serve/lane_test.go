package serve

import (
	"strings"
	"testing"
)

// PLUGHOST_LANE: on by default, off keeps gRPC, anything else is refused
// naming the variable.
func TestLaneOff(t *testing.T) {
	for v, want := range map[string]bool{"": false, "on": false, "off": true} {
		if off, err := laneOff(v); off != want || err != nil {
			t.Errorf("laneOff(%q) = %v, %v; want %v", v, off, err, want)
		}
	}
	if _, err := laneOff("no"); err == nil || !strings.Contains(err.Error(), `PLUGHOST_LANE="no": want on or off`) {
		t.Errorf("laneOff(\"no\") = %v, want an error naming the variable and its values", err)
	}
}
