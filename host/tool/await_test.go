package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/plughost/plughost/host/tool"
)

// Await returns what done got, whether done came before StartCall
// returned or later on another goroutine; the call's notifications come
// before it returns.
func TestAwait(t *testing.T) {
	t.Parallel()
	errBusy := errors.New("busy")
	tests := map[string]struct {
		start   tool.StartFunc
		wantRes string
		wantErr error
	}{
		"answered at once": {
			start: func(_ context.Context, _ *tool.Call, done func(json.RawMessage, error)) {
				done(json.RawMessage(`{"n":1}`), nil)
			},
			wantRes: `{"n":1}`,
		},
		"answered later": {
			start: func(_ context.Context, call *tool.Call, done func(json.RawMessage, error)) {
				go func() {
					call.Progress(tool.Progress{Progress: 1})
					done(nil, errBusy)
				}()
			},
			wantErr: errBusy,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			progressed := 0
			call := &tool.Call{Name: "x", Progress: func(tool.Progress) { progressed++ }}
			res, err := tool.Await(t.Context(), tt.start, call)
			if string(res) != tt.wantRes || !errors.Is(err, tt.wantErr) {
				t.Errorf("Await = %s, %v; want %s, %v", res, err, tt.wantRes, tt.wantErr)
			}
			if tt.wantErr != nil && progressed != 1 {
				t.Errorf("%d progress reports before Await returned, want 1", progressed)
			}
		})
	}
}
