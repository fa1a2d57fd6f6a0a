package packages

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		command string
		args    []string
		want    *Spec // nil: not a package runner
		err     string
	}{
		"npx -y scoped": {command: "npx", args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"},
			want: &Spec{Runner: "npx", Manager: NPM, Name: "@modelcontextprotocol/server-filesystem", Args: []string{"/srv/docs"}}},
		"npx version": {command: "/usr/bin/npx", args: []string{"@acme/notes-mcp@1.2.3"},
			want: &Spec{Runner: "npx", Manager: NPM, Name: "@acme/notes-mcp", Version: "1.2.3", Args: []string{}}},
		"npx --yes range and --": {command: "npx", args: []string{"--yes", "--", "notes-mcp@^1", "--verbose"},
			want: &Spec{Runner: "npx", Manager: NPM, Name: "notes-mcp", Version: "^1", Args: []string{"--verbose"}}},
		"npx -p pkg bin": {command: "npx", args: []string{"-y", "-p", "@acme/tools@2", "acme-notes", "x"},
			want: &Spec{Runner: "npx", Manager: NPM, Name: "@acme/tools", Version: "2", Bin: "acme-notes", Args: []string{"x"}}},
		"npx --package=": {command: "npx", args: []string{"--package=@acme/tools", "acme-notes"},
			want: &Spec{Runner: "npx", Manager: NPM, Name: "@acme/tools", Bin: "acme-notes", Args: []string{}}},
		"bunx": {command: "bunx", args: []string{"--bun", "notes-mcp@latest"},
			want: &Spec{Runner: "bunx", Manager: NPM, Name: "notes-mcp", Version: "latest", Args: []string{}}},
		"uvx": {command: "uvx", args: []string{"mcp-server-fetch"},
			want: &Spec{Runner: "uvx", Manager: Pip, Name: "mcp-server-fetch", Args: []string{}}},
		"uvx ==": {command: "uvx", args: []string{"mcp-server-time==2025.1.0", "--local-timezone=UTC"},
			want: &Spec{Runner: "uvx", Manager: Pip, Name: "mcp-server-time", Version: "2025.1.0", Args: []string{"--local-timezone=UTC"}}},
		"uvx @ and --from": {command: "uvx", args: []string{"--from", "acme-tools@1.0", "acme-notes"},
			want: &Spec{Runner: "uvx", Manager: Pip, Name: "acme-tools", Version: "1.0", Bin: "acme-notes", Args: []string{}}},
		"pipx run": {command: "pipx", args: []string{"run", "mcp-server-fetch>=1,<2"},
			want: &Spec{Runner: "pipx run", Manager: Pip, Name: "mcp-server-fetch", Version: ">=1,<2", Args: []string{}}},
		"pipx install is no server": {command: "pipx", args: []string{"install", "x"}},
		"node is no runner":         {command: "node", args: []string{"/opt/server.js"}},
		"npx git URL":               {command: "npx", args: []string{"-y", "github:acme/notes"}, err: "not an npm registry package"},
		"npx unknown option":        {command: "npx", args: []string{"-c", "echo"}, err: `npx option "-c"`},
		"npx nothing":               {command: "npx", args: []string{"-y"}, err: "no package named"},
		"uvx --python":              {command: "uvx", args: []string{"--python", "3.12", "x"}, err: `uvx option "--python"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, ok, err := Parse(tc.command, tc.args)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !ok {
					t.Fatalf("Parse = %v, %v; want the error %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok != (tc.want != nil) {
				t.Fatalf("ok = %v", ok)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseUnsupportedIsErrUnsupported(t *testing.T) {
	t.Parallel()
	if _, _, err := Parse("npx", []string{"./local"}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported", err)
	}
}

// TestNPMSettings: the registry, scoped registries, the CA file and the
// proxies reach the install step; tokens and passwords do not, unless
// granted.
func TestNPMSettings(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	rc := `; the user's own
registry=https://npm.corp.example/
@acme:registry=https://npm.acme.example/
//npm.acme.example/:_authToken=${ACME_TOKEN}
//npm.corp.example/:_auth=dXNlcjpwYXNz
cafile=/etc/corp/ca.pem
https-proxy=http://proxy.corp.example:3128
email=me@example.com
color=always
`
	if err := os.WriteFile(filepath.Join(home, ".npmrc"), []byte(rc), 0o600); err != nil {
		t.Fatal(err)
	}
	global := filepath.Join(home, "global-npmrc")
	if err := os.WriteFile(global, []byte("cafile=/etc/global/ca.pem\nregistry=https://global.example/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ACME_TOKEN": "s3cret"}
	environ := []string{"npm_config_strict_ssl=false", "NPM_CONFIG_NOPROXY=localhost", "npm_config_cache=/x", "HOME=" + home}
	tests := map[string]struct {
		auth bool
		want string
	}{
		"without credentials": {want: "@acme:registry=https://npm.acme.example/\ncafile=/etc/corp/ca.pem\nhttps-proxy=http://proxy.corp.example:3128\n" +
			"noproxy=localhost\nregistry=https://npm.corp.example/\nstrict-ssl=false\n"},
		"granted": {auth: true, want: "//npm.acme.example/:_authToken=s3cret\n//npm.corp.example/:_auth=dXNlcjpwYXNz\n" +
			"@acme:registry=https://npm.acme.example/\ncafile=/etc/corp/ca.pem\nemail=me@example.com\nhttps-proxy=http://proxy.corp.example:3128\n" +
			"noproxy=localhost\nregistry=https://npm.corp.example/\nstrict-ssl=false\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := NPMSettings([]string{global, filepath.Join(home, ".npmrc"), filepath.Join(home, "missing")}, environ,
				func(k string) string { return env[k] }, tc.auth)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, s.NPMRC); diff != "" {
				t.Errorf("NPMRC (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"/etc/corp/ca.pem"}, s.Read); diff != "" {
				t.Errorf("Read (-want +got):\n%s", diff)
			}
			if !tc.auth && strings.Contains(s.NPMRC, "s3cret") {
				t.Error("the token reached the step")
			}
		})
	}
}

func TestNPMConfigs(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		env      map[string]string
		want     []string
		wantUser string
	}{
		"defaults":  {want: []string{"/usr/etc/npmrc", "/home/me/.npmrc"}, wantUser: "/home/me/.npmrc"},
		"prefix":    {env: map[string]string{"npm_config_prefix": "/opt/npm"}, want: []string{"/opt/npm/etc/npmrc", "/home/me/.npmrc"}, wantUser: "/home/me/.npmrc"},
		"variables": {env: map[string]string{"npm_config_globalconfig": "/g", "npm_config_userconfig": "/u"}, want: []string{"/g", "/u"}, wantUser: "/u"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, user := NPMConfigs("/home/me", "/nonexistent/usr/bin/node", func(k string) string { return tc.env[k] })
			if tc.env["npm_config_globalconfig"] == "" && tc.env["npm_config_prefix"] == "" {
				tc.want[0] = "/nonexistent/usr/etc/npmrc"
			}
			if diff := cmp.Diff(tc.want, got); diff != "" || user != tc.wantUser {
				t.Fatalf("NPMConfigs (-want +got):\n%s\nuser %q", diff, user)
			}
		})
	}
}

// TestLockDigest: the lock's digest covers each package's version and
// integrity, not the lockfile's root name or layout.
func TestLockDigest(t *testing.T) {
	t.Parallel()
	write := func(body string) string {
		p := filepath.Join(t.TempDir(), "package-lock.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := `{"name":"a","lockfileVersion":3,"packages":{"":{"dependencies":{"x":"1.0.0"}},
	  "node_modules/x":{"version":"1.0.0","integrity":"sha512-AAAA"},"node_modules/y":{"version":"2.0.0","integrity":"sha512-BBBB"}}}`
	d0, n, err := LockDigest(write(base))
	if err != nil || n != 2 {
		t.Fatalf("LockDigest = %s, %d, %v", d0, n, err)
	}
	tests := map[string]struct {
		lock string
		same bool
	}{
		"root renamed, members reordered": {same: true, lock: `{"lockfileVersion":3,"name":"b","packages":{
		  "node_modules/y":{"integrity":"sha512-BBBB","version":"2.0.0"},"node_modules/x":{"version":"1.0.0","integrity":"sha512-AAAA"},"":{}}}`},
		"another integrity": {lock: strings.Replace(base, "sha512-BBBB", "sha512-CCCC", 1)},
		"another version":   {lock: strings.Replace(base, `"version":"2.0.0"`, `"version":"2.0.1"`, 1)},
		"one more package": {lock: strings.Replace(base, `"node_modules/y"`, `"node_modules/z":{"version":"1.0.0","integrity":"sha512-DDDD"},
		  "node_modules/y"`, 1)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, _, err := LockDigest(write(tc.lock))
			if err != nil {
				t.Fatal(err)
			}
			if (d == d0) != tc.same {
				t.Fatalf("digest %s vs %s: same = %v, want %v", d, d0, d == d0, tc.same)
			}
		})
	}
}

// TestStepError: a failed step says what npm said, without its
// boilerplate.
func TestStepError(t *testing.T) {
	t.Parallel()
	stderr := `npm error code E404
npm error 404 Not Found - GET http://127.0.0.1:4873/@acme%2fnope - no such package available
npm error 404
npm error 404  The requested resource '@acme/nope@*' could not be found or you do not have permission to access it.
npm error Log files were not written due to the config logs-max=0
`
	err := stepError("resolve", &Spec{Manager: NPM, Name: "@acme/nope"}, []byte(stderr), errors.New("exit status 1"))
	want := `cannot resolve @acme/nope (exit status 1):
npm error 404 Not Found - GET http://127.0.0.1:4873/@acme%2fnope - no such package available
npm error 404  The requested resource '@acme/nope@*' could not be found or you do not have permission to access it.`
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Fatalf("stepError (-want +got):\n%s", diff)
	}
}

// TestNPMEntry: the program run is the package's only bin, the one named
// apart, or the one named as the package.
func TestNPMEntry(t *testing.T) {
	t.Parallel()
	tree := t.TempDir()
	pkg := func(name, bin string) {
		dir := filepath.Join(tree, "node_modules", filepath.FromSlash(name))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"bin":`+bin+`}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pkg("@acme/one", `"dist/index.js"`)
	pkg("@acme/two", `{"two":"a.js","other":"b.js"}`)
	pkg("@acme/evil", `"../../../../etc/passwd"`)
	tests := map[string]struct {
		name, bin, want, err string
	}{
		"string bin":       {name: "@acme/one", want: "node_modules/@acme/one/dist/index.js"},
		"named as package": {name: "@acme/two", want: "node_modules/@acme/two/a.js"},
		"named apart":      {name: "@acme/two", bin: "other", want: "node_modules/@acme/two/b.js"},
		"no such program":  {name: "@acme/two", bin: "three", err: `has no program "three" (its bin: [other two])`},
		"outside the tree": {name: "@acme/evil", err: "is outside the package"},
		"not installed":    {name: "@acme/none", err: "is not installed"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := npmEntry(tree, tc.name, tc.bin)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("npmEntry = %q, %v; want the error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != filepath.Join(tree, tc.want) {
				t.Fatalf("npmEntry = %q, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestPipSettings(t *testing.T) {
	t.Parallel()
	env := map[string]string{"PIP_INDEX_URL": "https://me:s3cret@pypi.corp.example/simple/", "PIP_EXTRA_INDEX_URL": "https://a.example/simple/ https://b.example/simple/",
		"PIP_CERT": "/etc/corp/ca.pem", "PIP_PROXY": "http://proxy:3128"}
	tests := map[string]struct {
		auth bool
		want []string
	}{
		"without credentials": {want: []string{"--index-url", "https://pypi.corp.example/simple/", "--extra-index-url", "https://a.example/simple/",
			"--extra-index-url", "https://b.example/simple/", "--cert", "/etc/corp/ca.pem", "--proxy", "http://proxy:3128"}},
		"granted": {auth: true, want: []string{"--index-url", "https://me:s3cret@pypi.corp.example/simple/", "--extra-index-url", "https://a.example/simple/",
			"--extra-index-url", "https://b.example/simple/", "--cert", "/etc/corp/ca.pem", "--proxy", "http://proxy:3128"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args, read := PipSettings(func(k string) string { return env[k] }, tc.auth)
			if diff := cmp.Diff(tc.want, args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"/etc/corp/ca.pem"}, read); diff != "" {
				t.Errorf("read (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPipLockDigest(t *testing.T) {
	t.Parallel()
	digest := func(body string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "requirements.txt"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := pipLockDigest(dir)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a := digest("a==1.0 --hash=sha256:aa\nb==2.0 --hash=sha256:bb\n")
	if b := digest("b==2.0 --hash=sha256:bb\na==1.0 --hash=sha256:aa\n"); a != b {
		t.Error("the order of requirements.txt changed the digest")
	}
	if c := digest("a==1.0 --hash=sha256:aa\nb==2.0 --hash=sha256:bc\n"); a == c {
		t.Error("another wheel hash gave the same digest")
	}
}
