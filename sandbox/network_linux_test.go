package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/grants"
)

// lookupPlugin is the test binary run as a plugin that resolves the names
// of $SANDBOX_TEST_NAMES with Go's resolver and prints, per name, its
// addresses or "not found", then whether it could read resolv.conf.
func lookupPlugin() {
	var out []string
	for _, name := range strings.Split(os.Getenv("SANDBOX_TEST_NAMES"), ",") {
		addrs, err := net.LookupHost(name)
		var dnsErr *net.DNSError
		switch {
		case err == nil:
			slices.Sort(addrs)
			out = append(out, name+": "+strings.Join(addrs, " "))
		case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
			out = append(out, name+": not found")
		default:
			out = append(out, name+": "+err.Error())
		}
	}
	_, err := os.ReadFile("/etc/resolv.conf")
	switch {
	case errors.Is(err, fs.ErrPermission):
		out = append(out, "resolv.conf: EACCES")
	case err != nil:
		out = append(out, "resolv.conf: "+err.Error())
	default:
		out = append(out, "resolv.conf: read")
	}
	if os.Getenv("SANDBOX_TEST_CERT") == "1" {
		file := os.Getenv("SSL_CERT_FILE")
		_, err := os.ReadFile(file)
		switch {
		case file == "":
			out = append(out, "SSL_CERT_FILE: unset")
		case errors.Is(err, fs.ErrPermission):
			out = append(out, "SSL_CERT_FILE: EACCES")
		case err != nil:
			out = append(out, "SSL_CERT_FILE: "+err.Error())
		default:
			out = append(out, "SSL_CERT_FILE: read")
		}
		var g grants.Grants
		_ = json.Unmarshal([]byte(os.Getenv(grants.Env)), &g)
		out = append(out, fmt.Sprintf("granted: %v %v", slices.Contains(g.AllowRead, file), slices.Contains(g.Env, "SSL_CERT_FILE")))
	}
	os.Stdout.WriteString(strings.Join(out, "; ") + "\n")
	os.Exit(0)
}

// runLookup wraps lookupPlugin under pol and returns its output and report.
// env is added to the plugin's prepared environment.
func runLookup(t *testing.T, opts Options, pol *Policy, names string, env ...string) (string, *Report, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	opts.StateDir = t.TempDir()
	opts.PassEnv = []string{"SANDBOX_TEST_PLUGIN", "SANDBOX_TEST_NAMES", "SANDBOX_TEST_CERT"}
	l, err := New(&opts)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd := &exec.Cmd{Path: self, Args: []string{self}, Env: append(append(os.Environ(), "SANDBOX_TEST_PLUGIN=lookup", "SANDBOX_TEST_NAMES="+names), env...), Stdout: &out, Stderr: &errOut}
	launch, err := l.Wrap("lookup", pol, cmd)
	if err != nil {
		return "", nil, err
	}
	if err := launch.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rep, err := launch.Started(launch.Cmd.Process.Pid)
	waitErr := launch.Cmd.Wait()
	launch.Exited()
	if err == nil && waitErr != nil {
		t.Fatalf("plugin: %v\nstderr: %s", waitErr, errOut.String())
	}
	return out.String(), rep, err
}

