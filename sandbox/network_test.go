package sandbox

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// fakeMachine builds, under a temporary root, a machine's resolver and
// certificate files the way Debian with systemd-resolved lays them out,
// and returns its netFiles and root.
func fakeMachine(t *testing.T) (*netFiles, string) {
	t.Helper()
	root := t.TempDir()
	file := func(p string) {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(p, to string) {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(to, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{
		"run/systemd/resolve/stub-resolv.conf", "run/systemd/resolve/resolv.conf",
		"run/systemd/resolve/io.systemd.Resolve", // the varlink socket (a file will do)
		"run/NetworkManager/no-stub-resolv.conf", "run/nscd/socket",
		"etc/hosts", "etc/nsswitch.conf", "etc/services", // no gai.conf, host.conf, protocols
		"etc/ssl/certs/ca-certificates.crt", "etc/ssl/openssl.cnf", "etc/ssl/private/server.key",
		"usr/share/ca-certificates/mozilla/Root_CA.crt", "usr/local/share/ca-certificates/corp.crt",
		"opt/corp/ca.pem", "opt/extra.pem", "opt/d1/x.pem", "opt/d2/y.pem",
	} {
		file(f)
	}
	link("etc/resolv.conf", "../run/systemd/resolve/stub-resolv.conf")
	link("etc/ssl/certs/Root_CA.pem", filepath.Join(root, "usr/share/ca-certificates/mozilla/Root_CA.crt"))
	link("etc/ssl/certs/corp.pem", filepath.Join(root, "usr/local/share/ca-certificates/corp.crt"))
	link("etc/ssl/certs/1a2b3c4d.0", "corp.pem")
	link("etc/ssl/certs/outside.pem", filepath.Join(root, "opt/corp/ca.pem")) // an administrator's link elsewhere
	link("etc/ssl/certs/key.pem", "../private/server.key")                    // never granted through a link
	link("usr/lib/ssl/certs", "../../../etc/ssl/certs")
	link("usr/lib/ssl/private", "../../../etc/ssl/private")
	link("usr/lib/ssl/openssl.cnf", "../../../etc/ssl/openssl.cnf")
	link("etc/ssl/certs/keys", "../private") // the private directory itself: never granted either
	in := func(ps ...string) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = filepath.Join(root, p)
		}
		return out
	}
	return &netFiles{
		resolvConf:    filepath.Join(root, "etc/resolv.conf"),
		resolvTargets: in("run/systemd/resolve/stub-resolv.conf", "run/systemd/resolve/resolv.conf", "run/NetworkManager/*resolv.conf", "run/resolvconf/resolv.conf"),
		resolverFiles: in("etc/hosts", "etc/nsswitch.conf", "etc/gai.conf", "etc/host.conf", "etc/services", "etc/protocols"),
		certFiles:     in("etc/ssl/certs", "etc/ssl/cert.pem", "etc/ssl/openssl.cnf", "etc/pki/tls/certs", "etc/ca-certificates", "usr/share/ca-certificates", "usr/local/share/ca-certificates"),
		opensslDirs:   in("etc/ssl", "usr/local/ssl"),
		caBundles:     in("etc/ssl/certs/ca-certificates.crt", "etc/pki/tls/certs/ca-bundle.crt", "etc/ssl/cert.pem"),
	}, root
}

// NODE_EXTRA_CA_CERTS is set to the system's bundle for a plugin with
// network when the host has none: the first bundle that exists.
func TestNodeCAEnv(t *testing.T) {
	t.Parallel()
	files, root := fakeMachine(t)
	debian := "NODE_EXTRA_CA_CERTS=" + filepath.Join(root, "etc/ssl/certs/ca-certificates.crt")
	all, list := &Policy{Net: NetAll}, &Policy{Net: NetList, NetAllow: []string{"registry.example.com:443"}}
	for name, tc := range map[string]struct {
		pol  *Policy
		env  []string
		want string
	}{
		"no network":          {pol: &Policy{}, want: ""},
		"all":                 {pol: all, env: []string{"HOME=/root"}, want: debian},
		"list":                {pol: list, want: debian},
		"the host's own":      {pol: all, env: []string{"NODE_EXTRA_CA_CERTS=/opt/corp.pem"}, want: ""},
		"the host's, empty":   {pol: all, env: []string{"NODE_EXTRA_CA_CERTS="}, want: debian},
		"SSL_CERT_FILE alone": {pol: all, env: []string{"SSL_CERT_FILE=/opt/corp.pem"}, want: debian},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := files.nodeCAEnv(tc.pol, tc.env); got != tc.want {
				t.Errorf("nodeCAEnv = %q, want %q", got, tc.want)
			}
		})
	}
	fedora := *files
	fedora.caBundles = []string{filepath.Join(root, "etc/pki/tls/certs/ca-bundle.crt"), filepath.Join(root, "etc/ssl/certs"), filepath.Join(root, "etc/hosts")}
	if got, want := fedora.nodeCAEnv(all, nil), "NODE_EXTRA_CA_CERTS="+filepath.Join(root, "etc/hosts"); got != want {
		t.Errorf("nodeCAEnv skipping a missing file and a directory = %q, want %q", got, want)
	}
}

