package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plughost/plughost/sandbox"
)

// A server granted the network works as it does outside (issue 29): a
// name resolves through the machine's resolver configuration and a
// certificate verifies against a CA installed in the system store.
//
// The machine's own files are left alone: plughost runs in a private mount
// namespace (unshare -m) where a resolv.conf naming the test's DNS server
// (on a loopback address, port 53) is mounted over /etc/resolv.conf, and a
// copy of /etc/ssl/certs holding a test CA, installed as
// update-ca-certificates would (its file in /usr/local/share/ca-certificates,
// linked into /etc/ssl/certs with OpenSSL's hashed name, appended to
// ca-certificates.crt), over the store. Four declared servers then fetch
// https://some.test.name:PORT/ from the test's HTTPS server: a node server
// of our own (plain node, which reads no system store: the sandbox sets
// NODE_EXTRA_CA_CERTS to the store's bundle, the host having none) with
// allow_net = "all" gets the page; the same without
// allow_net gets a resolution error; with allow_net listing
// some.test.name:PORT it gets the page, and other.test.name (which the
// same DNS server answers) does not resolve; and a remote declaration
// (plughost's own Go client) reaches https://some.test.name:PORT/mcp.
// Run as root, and again with plughost as uid 1000.
func TestNetworkNamesAndCertificates(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a private mount namespace over /etc and a DNS server on port 53")
	}
	t.Parallel()
	for _, tool := range []string{"unshare", "mount", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s (util-linux) is needed: %v", tool, err)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is needed: %v", err)
	}
	if node, err = filepath.EvalSymlinks(node); err != nil {
		t.Fatal(err)
	}
	w := newNetWorld(t)
	t.Run("host uid 0", func(t *testing.T) { w.run(t, -1, node) })
	t.Run("host uid 1000", func(t *testing.T) { w.run(t, 1000, node) })
}

// netWorld is the test's outside world: a CA, an HTTPS server whose
// certificate it signed, and a DNS server naming it (and the further
// names newNetWorld is given, all on 127.0.0.1).
type netWorld struct {
	caPEM   []byte
	caHash  string // OpenSSL's subject hash of the CA: its link's name in a hashed directory
	dnsAddr string // the DNS server's loopback address (port 53)
	port    string // the HTTPS server's port
}

func newNetWorld(t *testing.T, names ...string) *netWorld {
	t.Helper()
	known := map[string]bool{"some.test.name.": true, "other.test.name.": true}
	for _, n := range names {
		known[strings.ToLower(n)+"."] = true
	}
	w := &netWorld{}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	const caName = "plughost test CA"
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: caName},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	w.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	w.caHash = opensslSubjectHash(t, strings.ToLower(caName))
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "some.test.name"},
		DNSNames:  []string{"some.test.name", "other.test.name"}, // other.test.name fails by its name alone
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}

	// The HTTPS server: a page, and an MCP server for the remote
	// declaration.
	remote := mcp.NewServer(&mcp.Implementation{Name: "tls-remote", Version: "1"}, nil)
	mcp.AddTool(remote, &mcp.Tool{Name: "remote_hello"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello over TLS"}}}, nil, nil
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return remote },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true})) // reached as some.test.name on loopback
	mux.HandleFunc("/", func(rw http.ResponseWriter, r *http.Request) { fmt.Fprintf(rw, "hello from %s", r.Host) })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, w.port, _ = net.SplitHostPort(l.Addr().String())
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: key}}}}
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })

	// The DNS server: some.test.name, other.test.name (and names) are
	// 127.0.0.1; every other name does not exist. resolv.conf cannot name a port, so
	// it listens on port 53 of an address of 127/8 of its own.
	handler := dns.HandlerFunc(func(rw dns.ResponseWriter, q *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(q)
		m.Authoritative = true
		name := strings.ToLower(q.Question[0].Name)
		switch {
		case !known[name]:
			m.Rcode = dns.RcodeNameError
		case q.Question[0].Qtype == dns.TypeA:
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5}, A: net.IPv4(127, 0, 0, 1)})
		}
		rw.WriteMsg(m)
	})
	for attempt := 0; ; attempt++ {
		b := make([]byte, 2)
		rand.Read(b)
		addr := fmt.Sprintf("127.53.%d.%d", b[0], 1+b[1]%250)
		pc, perr := net.ListenPacket("udp", addr+":53")
		tl, terr := net.Listen("tcp", addr+":53")
		if perr == nil && terr == nil {
			w.dnsAddr = addr
			for _, s := range []*dns.Server{{PacketConn: pc, Handler: handler}, {Listener: tl, Handler: handler}} {
				go s.ActivateAndServe()
				t.Cleanup(func() { s.Shutdown() })
			}
			break
		}
		for _, c := range []interface{ Close() error }{pc, tl} {
			if c != nil {
				c.Close()
			}
		}
		if attempt == 10 {
			t.Fatalf("no loopback address for the DNS server: %v, %v", perr, terr)
		}
	}
	return w
}

