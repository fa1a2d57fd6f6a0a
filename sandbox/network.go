package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// CertEnv lists the variables naming extra certificates that a plugin with
// network gets from the host's environment, when set there, with the files
// and directories they name granted read-only. SSL_CERT_DIR may list
// several directories, separated by ':'.
var CertEnv = []string{"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT"}

// netFiles are the paths NetworkGrants looks at (tests use their own).
type netFiles struct {
	resolvConf    string   // the resolver's configuration
	resolvTargets []string // globs of the files it commonly links to
	resolverFiles []string // read by name resolution besides resolv.conf
	certFiles     []string // the certificate stores
	opensslDirs   []string // the usual OPENSSLDIRs; the system's own is added
	caBundles     []string // the system store as one file, by preference (NodeCAEnv)
}

// machineNetFiles are this machine's.
var machineNetFiles = netFiles{
	resolvConf: "/etc/resolv.conf",
	resolvTargets: []string{
		"/run/systemd/resolve/stub-resolv.conf", "/run/systemd/resolve/resolv.conf",
		"/run/NetworkManager/*resolv.conf", "/run/resolvconf/resolv.conf",
	},
	resolverFiles: []string{"/etc/hosts", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/host.conf", "/etc/services", "/etc/protocols"},
	certFiles: []string{
		"/etc/ssl/certs", "/etc/ssl/cert.pem", "/etc/ssl/openssl.cnf",
		"/etc/pki/tls/certs", "/etc/pki/tls/cert.pem", "/etc/pki/tls/openssl.cnf", "/etc/pki/ca-trust",
		"/etc/ca-certificates", "/usr/share/ca-certificates", "/usr/local/share/ca-certificates",
	},
	opensslDirs: []string{"/usr/lib/ssl", "/usr/local/ssl", "/etc/ssl", "/etc/pki/tls"},
	caBundles:   []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"},
}

// NodeCAEnv returns the "NODE_EXTRA_CA_CERTS=FILE" entry that a plugin
// under pol gets, with env the plugin's prepared environment (the host's
// own), or "" for none.
//
// Node ignores the system certificate store (nodejs.org's builds and
// NodeSource's alike: its bundled CAs, plus the file NODE_EXTRA_CA_CERTS
// names), so a node server reaching a host whose certificate chains to a
// CA the administrator installed in the store (a company's proxy, an
// internal registry) fails outside the box unless the user set that
// variable; and inside it unless the host had it set. So that a plugin
// with network works as it does outside in that common case too, one whose
// policy permits outbound traffic (NetAll, NetList) gets
// NODE_EXTRA_CA_CERTS set to the system's bundle when the host has none:
// the first of /etc/ssl/certs/ca-certificates.crt (Debian),
// /etc/pki/tls/certs/ca-bundle.crt (Fedora) and /etc/ssl/cert.pem (Alpine)
// that exists, which [NetworkGrants] grants already. Every such plugin, not
// only those the host sees run node: the sandbox sees a declared server's
// wrapper, or a plugin that starts node as a child, and the variable means
// nothing to other programs. The host's own value, when set, is passed
// through instead ([CertEnv]); a declaration's env may set its own.
func NodeCAEnv(pol *Policy, env []string) string {
	return machineNetFiles.nodeCAEnv(pol, env)
}

func (f *netFiles) nodeCAEnv(pol *Policy, env []string) string {
	if m := pol.net(); m != NetAll && m != NetList {
		return ""
	}
	if envValue(env, "NODE_EXTRA_CA_CERTS") != "" {
		return ""
	}
	for _, b := range f.caBundles {
		if fi, err := os.Stat(b); err == nil && fi.Mode().IsRegular() {
			return "NODE_EXTRA_CA_CERTS=" + b
		}
	}
	return ""
}

// libcryptoGlobs find the system's libcrypto.
var libcryptoGlobs = []string{"/usr/lib/*/libcrypto.so.*", "/usr/lib64/libcrypto.so.*", "/usr/lib/libcrypto.so.*", "/lib/*/libcrypto.so.*", "/lib64/libcrypto.so.*"}

// NetworkGrants returns what a plugin under pol needs, beyond its policy,
// for name resolution and TLS on this machine: read lists the paths that exist, as named and, for links,
// where they lead; vars the names of the variables of [CertEnv] set in env
// (the plugin's prepared environment, the host's own), to pass through;
// refused the paths those variables name that are not granted, and why.
// All are nil when pol permits no outbound traffic. In list mode
// resolv.conf is left out: names come from the private hosts file.
//
// A program that fetches https://api.example.com/ reads files before its
// first packet: the resolver's configuration to turn the name into an
// address, and the certificate store to check who answers. A sandboxed
// plugin reads nothing it was not granted, so a plugin whose allow_net
// permits outbound traffic (NetAll, NetList) is granted them too,
// read-only: NetworkGrants says which on this machine; the launcher applies them to every plugin
// and declared server (stdio or remote) with network, and lists them in
// $PLUGHOST_GRANTS' allow_read and the host's debug log ("network
// grants"). Without network none of it is granted, and no variable below is
// passed: such a plugin's name lookups fail at once (EAI_AGAIN in node,
// "no such host" in Go).
//
// Name resolution (glibc, musl, Go and node all read these):
//
//   - /etc/resolv.conf and every link on its way to the file (systemd-
//     resolved's /run/systemd/resolve/stub-resolv.conf or resolv.conf,
//     NetworkManager's /run/NetworkManager/*resolv.conf, resolvconf's
//     /run/resolvconf/resolv.conf); those files are granted whenever they
//     exist, so that a link switched among them after the launch still
//     leads somewhere readable. Under /run, which the plugin does not see,
//     each file is put back on its own: a daemon that replaces one by
//     renaming a new file over it leaves the plugin the one of its launch
//     until it restarts (the stub's content never changes);
//   - /etc/hosts, /etc/nsswitch.conf, /etc/gai.conf, /etc/host.conf,
//     /etc/services, /etc/protocols.
//
// Certificates:
//
//   - /etc/ssl/certs (Debian's ca-certificates.crt and the hashed links
//     OpenSSL looks certificates up by), /etc/ssl/cert.pem (Alpine's,
//     and OpenSSL's default file where its directory is /etc/ssl, as in
//     the node binaries of nodejs.org), /etc/ssl/openssl.cnf;
//   - Fedora's /etc/pki/tls/certs, /etc/pki/tls/cert.pem,
//     /etc/pki/tls/openssl.cnf and /etc/pki/ca-trust (which those link
//     into);
//   - where the certificates come from: /etc/ca-certificates,
//     /usr/share/ca-certificates, /usr/local/share/ca-certificates (an
//     administrator's own CA: update-ca-certificates links it into
//     /etc/ssl/certs), and the target of every link in the certificate
//     directories that leads elsewhere;
//   - the certs, cert.pem and openssl.cnf of the directory the system's
//     OpenSSL was built with (OPENSSLDIR: Debian's /usr/lib/ssl, which
//     links into /etc/ssl), read from the libcrypto the dynamic linker
//     would load (its "OPENSSLDIR: ..." string), without running openssl;
//     and of the usual ones (/usr/lib/ssl, /usr/local/ssl, /etc/ssl,
//     /etc/pki/tls).
//
// The variables naming further certificates ([CertEnv]: SSL_CERT_FILE and
// SSL_CERT_DIR for OpenSSL, Go and most programs, NODE_EXTRA_CA_CERTS for
// node, REQUESTS_CA_BUNDLE for Python's requests, CURL_CA_BUNDLE for curl
// and programs that follow it, PIP_CERT for pip) are passed through when
// the host has them set, and the files and directories they name granted,
// except a path that is "/", /etc, $HOME or one of its parents, a
// "private" directory or beneath one, or a directory holding an entry
// named "private" (SSL_CERT_DIR=/etc/ssl would grant /etc/ssl/private):
// that path is refused whole, returned in refused, and the launcher logs
// a warning; the variable is still passed through (the plugin cannot read
// what it names).
// When the host has no NODE_EXTRA_CA_CERTS, the launcher sets it to the
// system's bundle ([NodeCAEnv]): node reads no other store.
//
// Not granted, on purpose:
//
//   - /etc/ssl/private, and whatever "private" a certificate directory
//     holds: keys, not certificates;
//   - nscd's socket (/var/run/nscd/socket) and systemd-resolved's varlink
//     socket (/run/systemd/resolve/io.systemd.Resolve). Landlock before
//     ABI 9 cannot stop connect() to a pathname unix socket, so the
//     sandbox keeps every socket out of the plugin's sight (/run and /var
//     are hidden) rather than grant one: these are services running
//     outside the box, for the whole machine (nscd answers passwd and
//     group lookups too). Neither is needed: without nscd's socket glibc
//     resolves by itself, and without the varlink socket nss-resolve says
//     UNAVAIL, after which glibc's dns module reads resolv.conf and asks
//     the server it names (127.0.0.53, resolved's stub, for one) like
//     any other;
//   - proxy settings (HTTPS_PROXY and friends): their values may carry
//     credentials; the operator passes them with env = [...].
//
// allow_net as a list: exactly those names.
// With allow_net = ["api.example.com:443"] the host resolves each listed
// name at launch through its own resolver ([Options.Resolver]), writes a
// hosts file with those names and their addresses (and localhost) and an
// nsswitch.conf saying "hosts: files", and the stage mounts them read-only
// over /etc/hosts and /etc/nsswitch.conf in the plugin's mount namespace
// (layer net-names). resolv.conf is not granted, and the seccomp filter
// refuses UDP sockets in list mode, so no DNS query leaves the plugin: a
// listed name resolves to what the host found, any other fails at once
// (ENOTFOUND in node). A listed name that does not resolve at launch fails
// the start, naming the entry. The addresses are the host's answer at
// launch: a plugin keeps them until it restarts.
//
// Names are confined, addresses are not: Landlock restricts connect() by
// port only, so a plugin that knows an address may connect to it on a
// listed port; the hosts file keeps a well-behaved program to its names,
// it does not stop a hostile one. Where the machine refuses namespaces
// there is no private /etc/hosts: the report lists net-names as missing
// (the host logs it), and names are not confined.
func NetworkGrants(pol *Policy, env []string) (read, vars, refused []string) {
	return machineNetFiles.grants(pol, env, systemOpenSSLDir())
}

// grants is NetworkGrants over the paths of f, with the system's
// OPENSSLDIR sysSSL (none when empty).
func (f *netFiles) grants(pol *Policy, env []string, sysSSL []string) (read, vars, refused []string) {
	mode := pol.net()
	if mode != NetAll && mode != NetList {
		return nil, nil, nil
	}
	home := envValue(env, "HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	var paths []string
	if mode == NetAll {
		paths = append(paths, linkChain(f.resolvConf)...)
		for _, g := range f.resolvTargets {
			m, _ := filepath.Glob(g)
			paths = append(paths, m...)
		}
	}
	paths = append(paths, f.resolverFiles...)
	paths = append(paths, f.certFiles...)
	for _, d := range slices.Concat(f.opensslDirs, sysSSL) {
		paths = append(paths, filepath.Join(d, "certs"), filepath.Join(d, "cert.pem"), filepath.Join(d, "openssl.cnf"))
	}
	for _, name := range CertEnv {
		v := envValue(env, name)
		if v == "" {
			continue
		}
		vars = append(vars, name)
		for _, p := range filepath.SplitList(v) {
			if !filepath.IsAbs(p) {
				continue
			}
			p = filepath.Clean(p)
			if why := unsafeCertPath(p, home); why != "" {
				refused = append(refused, name+"="+p+": "+why)
				continue
			}
			paths = append(paths, p)
		}
	}
	for _, p := range paths {
		for _, q := range linkChain(p) {
			if !slices.Contains(read, q) {
				read = append(read, q)
			}
		}
	}
	read = append(read, linkTargets(read, home)...)
	return read, vars, refused
}

// isPrivate reports whether p is a directory named "private" or beneath one.
func isPrivate(p string) bool {
	return filepath.Base(p) == "private" || strings.Contains(p+"/", "/private/")
}

// unsafeCertPath says why path, named by a variable of [CertEnv], is not
// granted, "" when it may be: when it, any link on its way or where it
// leads is "/", /etc, home (the user's home directory) or one of home's
// parents; is a "private" directory or beneath one; or is a directory
// that holds an entry named "private" (SSL_CERT_DIR=/etc/ssl would grant
// /etc/ssl/private, the keys: the user's group ssl-cert, when they are in
// it, still reads them in the sandbox's user namespace). Such a path is
// refused whole, not narrowed to its certificates: the host's variable is
// a mistake worth fixing, which the launcher logs.
func unsafeCertPath(path, home string) string {
	chain := linkChain(path)
	if real, err := filepath.EvalSymlinks(path); err == nil {
		chain = append(chain, real)
	}
	for _, p := range chain {
		switch {
		case p == "/" || p == "/etc":
			return p + " is too broad"
		case home != "" && home != "/" && within(filepath.Clean(home), p):
			return p + " holds the home directory"
		case isPrivate(p):
			return p + " is a private directory (keys)"
		}
		if _, err := os.Lstat(filepath.Join(p, "private")); err == nil {
			return p + " holds a private directory (keys)"
		}
	}
	return ""
}

// linkChain returns path, when it exists, and every file a chain of
// symbolic links starting at it passes through, ending with the file
// itself: /etc/resolv.conf, /run/systemd/resolve/stub-resolv.conf. A path
// whose last element is no link (its directories may be) is returned
// alone. A relative link is followed from its directory's real path.
func linkChain(path string) []string {
	var out []string
	for range 16 {
		fi, err := os.Lstat(path)
		if err != nil {
			return out
		}
		out = append(out, path)
		if fi.Mode()&os.ModeSymlink == 0 {
			return out
		}
		to, err := os.Readlink(path)
		if err != nil {
			return out
		}
		if !filepath.IsAbs(to) {
			// Relative to the link's directory where it really is: when
			// that is reached through a link itself, "..", joined
			// lexically, would lead elsewhere.
			dir, err := filepath.EvalSymlinks(filepath.Dir(path))
			if err != nil {
				return out
			}
			to = filepath.Join(dir, to)
		}
		path = filepath.Clean(to)
	}
	return out
}

// linkTargets returns the files that links in the directories among
// granted (the certificate directories: resolver files are files) lead
// to, when no granted path holds them already: a CA an administrator
// linked into /etc/ssl/certs from elsewhere. A "private" directory is never
// looked into, nor granted through a link, nor is any target
// [unsafeCertPath] refuses (a directory holding one, "/", /etc, home).
func linkTargets(granted []string, home string) []string {
	var out []string
	covered := func(p string) bool {
		return slices.ContainsFunc(slices.Concat(granted, out), func(g string) bool { return within(p, g) })
	}
	for _, dir := range granted {
		if filepath.Base(dir) == "private" {
			continue
		}
		entries, err := os.ReadDir(dir) // fails on a file
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.Type()&os.ModeSymlink == 0 {
				continue
			}
			real, err := filepath.EvalSymlinks(filepath.Join(dir, e.Name()))
			if err != nil || covered(real) || unsafeCertPath(real, home) != "" {
				continue
			}
			if len(out) == 256 {
				return out // a store of links into everywhere: enough
			}
			out = append(out, real)
		}
	}
	return out
}

// systemOpenSSLDir is the OPENSSLDIR of the system's libcrypto, nil when
// none is found: read once from the library's "OPENSSLDIR: "DIR"" string.
var systemOpenSSLDir = sync.OnceValue(func() []string {
	var libs []string
	for _, g := range libcryptoGlobs {
		m, _ := filepath.Glob(g)
		libs = append(libs, m...)
	}
	for _, lib := range libs {
		if dir := opensslDirOf(lib); dir != "" {
			return []string{dir}
		}
	}
	return nil
})

// opensslDirOf returns the OPENSSLDIR a libcrypto was built with, "" when
// it says none.
func opensslDirOf(lib string) string {
	fi, err := os.Stat(lib)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 64<<20 {
		return ""
	}
	b, err := os.ReadFile(lib)
	if err != nil {
		return ""
	}
	const prefix = `OPENSSLDIR: "`
	i := bytes.Index(b, []byte(prefix))
	if i < 0 {
		return ""
	}
	// An absolute path of at most 256 bytes, neither '"' nor NUL, then
	// '"'. (Read by hand: a regular expression with a {0,255} repetition
	// cost every plughost process, the sandbox stage included, 0.7 ms and
	// 800 allocations to compile at init.)
	rest := b[i+len(prefix) : min(len(b), i+len(prefix)+257)]
	end := bytes.IndexAny(rest, "\"\x00")
	if end < 1 || rest[0] != '/' || rest[end] != '"' {
		return ""
	}
	return filepath.Clean(string(rest[:end]))
}

// resolveTimeout bounds the resolution of each of allow_net's names at
// launch.
const resolveTimeout = 10 * time.Second

// validHost reports whether host is a name allow_net may list: 1 to 253
// of [A-Za-z0-9_.-], the first neither '.' nor '-'. (Checked by hand: the
// regular expression ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}$ cost every
// plughost process, the sandbox stage included, 1.3 ms and 3,600
// allocations to compile at init.)
func validHost(host string) bool {
	if host == "" || len(host) > 253 {
		return false
	}
	for i := range len(host) {
		switch c := host[i]; {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_':
		case (c == '.' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// checkNetHost reports whether the host part of an allow_net entry is an
// IP address, a host name or empty (any host on that port).
func checkNetHost(hostport string) error {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return fmt.Errorf("%q is not host:port", hostport)
	}
	if host == "" || net.ParseIP(host) != nil || validHost(host) {
		return nil
	}
	return fmt.Errorf("%q: %q is neither a host name nor an IP address", hostport, host)
}

// confinedNames resolves the names of allow_net's entries with r and
// returns the hosts file and nsswitch.conf that let exactly those resolve
// (see [NetworkGrants]). A name that does not resolve is an
// error naming its entry. Each lookup gets its own timeout (a slow name
// does not eat the others' time); ctx ending stops them all.
func confinedNames(ctx context.Context, r *net.Resolver, entries []string, timeout time.Duration) (hosts, nsswitch []byte, err error) {
	if r == nil {
		r = net.DefaultResolver
	}
	var b bytes.Buffer
	b.WriteString("# Written by plughost: the names of this plugin's allow_net, resolved by the host at launch.\n# No other name resolves here.\n")
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	seen := map[string]bool{}
	for _, hp := range entries {
		if err := checkNetHost(hp); err != nil {
			return nil, nil, fmt.Errorf("allow_net: %w", err)
		}
		host, _, _ := net.SplitHostPort(hp)
		host = strings.TrimSuffix(strings.ToLower(host), ".")
		if host == "" || host == "localhost" || net.ParseIP(host) != nil || seen[host] {
			continue // localhost is there already
		}
		seen[host] = true
		lctx, cancel := context.WithTimeout(ctx, timeout)
		addrs, err := r.LookupIPAddr(lctx, host)
		cancel()
		if err == nil && len(addrs) == 0 {
			err = fmt.Errorf("no address")
		}
		if err != nil {
			return nil, nil, fmt.Errorf("allow_net %q: the host cannot resolve %s: %w", hp, host, err)
		}
		for _, a := range addrs {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, host)
		}
	}
	return b.Bytes(), []byte("# Written by plughost: names come from /etc/hosts only (allow_net's list).\nhosts: files\n"), nil
}
