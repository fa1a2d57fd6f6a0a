package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// serverSpec is one server under test: how to start it and what to call.
type serverSpec struct {
	// Name labels the server's rows ("plughost", "floor", "go-sdk", ...).
	Name string
	// Host is true for plughost (its tools live in plugin processes).
	Host bool
	// Command returns the command line; httpAddr is empty for stdio.
	Command func(httpAddr string) []string
	// Env is added to the server's environment. A plughost (Host) without
	// XDG_CACHE_HOME in it gets an empty catalog cache of its own, so that
	// no run starts from what an earlier one left.
	Env []string
	// EchoArg names the echo tool's string argument ("text" when empty);
	// EchoPrefix is what the server's answer puts before the text.
	EchoArg, EchoPrefix string
}

// echoCall is the load's call of sp's echo tool with textLen bytes of text.
func (sp serverSpec) echoCall(textLen int) echoCall {
	arg := sp.EchoArg
	if arg == "" {
		arg = "text"
	}
	return newEchoCallOf("echo", arg, sp.EchoPrefix, textLen)
}

// transport is how the load client reaches a server.
type transport string

const (
	stdio     transport = "stdio"
	streamHTP transport = "http"
)

// server is a running server under test and the load client's connection.
type server struct {
	spec   serverSpec
	cmd    *exec.Cmd
	conn   conn
	stdin  io.WriteCloser // stdio only
	log    *os.File       // the server's stderr
	exited chan struct{}
	err    error // the process's exit, once exited is closed
	start  time.Time
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startServer starts spec's process and connects the load client to it
// (without initializing). logDir receives the server's stderr.
func startServer(ctx context.Context, spec serverSpec, tr transport, logDir string) (*server, error) {
	var addr string
	if tr == streamHTP {
		var err error
		if addr, err = freeAddr(); err != nil {
			return nil, err
		}
	}
	argv := spec.Command(addr)
	logf, err := os.CreateTemp(logDir, strings.ReplaceAll(spec.Name, " ", "_")+"-*.log")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), spec.Env...)
	if spec.Host && !slices.ContainsFunc(spec.Env, func(e string) bool { return strings.HasPrefix(e, "XDG_CACHE_HOME=") }) {
		cache, err := os.MkdirTemp(logDir, "cache-")
		if err != nil {
			logf.Close()
			return nil, err
		}
		cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+cache)
	}
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	s := &server{spec: spec, cmd: cmd, log: logf, exited: make(chan struct{})}
	var stdout io.ReadCloser
	if tr == stdio {
		if s.stdin, err = cmd.StdinPipe(); err != nil {
			logf.Close()
			return nil, err
		}
		if stdout, err = cmd.StdoutPipe(); err != nil {
			logf.Close()
			return nil, err
		}
	}
	s.start = time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	if tr == stdio {
		s.conn = newStdioConn(stdout, s.stdin)
		return s, nil
	}
	// Wait for the listener: there is no event to await, so dial until it
	// answers, the process exits or 10 s pass.
	deadline := time.Now().Add(10 * time.Second)
	for delay := time.Millisecond; ; delay = min(delay*2, 50*time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("%s exited before listening: %v (stderr: %s)", spec.Name, s.err, s.stderrTail())
		case <-time.After(delay):
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s did not listen on %s within 10s", spec.Name, addr)
		}
	}
	s.conn = newHTTPConn("http://" + addr + "/mcp")
	return s, nil
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// stderrTail returns the end of the server's stderr, for error messages.
func (s *server) stderrTail() string {
	b, _ := os.ReadFile(s.log.Name())
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return strings.TrimSpace(string(b))
}

// stop ends the server: closes stdin (stdio) or sends SIGTERM (HTTP), waits
// up to 10 s, then kills its process group.
func (s *server) stop() error {
	if s.conn != nil {
		_ = s.conn.close()
	}
	if s.stdin == nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
	}
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.pid(), syscall.SIGKILL)
		<-s.exited
		s.log.Close()
		return fmt.Errorf("%s did not stop within 10s; killed", s.spec.Name)
	}
	_ = syscall.Kill(-s.pid(), syscall.SIGKILL) // stragglers of its group, if any
	s.log.Close()
	var ee *exec.ExitError
	if s.err != nil && !(errors.As(s.err, &ee) && s.stdin == nil) {
		return fmt.Errorf("%s: %v", s.spec.Name, s.err)
	}
	return nil
}

// waitForTools lists the server's tools until want(names) holds, waiting
// for list_changed between tries (or polling every 20 ms when the transport
// has no notification channel), for at most timeout.
func waitForTools(ctx context.Context, c conn, timeout time.Duration, want func([]string) bool) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		names, err := listTools(ctx, c)
		if err != nil {
			return nil, err
		}
		if want(names) {
			return names, nil
		}
		select {
		case <-c.notifications():
		case <-time.After(20 * time.Millisecond):
			// a missed notification, or no channel: look again
		case <-ctx.Done():
			return names, fmt.Errorf("waited %v for the tools; have %d", timeout, len(names))
		}
	}
}

func hasTool(name string) func([]string) bool {
	return func(names []string) bool { return slices.Contains(names, name) }
}

// linkOrCopy makes dst a hard link to src, or a copy when linking fails
// (another file system), executable.
func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// specs returns the servers of the call benchmark: plughost (with each
// variant's extra arguments) and the peers.
func specs(cfg *config) []serverSpec {
	peer := func(name, bin string) serverSpec {
		return serverSpec{Name: name, Command: func(addr string) []string {
			argv := []string{filepath.Join(cfg.binDir, bin)}
			if addr != "" {
				argv = append(argv, "-http", addr)
			}
			return argv
		}}
	}
	var out []serverSpec
	for _, v := range cfg.variants {
		out = append(out, cfg.plughost(v.name, v.args, cfg.echoDir))
	}
	return append(out,
		peer("floor", "peer-floor"),
		peer("go-sdk", "peer-gosdk"),
		peer("mcp-go", "peer-mcpgo"),
	)
}