// opensslSubjectHash is OpenSSL's X509_NAME_hash of a name holding one
// common name, already in canonical form (lowercase, single spaces): the
// first four bytes, little-endian, of the SHA-1 of the name's RDNs encoded
// as a SET of one SEQUENCE {OID, UTF8String}, without the outer SEQUENCE.
func opensslSubjectHash(t *testing.T, cn string) string {
	t.Helper()
	type attr struct {
		Type  asn1.ObjectIdentifier
		Value string `asn1:"utf8"`
	}
	rdn, err := asn1.MarshalWithParams([]attr{{asn1.ObjectIdentifier{2, 5, 4, 3}, cn}}, "set")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum(rdn)
	return fmt.Sprintf("%08x", binary.LittleEndian.Uint32(sum[:4]))
}

// run serves the four declared servers with plughost as uid (the test's
// own when negative) in a private mount namespace holding the test's
// resolver and store, and checks what each can reach.
func (w *netWorld) run(t *testing.T, uid int, node string) {
	base, err := os.MkdirTemp("", "plughost-net-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	dir := func(name string) string {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write := func(path string, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plugins, server := dir("plugins"), dir("server")
	mounts := w.systemFiles(t, base)

	// The node server: MCP over stdio by hand, one tool (named by its
	// argument) that fetches a URL with node's https module.
	script := filepath.Join(server, "fetch.js")
	write(script, []byte(fetchServerJS))
	url := "https://some.test.name:" + w.port + "/"
	decl := func(name string) {
		declare(t, plugins, name, map[string]any{"command": node, "args": []string{script, name}})
	}
	decl("fetch_all")
	decl("fetch_none")
	decl("fetch_list")
	declare(t, plugins, "tls_remote", map[string]any{"url": "https://some.test.name:" + w.port + "/mcp"})
	config := filepath.Join(base, "plughost.hcl")
	write(config, []byte(fmt.Sprintf(`sandbox {
  plugin "fetch_all" {
    allow_net  = "all"
    allow_read = [%[1]q]
  }
  plugin "fetch_none" {
    allow_read = [%[1]q]
  }
  plugin "fetch_list" {
    allow_net  = ["some.test.name:%[2]s"]
    allow_read = [%[1]q]
  }
}
`, server, w.port)))

	state, data, cache := dir("state"), dir("data"), dir("cache")
	args := []string{bin.plughost, "serve", "--plugins", plugins, "--config", config, "--log-level", "debug"}
	if uid >= 0 {
		filepath.Walk(base, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, uid, uid) })
		args = append([]string{"setpriv", "--reuid", fmt.Sprint(uid), "--regid", fmt.Sprint(uid), "--clear-groups"}, args...)
	}
	os.Chmod(base, 0o755)
	if err := os.Chmod(bin.dir, 0o755); err != nil { // uid 1000 and 65534 run what TestMain built
		t.Fatal(err)
	}
	cmd := unshared(mounts, args...)
	// Only the system store: none of the variables that name further
	// certificates (this machine's environment sets some).
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !slices.Contains(sandbox.CertEnv, name) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "XDG_DATA_HOME="+data, "XDG_CACHE_HOME="+cache, "XDG_STATE_HOME="+state, "HOME="+base)

	c := connectServe(t, cmd, 2*time.Minute, base)
	for _, tool := range []string{"fetch_all", "fetch_none", "fetch_list"} {
		c.awaitTool(t, tool)
	}
	fetch := func(tool, url string) (string, bool) {
		t.Helper()
		res, err := c.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"url": url}})
		if err != nil {
			t.Fatalf("call %s: %v", tool, err)
		}
		return text(res), res.IsError
	}
	want := "hello from some.test.name:" + w.port
	if got, isErr := fetch("fetch_all", url); isErr || got != want {
		t.Errorf(`allow_net = "all": fetch %s = %q (isError %v), want %q`, url, got, isErr, want)
	}
	if got, isErr := fetch("fetch_none", url); !isErr || !(strings.HasPrefix(got, "EAI_AGAIN") || strings.HasPrefix(got, "ENOTFOUND")) {
		t.Errorf("no allow_net: fetch %s = %q (isError %v), want a resolution error", url, got, isErr)
	}
	if got, isErr := fetch("fetch_list", url); isErr || got != want {
		t.Errorf("allow_net listing some.test.name: fetch %s = %q (isError %v), want %q", url, got, isErr, want)
	}
	other := "https://other.test.name:" + w.port + "/"
	if got, isErr := fetch("fetch_list", other); !isErr || !strings.HasPrefix(got, "ENOTFOUND") {
		t.Errorf("allow_net listing some.test.name: fetch %s = %q (isError %v), want ENOTFOUND", other, got, isErr)
	}
	c.awaitTool(t, "remote_hello") // listed once plughost's own client has verified the server's certificate
	if got := c.call(t, "remote_hello", nil); got != "hello over TLS" {
		t.Errorf("remote_hello = %q", got)
	}
	// Where the operator looks: the grants are in the debug log.
	c.stderr.await(t, "network grants: name resolution and certificates")
	c.stderr.await(t, "allow_net: only these names resolve")
}