func TestNetworkGrants(t *testing.T) {
	t.Parallel()
	files, root := fakeMachine(t)
	r := func(p string) string { return filepath.Join(root, p) }
	env := []string{"HOME=/root", "SSL_CERT_FILE=" + r("opt/extra.pem"), "SSL_CERT_DIR=" + r("opt/d1") + ":" + r("opt/d2") + ":relative",
		"NODE_EXTRA_CA_CERTS=" + r("opt/missing.pem"), "GIT_SSL_CAINFO=" + r("opt/corp/ca.pem"), "PIP_CERT="}
	resolver := []string{r("etc/resolv.conf"), r("run/systemd/resolve/stub-resolv.conf"), r("run/systemd/resolve/resolv.conf"), r("run/NetworkManager/no-stub-resolv.conf")}
	common := []string{r("etc/hosts"), r("etc/nsswitch.conf"), r("etc/services"),
		r("etc/ssl/certs"), r("etc/ssl/openssl.cnf"), r("usr/share/ca-certificates"), r("usr/local/share/ca-certificates"),
		r("usr/lib/ssl/certs"), r("usr/lib/ssl/openssl.cnf"), // the system's OPENSSLDIR, linking into /etc/ssl
		r("opt/extra.pem"), r("opt/d1"), r("opt/d2"), r("opt/corp/ca.pem")}
	for name, tc := range map[string]struct {
		pol      Policy
		want     []string // among read
		notWant  []string // not among read
		wantVars []string
	}{
		"none":         {pol: Policy{}, notWant: slices.Concat(resolver, common)},
		"none, named":  {pol: Policy{Net: NetNone}, notWant: slices.Concat(resolver, common)},
		"all":          {pol: Policy{Net: NetAll}, want: slices.Concat(resolver, common), wantVars: []string{"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS"}},
		"list: no DNS": {pol: Policy{Net: NetList, NetAllow: []string{"api.example.com:443"}}, want: common, notWant: resolver, wantVars: []string{"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			read, vars, _ := files.grants(&tc.pol, env, []string{r("usr/lib/ssl")})
			for _, w := range tc.want {
				if !slices.Contains(read, w) {
					t.Errorf("%s not granted; read = %v", w, read)
				}
			}
			for _, w := range tc.notWant {
				if slices.Contains(read, w) {
					t.Errorf("%s granted; read = %v", w, read)
				}
			}
			for _, p := range read {
				if strings.Contains(p, "private") || strings.Contains(p, "io.systemd") || strings.Contains(p, "nscd") ||
					strings.HasSuffix(p, "gai.conf") || strings.Contains(p, "missing") {
					t.Errorf("granted %s (keys, sockets and paths that do not exist never are)", p)
				}
			}
			if !slices.Equal(vars, tc.wantVars) {
				t.Errorf("vars = %v, want %v", vars, tc.wantVars)
			}
		})
	}
}

