package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// BenchmarkStart measures a plugin's start to its first output (the point
// where a go-plugin plugin would print its handshake line), plain and
// sandboxed with the default policy. Compare the two in one run:
//
//	go test -run '^$' -bench Start -benchtime 50x ./sandbox
func BenchmarkStart(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), "SANDBOX_TEST_PLUGIN=1")
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			var out bytes.Buffer
			cmd := &exec.Cmd{Path: self, Args: []string{self}, Env: env, Stdout: &out}
			if err := cmd.Run(); err != nil || out.Len() == 0 {
				b.Fatal(err, out.String())
			}
		}
	})
	b.Run("sandboxed", func(b *testing.B) {
		l, err := New(&Options{StateDir: b.TempDir(), PassEnv: []string{"SANDBOX_TEST_PLUGIN"}})
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			var out bytes.Buffer
			launch, err := l.Wrap("bench", nil, &exec.Cmd{Path: self, Args: []string{self}, Env: env, Stdout: &out})
			if err != nil {
				b.Fatal(err)
			}
			if err := launch.Cmd.Start(); err != nil {
				b.Fatal(err)
			}
			if _, err := launch.Started(launch.Cmd.Process.Pid); err != nil {
				b.Fatal(err)
			}
			if err := launch.Cmd.Wait(); err != nil || out.Len() == 0 {
				b.Fatal(err, out.String())
			}
			launch.Exited()
		}
	})
}