// systemFiles writes under base the machine's resolver configuration and
// certificate store as the test's world wants them — a resolv.conf naming
// its DNS server, a copy of /etc/ssl/certs with the test CA installed as
// update-ca-certificates would — and returns the bind mounts (file or
// directory, over what) that put them in place in a private mount
// namespace (unshared).
func (w *netWorld) systemFiles(t *testing.T, base string) (mounts [][2]string) {
	t.Helper()
	dir := func(name string) string {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write := func(path string, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	certs, localCA := dir("certs"), dir("local-ca")
	write(filepath.Join(base, "resolv.conf"), []byte("nameserver "+w.dnsAddr+"\noptions timeout:2 attempts:2\n"))

	// The test CA, installed as update-ca-certificates would.
	write(filepath.Join(localCA, "plughost-test-ca.crt"), w.caPEM)
	entries, err := os.ReadDir("/etc/ssl/certs")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		src, dst := filepath.Join("/etc/ssl/certs", e.Name()), filepath.Join(certs, e.Name())
		switch {
		case e.Type()&os.ModeSymlink != 0:
			to, _ := os.Readlink(src)
			err = os.Symlink(to, dst)
		case e.Type().IsRegular():
			var b []byte
			if b, err = os.ReadFile(src); err == nil {
				err = os.WriteFile(dst, b, 0o644)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	bundle, _ := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	write(filepath.Join(certs, "ca-certificates.crt"), append(bundle, w.caPEM...))
	// The administrator's copy lives in /usr/local/share/ca-certificates
	// (mounted from localCA); a machine without that directory gets it in
	// the store itself.
	caFile := "/usr/local/share/ca-certificates/plughost-test-ca.crt"
	mounts = [][2]string{
		{filepath.Join(base, "resolv.conf"), "/etc/resolv.conf"}, {certs, "/etc/ssl/certs"}, {localCA, "/usr/local/share/ca-certificates"}}
	if _, err := os.Stat("/usr/local/share/ca-certificates"); err != nil {
		caFile, mounts = "/etc/ssl/certs/plughost-test-ca.crt", mounts[:2]
		write(filepath.Join(certs, "plughost-test-ca.crt"), w.caPEM)
	}
	if err := os.Symlink(caFile, filepath.Join(certs, "plughost-test-ca.pem")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("plughost-test-ca.pem", filepath.Join(certs, w.caHash+".0")); err != nil {
		t.Fatal(err)
	}
	return mounts
}

// unshared is the command args run in a private mount namespace where
// mounts (as systemFiles returns them) are bound in place.
func unshared(mounts [][2]string, args ...string) *exec.Cmd {
	sh := "set -e\n"
	for _, m := range mounts {
		sh += fmt.Sprintf("mount --bind %q %q\n", m[0], m[1])
	}
	sh += `exec "$@"`
	return exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c", sh, "sh"}, args...)...)
}

// fetchServerJS is an MCP server over stdio written by hand with node's
// built-ins only: its one tool, named by its first argument (default
// "fetch"), fetches the URL it is given (or, when FETCH_URL is set, that
// one, and takes no arguments) and answers the body, or the error's code
// and message.
const fetchServerJS = `'use strict';
const https = require('https');
const readline = require('readline');
const tool = process.argv[2] || 'fetch';
const fixed = process.env.FETCH_URL;
const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  let m;
  try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined) return; // a notification
  const reply = (result) => send({ jsonrpc: '2.0', id: m.id, result });
  switch (m.method) {
    case 'initialize':
      return reply({ protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: tool, version: '1.0.0' } });
    case 'ping':
      return reply({});
    case 'tools/list':
      return reply({ tools: [{ name: tool, description: 'Fetches a URL over HTTPS',
        inputSchema: fixed ? { type: 'object' } : { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] } }] });
    case 'tools/call': {
      const done = (text, isError) => reply({ content: [{ type: 'text', text }], isError });
      https.get(fixed || m.params.arguments.url, { timeout: 20000 }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d) => { body += d; });
        res.on('end', () => done(body, false));
      }).on('error', (e) => done(e.code + ': ' + e.message, true));
      return;
    }
    default:
      send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'no method ' + m.method } });
  }
});
`