// A relative link whose directory is reached through a link leads from
// the directory's real place, not from the path as named.
func TestLinkChainRelativeInLinkedDir(t *testing.T) {
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := func(p string) string { return filepath.Join(root, p) }
	for _, f := range []string{"real/ca.pem", "ca.pem"} { // the second, a decoy where ".." leads lexically
		if err := os.MkdirAll(filepath.Dir(r(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(r(f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(r("real/certs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../ca.pem", r("real/certs/ca.pem")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real/certs", r("alias")); err != nil {
		t.Fatal(err)
	}
	got := linkChain(r("alias/ca.pem"))
	if want := []string{r("alias/ca.pem"), r("real/ca.pem")}; !slices.Equal(got, want) {
		t.Errorf("linkChain = %v, want %v", got, want)
	}
}

// A certificate variable never grants keys, nor "/", /etc or the home
// directory and its parents: such a path is refused (and reported); the
// variable is still passed.
func TestNetworkGrantsCertVarRefused(t *testing.T) {
	t.Parallel()
	files, root := fakeMachine(t)
	r := func(p string) string { return filepath.Join(root, p) }
	for _, f := range []string{"home/u/ca.pem", "opt/ssl/certs/a.pem", "opt/ssl/private/k.key"} {
		if err := os.MkdirAll(filepath.Dir(r(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(r(f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(r("etc/ssl/private"), r("opt/keys")); err != nil { // a link to the private directory itself
		t.Fatal(err)
	}
	if err := os.Symlink(r("etc/ssl"), r("opt/sslink")); err != nil { // a link to a directory holding one
		t.Fatal(err)
	}
	home := r("home/u")
	for name, tc := range map[string]struct {
		value   string // of SSL_CERT_DIR
		granted bool
	}{
		"a certificate directory":          {value: r("opt/d1"), granted: true},
		"a file in home":                   {value: r("home/u/ca.pem"), granted: true},
		"/etc/ssl, holding private":        {value: r("etc/ssl"), granted: false},
		"the private directory":            {value: r("etc/ssl/private"), granted: false},
		"the private directory, slash":     {value: r("etc/ssl/private") + "/", granted: false},
		"a key":                            {value: r("etc/ssl/private/server.key"), granted: false},
		"a link to the private directory":  {value: r("opt/keys"), granted: false},
		"a link to a directory holding it": {value: r("opt/sslink"), granted: false},
		"a link named private":             {value: r("usr/lib/ssl"), granted: false},
		"another directory holding it":     {value: r("opt/ssl"), granted: false},
		"root":                             {value: "/", granted: false},
		"/etc":                             {value: "/etc", granted: false},
		"/etc/":                            {value: "/etc/", granted: false},
		"home":                             {value: home, granted: false},
		"home's parent":                    {value: r("home"), granted: false},
		"home's grandparent":               {value: root, granted: false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := []string{"HOME=" + home, "SSL_CERT_DIR=" + tc.value}
			read, vars, refused := files.grants(&Policy{Net: NetAll}, env, nil)
			p := filepath.Clean(tc.value)
			if got := slices.Contains(read, p); got != tc.granted {
				t.Errorf("%s granted = %v, want %v; refused = %v", p, got, tc.granted, refused)
			}
			if got := len(refused) == 1; got == tc.granted {
				t.Errorf("refused = %v, want it refused: %v", refused, !tc.granted)
			}
			if !slices.Contains(vars, "SSL_CERT_DIR") {
				t.Errorf("vars = %v, want SSL_CERT_DIR passed", vars)
			}
			for _, g := range read {
				if isPrivate(g) || g == "/" || g == "/etc" || within(home, g) && g != r("home/u/ca.pem") {
					t.Errorf("granted %s", g)
				}
			}
		})
	}
}

// The real machine: whatever it has, keys and sockets are never granted
// and every path granted exists.
func TestNetworkGrantsThisMachine(t *testing.T) {
	t.Parallel()
	read, _, _ := NetworkGrants(&Policy{Net: NetAll}, nil)
	for _, p := range read {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("granted %s: %v", p, err)
		}
		if strings.Contains(p, "/private") || strings.Contains(p, "nscd") || strings.Contains(p, "io.systemd") {
			t.Errorf("granted %s", p)
		}
	}
	if _, err := os.Stat("/etc/resolv.conf"); err == nil && !slices.Contains(read, "/etc/resolv.conf") {
		t.Errorf("/etc/resolv.conf not granted: %v", read)
	}
}

func TestOpenSSLDirOf(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lib := filepath.Join(dir, "libcrypto.so.3")
	if err := os.WriteFile(lib, []byte("\x7fELF\x00junk\x00OPENSSLDIR: \"/usr/lib/ssl\"\x00more"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := opensslDirOf(lib); got != "/usr/lib/ssl" {
		t.Errorf("opensslDirOf = %q, want /usr/lib/ssl", got)
	}
	if err := os.WriteFile(lib, []byte("\x7fELF no dir"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := opensslDirOf(lib); got != "" {
		t.Errorf("opensslDirOf = %q, want none", got)
	}
}

// testDNS serves the names of zone (name → IPv4 address; every other name
// NXDOMAIN) over UDP on a loopback port, and returns a resolver asking it.
func testDNS(t *testing.T, zone map[string]string) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		name := strings.TrimSuffix(strings.ToLower(q.Question[0].Name), ".")
		addr, ok := zone[name]
		switch {
		case !ok:
			m.Rcode = dns.RcodeNameError
		case q.Question[0].Qtype == dns.TypeA:
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.ParseIP(addr)})
		}
		w.WriteMsg(m)
	})}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

func TestConfinedNames(t *testing.T) {
	t.Parallel()
	r := testDNS(t, map[string]string{"api.example.test": "192.0.2.7"})
	hosts, nss, err := confinedNames(t.Context(), r, []string{"api.example.test:443", "API.example.test.:8443", "10.1.2.3:22", "[::1]:80", "localhost:8080"}, resolveTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(hosts); !strings.Contains(got, "\n192.0.2.7\tapi.example.test\n") || strings.Count(got, "api.example.test") != 1 ||
		!strings.Contains(got, "127.0.0.1\tlocalhost\n") || strings.Count(got, "\tlocalhost") != 2 || strings.Contains(got, "10.1.2.3") {
		t.Errorf("hosts file:\n%s", got)
	}
	if !strings.Contains(string(nss), "\nhosts: files\n") {
		t.Errorf("nsswitch.conf:\n%s", nss)
	}
	_, _, err = confinedNames(t.Context(), r, []string{"api.example.test:443", "gone.example.test:443"}, resolveTimeout)
	if err == nil || !strings.Contains(err.Error(), `allow_net "gone.example.test:443"`) {
		t.Errorf("an unresolvable name: err = %v, want one naming its entry", err)
	}
	for _, bad := range []string{"a b:443", "evil\n1.2.3.4 bank.example:443", "#x:1"} {
		if err := (&Policy{Net: NetList, NetAllow: []string{bad}}).Check(); err == nil {
			t.Errorf("Check accepted allow_net %q", bad)
		}
	}
}

// slowResolver answers like testDNS's r, each query after delay, or not
// before ctx ends.
func slowResolver(r *net.Resolver, delay time.Duration) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return r.Dial(ctx, network, addr)
	}}
}

// Each name gets its own timeout: several slow names, each within it, all
// resolve though together they take longer.
func TestConfinedNamesTimeoutPerName(t *testing.T) {
	t.Parallel()
	zone := map[string]string{}
	var entries []string
	for _, n := range strings.Split("abcdefghij", "") {
		zone[n+".example.test"] = "192.0.2.1"
		entries = append(entries, n+".example.test:443")
	}
	r := slowResolver(testDNS(t, zone), 100*time.Millisecond)
	if _, _, err := confinedNames(t.Context(), r, entries, time.Second); err != nil {
		t.Errorf("10 names of 100 ms or so each, 1 s per name: %v", err)
	}
}

// The caller's context ending stops the lookups at once.
func TestConfinedNamesCanceled(t *testing.T) {
	t.Parallel()
	r := slowResolver(testDNS(t, map[string]string{"a.example.test": "192.0.2.1"}), time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, _, err := confinedNames(ctx, r, []string{"a.example.test:443"}, resolveTimeout)
	if err == nil || time.Since(start) > resolveTimeout/2 {
		t.Errorf("confinedNames after cancel = %v in %v, want an error at once", err, time.Since(start))
	}
}

// validHost is the rule ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}$, checked by
// hand (the regular expression's compilation was a cost of every
// process's start).
func TestValidHostIsItsRule(t *testing.T) {
	t.Parallel()
	rule := regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_.-]{0,252})$`)
	hosts := []string{"", "a", "api.example.com", "_srv.x", "-a", ".a", "a-", "a.", "a b", "a:b", "ä.example",
		"x\x00", strings.Repeat("a", 253), strings.Repeat("a", 254), "a" + strings.Repeat(".", 252), "a" + strings.Repeat("-", 253)}
	for _, h := range hosts {
		if got, want := validHost(h), rule.MatchString(h); got != want {
			t.Errorf("validHost(%q) = %v, want %v", h, got, want)
		}
	}
}

// OPENSSLDIR is an absolute path of at most 256 bytes in quotes.
func TestOpenSSLDirOfBounds(t *testing.T) {
	t.Parallel()
	lib := filepath.Join(t.TempDir(), "libcrypto.so.3")
	for dir, want := range map[string]string{
		"/" + strings.Repeat("d", 255): "/" + strings.Repeat("d", 255),
		"/" + strings.Repeat("d", 256): "",
		"relative/ssl":                 "",
		"":                             "",
	} {
		if err := os.WriteFile(lib, []byte("junk OPENSSLDIR: \""+dir+"\"\x00"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := opensslDirOf(lib); got != want {
			t.Errorf("OPENSSLDIR %q: opensslDirOf = %q, want %q", dir, got, want)
		}
	}
}
