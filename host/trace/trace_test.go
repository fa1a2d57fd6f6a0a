package trace

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := map[string]struct {
		parent, state string
		want          Context
		wantErr       string // in the traceparent's error
		wantStateErr  bool
	}{
		"valid":              {parent: valid, want: Context{Parent: valid}},
		"with state":         {parent: valid, state: "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", want: Context{Parent: valid, State: "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"}},
		"future version":     {parent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xyz", want: Context{Parent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xyz"}},
		"state too long":     {parent: valid, state: strings.Repeat("a", MaxStateLen+1), want: Context{Parent: valid}, wantStateErr: true},
		"state control char": {parent: valid, state: "a=b\nc=d", want: Context{Parent: valid}, wantStateErr: true},
		"empty":              {parent: "", wantErr: "bytes, want 55"},
		"uppercase":          {parent: strings.ToUpper(valid), wantErr: "not lowercase hex"},
		"zero trace id":      {parent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01", wantErr: "trace-id is all zeros"},
		"zero parent id":     {parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", wantErr: "parent-id is all zeros"},
		"version ff":         {parent: "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", wantErr: "version ff"},
		"v00 trailing":       {parent: valid + "-00", wantErr: "after the flags"},
		"bad separator":      {parent: "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", wantErr: "separated"},
		"short trace id":     {parent: "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", wantErr: "bytes, want 55"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, stateErr, err := Parse(tc.parent, tc.state)
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want ErrInvalid saying %q", err, tc.wantErr)
				}
				if got != (Context{}) {
					t.Errorf("context %+v beside an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if got != tc.want {
				t.Errorf("context = %+v, want %+v", got, tc.want)
			}
			if (stateErr != nil) != tc.wantStateErr {
				t.Errorf("stateErr = %v, want one: %v", stateErr, tc.wantStateErr)
			}
		})
	}
}

func TestTraceID(t *testing.T) {
	t.Parallel()
	c, _, err := Parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.TraceID(); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("TraceID = %q", got)
	}
	if got := (Context{}).TraceID(); got != "" {
		t.Errorf("zero TraceID = %q", got)
	}
}
