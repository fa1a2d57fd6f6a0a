package wrapped

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/declared"
)

// A stdio server that exits before it answers initialize is reported by
// its exit (ServerExitedError, whose ExitCode the wrapper exits with);
// one that answers nothing, by the time it was given.
func TestStartOfAServerThatDoesNotAnswer(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		script  string
		want    string
		code    int // ServerExitedError's ExitCode; 0: not one
		timeout time.Duration
	}{
		"exits":        {script: "echo 'Cannot access directory /srv/docs' >&2; exit 4", want: "the server exited before answering initialize: exit status 4", code: 4},
		"killed":       {script: "kill -9 $$", want: "the server exited before answering initialize: signal: killed", code: 1},
		"answers none": {script: "while read -r line; do :; done", want: "the server did not answer initialize within 300ms", timeout: 300 * time.Millisecond},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := &declared.Server{Command: "/bin/sh", Args: []string{"-c", tc.script}}
			_, _, err := Start(t.Context(), &Options{Server: s, Name: "plughost", Version: "0", Logger: hclog.NewNullLogger(), ConnectTimeout: tc.timeout})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("Start: %v, want %q", err, tc.want)
			}
			var se *ServerExitedError
			if got := errors.As(err, &se); got != (tc.code != 0) || got && se.ExitCode() != tc.code {
				t.Errorf("ServerExitedError %v (%v), want exit code %d", got, se, tc.code)
			}
		})
	}
}
