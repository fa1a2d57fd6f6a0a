// Package redistest runs a real redis-server of a test's own, for the
// tests of the task store on Redis (host/tasks/redistore) and the
// end-to-end tests of replicas sharing tasks (cmd/plughost).
//
// The server listens on a unix socket only (no TCP port, so no port to
// race for), keeps nothing on disk, and is killed when the test ends:
//
//	srv := redistest.Start(t)
//	store, err := redistore.New(redistore.Options{Address: srv.Socket, Replica: "a", Secret: key})
//
// redis-server must be installed (Debian: apt-get install redis-server;
// .ci/run installs it): without it the test fails, saying so.
package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long a server may take to answer its first PING.
const startTimeout = 10 * time.Second

// Server is a running redis-server.
type Server struct {
	// Socket is the path of its unix socket: an Address for redistore.
	Socket  string
	dir     string
	proxies atomic.Int32
}

// Start starts a redis-server for t and waits until it answers PING; args
// are more of redis-server's options, such as "--requirepass", "secret".
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if _, serr := os.Stat("/usr/bin/redis-server"); serr != nil {
			t.Fatalf("this test needs redis-server (Debian: apt-get install redis-server; .ci/run installs it): %v", err)
		}
		bin = "/usr/bin/redis-server"
	}
	// A short directory of its own: a socket's path must fit in 108 bytes,
	// which t.TempDir under a long test name may not.
	dir, err := os.MkdirTemp("", "redis")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &Server{Socket: filepath.Join(dir, "redis.sock"), dir: dir}
	logPath := filepath.Join(dir, "redis.log")
	out, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close() // the server has its own copy
	log := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	cmd := exec.Command(bin, append([]string{"--port", "0", "--unixsocket", s.Socket, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--dir", dir}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	})
	deadline := time.Now().Add(startTimeout)
	for !ping(s.Socket) {
		select {
		case <-exited:
			t.Fatalf("redis-server exited at start:\n%s", log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server does not answer PING after %v:\n%s", startTimeout, log())
		}
		time.Sleep(10 * time.Millisecond) // polling readiness: the server has no event to await
	}
	return s
}

// ping reports whether the server at socket answers PING (with PONG, or
// with an error when it wants a password first).
func ping(socket string) bool {
	c, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	reply, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && (reply == "+PONG\r\n" || strings.HasPrefix(reply, "-NOAUTH"))
}

// Proxy returns the socket of a relay to the server, and cut, which severs
// it for good: the relay's connections close and new ones are refused. A
// client behind it then stands for a replica that died or lost the
// network, without the chance to say goodbye.
func (s *Server) Proxy(t testing.TB) (socket string, cut func()) {
	t.Helper()
	p := &proxy{conns: map[net.Conn]struct{}{}}
	socket = filepath.Join(s.dir, fmt.Sprintf("proxy%d.sock", s.proxies.Add(1)))
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	p.ln = ln
	go p.serve(s.Socket)
	t.Cleanup(p.cut)
	return socket, p.cut
}

type proxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns map[net.Conn]struct{}
	gone  bool
}

func (p *proxy) serve(target string) {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // cut
		}
		up, err := net.Dial("unix", target)
		if err != nil || !p.track(c, up) {
			c.Close()
			if up != nil {
				up.Close()
			}
			continue
		}
		go relay(c, up)
		go relay(up, c)
	}
}

// track notes a relayed pair, unless the proxy is cut.
func (p *proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

// relay copies src to dst until either closes, then closes both.
func relay(dst, src net.Conn) {
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone {
		return
	}
	p.gone = true
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
}
