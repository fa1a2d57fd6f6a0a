package rollout

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// HAProxyConfig returns the haproxy.cfg fenced as ```haproxy in the section
// of the Markdown page src whose heading is section: the configuration an
// operator copies is the one the fleet runs.
func HAProxyConfig(src, section string) (string, error) {
	_, rest, ok := strings.Cut(src, "\n"+section+"\n")
	if !ok {
		return "", fmt.Errorf("no heading %q", section)
	}
	if next := strings.Index(rest, "\n## "); next >= 0 {
		rest = rest[:next]
	}
	_, block, ok := strings.Cut(rest, "\n```haproxy\n")
	if !ok {
		return "", fmt.Errorf("no ```haproxy block under %q", section)
	}
	block, _, ok = strings.Cut(block, "\n```")
	if !ok {
		return "", fmt.Errorf("the ```haproxy block under %q is not closed", section)
	}
	return block + "\n", nil
}

// serverLine matches a backend's server line: its name and address.
var serverLine = regexp.MustCompile(`(?m)^(\s*server\s+(\S+)\s+)(\S+)`)

// bindLine matches the frontend's bind line's address.
var bindLine = regexp.MustCompile(`(?m)^(\s*bind\s+)(\S+)`)

// rewrite returns cfg with its bind address bind, its servers' addresses
// addrs (in order; one server line each), and a stats socket at stats for
// the fleet to read its figures. Nothing else changes.
func rewrite(cfg, bind string, addrs []string, stats string) (string, []string, error) {
	if n := len(bindLine.FindAllStringIndex(cfg, -1)); n != 1 {
		return "", nil, fmt.Errorf("haproxy.cfg has %d bind lines, want 1", n)
	}
	cfg = bindLine.ReplaceAllString(cfg, "${1}"+bind)
	var names []string
	i := 0
	cfg = serverLine.ReplaceAllStringFunc(cfg, func(line string) string {
		m := serverLine.FindStringSubmatch(line)
		names = append(names, m[2])
		if i >= len(addrs) {
			i++
			return line
		}
		i++
		return m[1] + addrs[i-1]
	})
	if i != len(addrs) {
		return "", nil, fmt.Errorf("haproxy.cfg has %d server lines, want %d (one a replica)", i, len(addrs))
	}
	global, rest, ok := strings.Cut(cfg, "global\n")
	if !ok {
		return "", nil, errors.New("haproxy.cfg has no global section")
	}
	cfg = global + "global\n  stats socket " + stats + " level admin\n" + rest
	return cfg, names, nil
}

// balancer is a running haproxy.
type balancer struct {
	cmd    *exec.Cmd
	out    *Log
	done   chan struct{}
	stats  string // its stats socket
	url    string // its MCP endpoint
	server []string
}

// startBalancer runs haproxy (found on PATH, else /usr/sbin/haproxy) with
// cfg, listening on a socket of ours (fd 3: no port to race for), in front
// of addrs.
func startBalancer(dir, cfg string, addrs []string) (*balancer, error) {
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/haproxy"); serr != nil {
			return nil, fmt.Errorf("HAProxy is needed (Debian: apt-get install haproxy): %w", err)
		}
		haproxy = "/usr/sbin/haproxy"
	}
	b := &balancer{out: NewLog(), done: make(chan struct{}), stats: filepath.Join(dir, "haproxy.sock")}
	cfg, b.server, err = rewrite(cfg, "fd@3", addrs, b.stats)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	lf, err := ln.(*net.TCPListener).File()
	ln.Close()
	if err != nil {
		return nil, err
	}
	defer lf.Close()
	b.url = "http://" + ln.Addr().String() + "/mcp"
	b.cmd = exec.Command(haproxy, "-db", "-f", path)
	b.cmd.ExtraFiles = []*os.File{lf}
	b.cmd.Stdout, b.cmd.Stderr = b.out, b.out
	if err := b.cmd.Start(); err != nil {
		return nil, fmt.Errorf("haproxy: %w", err)
	}
	go func() { b.cmd.Wait(); close(b.done) }()
	return b, nil
}

// stop ends haproxy.
func (b *balancer) stop() {
	b.cmd.Process.Signal(os.Interrupt)
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		b.cmd.Process.Kill()
		<-b.done
	}
}

// Stats are HAProxy's figures for the backend.
type Stats struct {
	// Retries counts the requests HAProxy sent again (wretr), and
	// Redispatches those it sent to another replica (wredis).
	Retries, Redispatches int
	// Status is each server's status (UP, DOWN, "DOWN 1/2", ...), and
	// Checked whether its last check passed (L7OK): HAProxy takes a
	// server UP before its first check.
	Status  map[string]string
	Checked map[string]bool
}

// statsOf reads the backend's figures from the stats socket.
func (b *balancer) statsOf(ctx context.Context) (Stats, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", b.stats)
	if err != nil {
		return Stats{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "show stat\n"); err != nil {
		return Stats{}, err
	}
	r := csv.NewReader(bufio.NewReader(c))
	r.FieldsPerRecord = -1
	r.Comment = 0
	rows, err := r.ReadAll()
	if err != nil {
		return Stats{}, err
	}
	if len(rows) == 0 {
		return Stats{}, errors.New("haproxy: empty stats")
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[strings.TrimPrefix(strings.TrimSpace(h), "# ")] = i
	}
	s := Stats{Status: map[string]string{}, Checked: map[string]bool{}}
	for _, row := range rows[1:] {
		if len(row) <= col["status"] || len(row) <= col["wredis"] {
			continue
		}
		switch row[col["svname"]] {
		case "FRONTEND":
		case "BACKEND":
			s.Retries, _ = strconv.Atoi(row[col["wretr"]])
			s.Redispatches, _ = strconv.Atoi(row[col["wredis"]])
		default:
			s.Status[row[col["svname"]]] = row[col["status"]]
			s.Checked[row[col["svname"]]] = row[col["check_status"]] == "L7OK"
		}
	}
	return s, nil
}

// awaitUp waits until HAProxy's checks say server is UP: the balancer
// routes to it.
func (b *balancer) awaitUp(ctx context.Context, server string) error {
	return b.await(ctx, server, "UP", func(s Stats) bool { return s.Status[server] == "UP" && s.Checked[server] })
}

// awaitDown waits until HAProxy's checks say server is DOWN: the balancer
// no longer routes to it.
func (b *balancer) awaitDown(ctx context.Context, server string) error {
	return b.await(ctx, server, "DOWN", func(s Stats) bool { return strings.HasPrefix(s.Status[server], "DOWN") })
}

// await reads HAProxy's stats until they say server is as want says.
// HAProxy tells this only in its stats, so they are read every 100 ms.
func (b *balancer) await(ctx context.Context, server, what string, want func(Stats) bool) error {
	for {
		s, err := b.statsOf(ctx)
		if err == nil && want(s) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("haproxy never saw server %s %s (last: %q, %v): %w", server, what, s.Status[server], err, ctx.Err())
		case <-time.After(100 * time.Millisecond): // polling: HAProxy has no event to await
		}
	}
}