// allow_net as a list: the listed name resolves to what the host's
// resolver said at launch, another name (which the same DNS server would
// answer) does not, and resolv.conf is out of reach. The machine's
// /etc/hosts is untouched.
func TestListModeResolvesOnlyItsNames(t *testing.T) {
	r := testDNS(t, map[string]string{"listed.example.test": "192.0.2.7", "other.example.test": "192.0.2.8"})
	hostsBefore, _ := os.ReadFile("/etc/hosts")
	pol := &Policy{Net: NetList, NetAllow: []string{"listed.example.test:443"}}
	out, rep, err := runLookup(t, Options{Resolver: r}, pol, "listed.example.test,other.example.test")
	if err != nil {
		t.Fatal(err)
	}
	if want := "listed.example.test: 192.0.2.7; other.example.test: not found; resolv.conf: EACCES\n"; out != want {
		t.Errorf("plugin output = %q, want %q", out, want)
	}
	if !slices.Contains(rep.Active, LayerNetNames) {
		t.Errorf("layer %s not active: %v (missing %v)", LayerNetNames, rep.Active, rep.Missing)
	}
	if after, _ := os.ReadFile("/etc/hosts"); !bytes.Equal(after, hostsBefore) {
		t.Errorf("the machine's /etc/hosts changed:\n%s", after)
	}

	t.Run("a listed name that does not resolve", func(t *testing.T) {
		_, _, err := runLookup(t, Options{Resolver: r}, &Policy{Net: NetList, NetAllow: []string{"listed.example.test:443", "gone.example.test:443"}}, "")
		if err == nil || !strings.Contains(err.Error(), `allow_net "gone.example.test:443"`) {
			t.Errorf("Wrap = %v, want an error naming the entry", err)
		}
	})
	t.Run("the host's context ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(100*time.Millisecond, cancel)
		start := time.Now()
		_, _, err := runLookup(t, Options{Resolver: slowResolver(r, time.Hour), Context: ctx}, pol, "")
		if err == nil || !strings.Contains(err.Error(), "listed.example.test") || time.Since(start) > resolveTimeout/2 {
			t.Errorf("Wrap = %v after %v, want a failure once Options.Context ends", err, time.Since(start))
		}
	})
	t.Run("no namespaces", func(t *testing.T) {
		_, rep, err := runLookup(t, Options{Resolver: r, NoNamespaces: true}, pol, "listed.example.test")
		if err != nil {
			t.Fatal(err)
		}
		if why := rep.Missing[LayerNetNames]; !strings.Contains(why, "not confined") {
			t.Errorf("missing %v: want %s reported, saying names are not confined", rep.Missing, LayerNetNames)
		}
	})
	t.Run("strict without namespaces", func(t *testing.T) {
		_, _, err := runLookup(t, Options{Resolver: r, NoNamespaces: true}, &Policy{Net: NetList, NetAllow: pol.NetAllow, Strict: true}, "")
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("Wrap = %v, want ErrUnavailable", err)
		}
	})
}

// allow_net = "all": the machine's resolver configuration is readable.
func TestAllModeReadsResolverFiles(t *testing.T) {
	if _, err := os.Stat("/etc/resolv.conf"); err != nil {
		t.Skip("this machine has no /etc/resolv.conf")
	}
	out, rep, err := runLookup(t, Options{}, &Policy{Net: NetAll}, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out, "; resolv.conf: read\n") {
		t.Errorf("plugin output = %q, want resolv.conf read", out)
	}
	if slices.Contains(rep.Active, LayerNetNames) {
		t.Errorf("layer %s active under allow_net all", LayerNetNames)
	}
}

// A variable naming extra certificates that the host has set is passed to
// a plugin with network, with its file readable (a file under /tmp, which
// the plugin's mount namespace hides, is put back) and both listed in
// $PLUGHOST_GRANTS; a plugin without network gets neither.
func TestCertEnvWithNetwork(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil { // as root the plugin is uid 65534
		t.Fatal(err)
	}
	cert := dir + "/corp-ca.pem"
	if err := os.WriteFile(cert, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A link to it, in another directory the plugin's namespace hides:
	// the path given is put back, not only where it leads.
	links := t.TempDir()
	if err := os.Chmod(links, 0o755); err != nil {
		t.Fatal(err)
	}
	link := links + "/ca.pem"
	if err := os.Symlink(cert, link); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		pol  Policy
		file string
		want string
	}{
		"all, a link": {Policy{Net: NetAll}, link, "SSL_CERT_FILE: read; granted: true true"},
		"all":         {Policy{Net: NetAll}, cert, "SSL_CERT_FILE: read; granted: true true"},
		"list":        {Policy{Net: NetList, NetAllow: []string{"127.0.0.1:443"}}, cert, "SSL_CERT_FILE: read; granted: true true"},
		"none":        {Policy{}, cert, "SSL_CERT_FILE: unset; granted: false false"},
	} {
		t.Run(name, func(t *testing.T) {
			out, _, err := runLookup(t, Options{}, &c.pol, "localhost", "SANDBOX_TEST_CERT=1", "SSL_CERT_FILE="+c.file)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(out, "; "+c.want+"\n") {
				t.Errorf("plugin output = %q, want it to end with %q", out, c.want)
			}
		})
	}
}

// hiddenLinks: a link under a hidden directory is put back (a program
// opens the path it was given), unless a directory put back holds it.
func TestHiddenLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if !within(dir, "/tmp") {
		t.Skipf("the test's temporary directory %s is not under /tmp", dir)
	}
	target := dir + "/target.pem"
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"/alone", "/granted/inside"} {
		if err := os.MkdirAll(filepath.Dir(dir+l), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, dir+l); err != nil {
			t.Fatal(err)
		}
	}
	got := hiddenLinks([]string{dir + "/alone", dir + "/granted/inside", target, "/etc/hosts"}, []string{target, dir + "/granted"})
	if want := []string{dir + "/alone"}; !slices.Equal(got, want) {
		t.Errorf("hiddenLinks = %v, want %v", got, want)
	}
}
