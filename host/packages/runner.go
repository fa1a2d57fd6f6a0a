package packages

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/plughost/plughost/sandbox"
)

// sandboxUID is the uid a sandboxed process runs as when the host is
// root (the sandbox's stage drops to it): an install step's writable
// directories are given to it for the step, and taken back after.
const sandboxUID = 65534

// stepEnv is the environment every step gets, whatever its program:
// no Python user site-packages (see SandboxRunner).
var stepEnv = []string{"PYTHONNOUSERSITE=1"}

// SandboxRunner runs the steps of the server's installs in sb's sandbox,
// under the server's name, each with the host's network (the registry, a
// proxy: name resolution and TLS roots are what the sandbox grants any
// process with the network), its program and runtime readable, the
// step's paths, 2 GiB, 256 processes, 4096 open files and a JIT (npm
// runs on node). The server's sandbox block does not apply: the step
// runs the package manager, not the server, and reads nothing of the
// server's grants.
//
// The sandbox makes the server's data directory the step's HOME, and
// the server writes there: no configuration a step reads is taken from
// it. Python runs isolated (-I) with PYTHONNOUSERSITE=1 (every step
// gets it), so neither a user site-packages nor a .pth file under HOME
// is read; pip runs --isolated, with its settings as arguments. npm reads only the files its
// arguments name (--userconfig: the filtered settings the install
// writes, --globalconfig: an empty file), never ~/.npmrc, and its cache
// is the one --cache names. (Node itself still lists ~/.node_modules
// and ~/.node_libraries among its global module folders, looked in only
// for a module npm's own tree lacks; the step cannot be given another
// HOME while the sandbox sets it.)
func SandboxRunner(sb *sandbox.Launcher, server string) Runner {
	return func(ctx context.Context, st Step) (stdout, stderr []byte, err error) {
		command, err := sandbox.LookCommand(st.Command, sandbox.PluginPATH)
		if err != nil {
			return nil, nil, err
		}
		grants, err := sandbox.ServerGrants(sandbox.Runtime(st.Runtime), command, st.Args)
		if err != nil {
			return nil, nil, err
		}
		jit := true
		pol := &sandbox.Policy{Runtime: sandbox.Runtime(st.Runtime), AllowRead: append(grants, st.Read...), AllowWrite: st.Write,
			Net: sandbox.NetAll, Memory: 2 << 30, Pids: 256, Files: 4096, AllowJIT: &jit,
			// pip unpacks wheels in its tmp, npm keeps its cache in $HOME.
			TmpSize: 2 << 30, DataSize: 4 << 30}
		if os.Geteuid() == 0 {
			for _, w := range st.Write {
				if err := chownTree(w, sandboxUID); err != nil {
					return nil, nil, err
				}
			}
		}
		cmd := exec.Command(command, st.Args...)
		// The host's environment, which the sandbox scrubs to what the
		// policy names: the step's own variables and, since it has the
		// network, those that point at extra certificates
		// (sandbox.NetworkGrants: NODE_EXTRA_CA_CERTS, SSL_CERT_FILE…).
		env := append(slices.Clone(stepEnv), st.Env...)
		cmd.Env = append(os.Environ(), env...)
		for _, e := range env {
			name, _, _ := strings.Cut(e, "=")
			pol.Env = append(pol.Env, name)
		}
		out := &limitBuffer{max: maxStepStdout}
		errb := &tailBuffer{max: maxStepStderr}
		cmd.Stdout, cmd.Stderr = out, errb
		l, err := sb.Wrap(server, pol, cmd)
		if err != nil {
			return nil, nil, err
		}
		if err := l.Cmd.Start(); err != nil {
			l.Exited()
			return nil, nil, err
		}
		pid := l.Cmd.Process.Pid
		kill := func() { killGroup(pid); _ = l.Cmd.Process.Kill() }
		out.setOver(kill)
		stop := context.AfterFunc(ctx, kill)
		defer stop()
		if _, err := l.Started(pid); err != nil {
			kill()
			_ = l.Cmd.Wait()
			l.Exited()
			return out.Bytes(), errb.Bytes(), fmt.Errorf("sandbox: %w", err)
		}
		err = l.Cmd.Wait()
		why := l.Exited()
		if ctx.Err() != nil {
			return out.Bytes(), errb.Bytes(), ctx.Err()
		}
		if out.overflowed() {
			return nil, errb.Bytes(), fmt.Errorf("%s printed more than %d MiB on its standard output: stopped", st.Command, maxStepStdout>>20)
		}
		if err != nil && why != "" {
			err = fmt.Errorf("%w (%s)", err, why)
		}
		return out.Bytes(), errb.Bytes(), err
	}
}

// maxStepStdout bounds what a step may print on its standard output (npm
// view's JSON, pip's report): more is an error, and stops the step.
// maxStepStderr is how much of the end of its standard error is kept
// (a failure's message is its tail).
const (
	maxStepStdout = 16 << 20
	maxStepStderr = 64 << 10
)

// limitBuffer keeps what is written up to max bytes; past it, it keeps
// nothing more, records the overflow and calls the function setOver
// gave it (once).
type limitBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	max  int
	over bool
	stop func()
}

func (b *limitBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.over {
		return len(p), nil
	}
	if b.buf.Len()+len(p) > b.max {
		b.over = true
		if b.stop != nil {
			b.stop()
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// setOver sets the function called on overflow (at once, if it is
// past already).
func (b *limitBuffer) setOver(stop func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stop = stop
	if b.over {
		stop()
	}
}

func (b *limitBuffer) overflowed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.over
}

func (b *limitBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if len(p) >= b.max {
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return n, nil
	}
	if drop := len(b.buf) + len(p) - b.max; drop > 0 {
		b.buf = append(b.buf[:0], b.buf[drop:]...)
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

func (b *tailBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf)
}

// own gives the tree at dir back to the host's user after a step that
// ran as sandboxUID wrote it: from then on the server, which runs as
// that uid too, cannot change what it runs even where the sandbox would
// let it.
func own(dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	return chownTree(dir, os.Geteuid())
}

// chownTree gives dir and everything under it to uid.
func chownTree(dir string, uid int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}

// Digest is the digest plughost's trust check sees for a declared server
// that installs a package: the declaration file's digest (fileDigest,
// "sha256:…") together with the installed tree as it is now: its lock's
// digest and its files' (recomputed, so a tree changed since it was
// approved is changed). in nil (nothing installed yet) gives the
// declaration's digest under another prefix, so that it is never an
// installed tree's.
func Digest(fileDigest string, in *Installed) (string, error) {
	h := sha256.New()
	field(h, "plughost-declared-package/v1")
	field(h, fileDigest)
	if in == nil {
		field(h, "not installed")
		return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
	}
	lock, _, err := LockDigest(filepath.Join(in.Tree, "package-lock.json"))
	if in.Manager == Pip {
		lock, err = pipLockDigest(in.Tree)
	}
	if err != nil {
		return "", err
	}
	files, _, err := TreeDigest(in.Tree)
	if err != nil {
		return "", err
	}
	field(h, in.String())
	field(h, lock)
	field(h, files)
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
