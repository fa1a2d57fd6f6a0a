//go:build unix

package registrytest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// postgresStartTimeout bounds initdb and the server's start together.
const postgresStartTimeout = 60 * time.Second

// postgresReady is the line the postmaster logs once it accepts
// connections (lc_messages=C keeps it in English).
const postgresReady = "database system is ready to accept connections"

// startPostgres runs a PostgreSQL server of t's own and returns the URL of
// its "postgres" database for the registry. The cluster lives in a new
// temporary directory and listens on a unix socket there only (no TCP port),
// with fsync off: it is thrown away when t ends, after the server stops.
//
// PostgreSQL refuses to run as root, so under root (the tests' user in CI)
// initdb and the server run as the "postgres" user that Debian's package
// creates; otherwise as the current user.
func startPostgres(t testing.TB) (databaseURL string) {
	t.Helper()
	bin, err := postgresBinDir()
	if err != nil {
		t.Fatal(err)
	}
	// A short directory of its own: a socket's path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "pg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cred, err := postgresCredential(dir)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.Env = postgresEnv()
	initdb.SysProcAttr = sysProcAttr(cred)
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}

	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-k", dir,
		"-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off",
		"-c", "full_page_writes=off", "-c", "lc_messages=C", "-c", "max_connections=20")
	cmd.Env = postgresEnv()
	cmd.SysProcAttr = sysProcAttr(cred)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("postgres: %v", err)
	}
	exited := make(chan struct{})
	ready := make(chan struct{})
	var log logTail
	go func() {
		watchLog(stderr, &log, postgresReady, ready)
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		// Fast shutdown: sessions end, the server exits; SIGKILL if it dawdles.
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	select {
	case <-ready:
	case <-exited:
		t.Fatalf("postgres exited at start:\n%s", log.String())
	case <-time.After(postgresStartTimeout):
		t.Fatalf("postgres is not ready after %v:\n%s", postgresStartTimeout, log.String())
	}
	return "postgres:///postgres?host=" + dir + "&user=postgres&sslmode=disable"
}

// postgresBinDir finds the directory of initdb and postgres: the one of
// initdb on PATH, else Debian's /usr/lib/postgresql/VERSION/bin (the
// highest version), which the postgresql package does not put on PATH.
func postgresBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) < pgMajor(dirs[j]) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "postgres")); err == nil {
			return dirs[i], nil
		}
	}
	return "", fmt.Errorf("this test needs PostgreSQL's initdb and postgres (Debian: apt-get install postgresql; .ci/run installs it): none on PATH nor in /usr/lib/postgresql/*/bin")
}

// pgMajor is the version in /usr/lib/postgresql/VERSION/bin.
func pgMajor(bin string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return n
}

// postgresCredential returns whom initdb and the server run as: nil (the
// current user) unless that is root, else the "postgres" user, who is given
// dir.
func postgresCredential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("PostgreSQL will not run as root and there is no postgres user to run it as (Debian's postgresql package creates one): %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// postgresEnv is the environment of initdb and the server: the test's
// minus the PG* variables that would point them elsewhere, in the C locale.
func postgresEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "LC_") && !strings.HasPrefix(kv, "LANG=") {
			env = append(env, kv)
		}
	}
	return append(env, "LC_ALL=C")
}

// watchLog copies a server's log into tail until the log ends, closing
// ready (unless nil) at the first line containing marker.
func watchLog(r io.Reader, tail *logTail, marker string, ready chan<- struct{}) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	signalled := false
	for sc.Scan() {
		tail.add(sc.Text())
		if ready != nil && !signalled && strings.Contains(sc.Text(), marker) {
			signalled = true
			close(ready)
		}
	}
	io.Copy(io.Discard, r)
}
