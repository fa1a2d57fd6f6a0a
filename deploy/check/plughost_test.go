package check

import (
	"flag"
	"fmt"
	"go/version"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"

	"github.com/plughost/plughost/host/config"
)

// repoRoot is the plughost repository, whose module the replace directive
// points at.
const repoRoot = "../.."

// shutdownTail is what plughost takes after --shutdown-grace: 2s for the
// handlers to answer the calls the grace period cancelled (streamable.Serve)
// and 2s for the plugins to stop (the manager's default StopTimeout).
const shutdownTail = 4 * time.Second

// serveFlag is one flag of `plughost serve`, as its -h lists it.
type serveFlag struct {
	takesValue bool
	def        string // the default it prints; "" when none
}

// plughostBin is the plughost binary the tests run: $PLUGHOST_BIN (make
// deploy-check passes bin/plughost), else one built once from the
// repository into a temporary directory, which TestMain removes.
var plughostBin = sync.OnceValues(func() (string, error) {
	if bin := os.Getenv("PLUGHOST_BIN"); bin != "" {
		return bin, nil
	}
	dir, err := os.MkdirTemp("", "deploy-check-")
	if err != nil {
		return "", err
	}
	builtDir = dir
	bin := filepath.Join(dir, "plughost")
	build := exec.Command("go", "-C", repoRoot, "build", "-o", bin, "./cmd/plughost")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building plughost: %v\n%s", err, out)
	}
	return bin, nil
})

// builtDir is the temporary directory of a plughost plughostBin built.
var builtDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

// serveFlags runs `plughost serve -h` once.
var serveFlags = sync.OnceValues(func() (map[string]serveFlag, error) {
	bin, err := plughostBin()
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(bin, "serve", "-h").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s serve -h: %v\n%s", bin, err, out)
	}
	return parseUsage(string(out))
})

var (
	usageFlag    = regexp.MustCompile(`^  -([a-z0-9-]+)(?: (\w+))?$`)
	usageDefault = regexp.MustCompile(`\(default "?([^")]*)"?\)$`)
)

// parseUsage reads the flags out of a flag.FlagSet's PrintDefaults.
func parseUsage(usage string) (map[string]serveFlag, error) {
	flags := map[string]serveFlag{}
	var last string
	for line := range strings.SplitSeq(usage, "\n") {
		if m := usageFlag.FindStringSubmatch(line); m != nil {
			last = m[1]
			flags[last] = serveFlag{takesValue: m[2] != ""}
			continue
		}
		if m := usageDefault.FindStringSubmatch(line); m != nil && last != "" {
			f := flags[last]
			f.def = m[1]
			flags[last] = f
		}
	}
	if len(flags) < 5 || flags["http"] == (serveFlag{}) {
		return nil, fmt.Errorf("no flags found in the usage:\n%s", usage)
	}
	return flags, nil
}

// serveArgs parses the plughost container's arguments as plughost serve
// does (package flag), with the flags of the real binary, and returns the
// value of each flag, its default when the arguments do not set it.
func serveArgs(t *testing.T, c *corev1.Container) map[string]string {
	t.Helper()
	known, err := serveFlags()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Command) > 0 {
		t.Fatalf("the container overrides the image's entrypoint (%q): keep it, set args", c.Command)
	}
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("the container's args %q are not `serve ...`", c.Args)
	}
	out, err := parseServeArgs(known, c.Args[1:])
	if err != nil {
		t.Fatalf("the container's args %q: %v", c.Args, err)
	}
	return out
}

// parseServeArgs parses arguments as plughost serve does (package flag),
// with the flags of the real binary, and returns the value of each flag
// that takes one, its default when the arguments do not set it.
func parseServeArgs(known map[string]serveFlag, args []string) (map[string]string, error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	values := map[string]*string{}
	for name, f := range known {
		if f.takesValue {
			values[name] = fs.String(name, f.def, "")
		} else {
			fs.Bool(name, false, "")
		}
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("plughost serve would refuse them: %w", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("plughost serve would refuse the argument %q", fs.Arg(0))
	}
	out := map[string]string{}
	for name, v := range values {
		out[name] = *v
	}
	return out, nil
}

// TestServeArguments: the container runs `plughost serve` with flags the
// real binary has, on all interfaces at the container's port, with the
// plugins where the image puts them; the pod's grace period outlasts the
// drain delay, the shutdown grace and what follows them.
func TestServeArguments(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	d, c := m.plughost(t)
	args := serveArgs(t, c)

	host, port, err := net.SplitHostPort(args["http"])
	if err != nil {
		t.Fatalf("--http %q: %v", args["http"], err)
	}
	if host != "0.0.0.0" && host != "" && host != "::" {
		t.Errorf("--http listens on %s: the kubelet's probes and the Service reach the pod's IP, so listen on all interfaces", host)
	}
	if len(c.Ports) == 0 || strconv.Itoa(int(c.Ports[0].ContainerPort)) != port {
		t.Errorf("--http port %s is not the container's port %v", port, c.Ports)
	}
	if plugins := dockerfilePluginDir(t); path.Clean(args["plugins"]) != plugins {
		t.Errorf("--plugins %q is not where the Dockerfile puts the plugins (%s)", args["plugins"], plugins)
	}

	durations := map[string]time.Duration{}
	for _, name := range []string{"drain-delay", "shutdown-grace"} {
		v, err := time.ParseDuration(args[name])
		if err != nil {
			t.Fatalf("--%s %q: %v", name, args[name], err)
		}
		durations[name] = v
	}
	if durations["drain-delay"] <= 0 {
		t.Error("no --drain-delay: the listener would close while balancers still send requests")
	}
	grace := 30 * time.Second // Kubernetes's default
	if g := d.Spec.Template.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	need := durations["drain-delay"] + durations["shutdown-grace"] + shutdownTail
	if grace <= need {
		t.Errorf("terminationGracePeriodSeconds is %v, not more than --drain-delay + --shutdown-grace + %v = %v: the kubelet would kill plughost mid-shutdown",
			grace, shutdownTail, need)
	}
	if pre := c.Lifecycle; pre != nil && pre.PreStop != nil && pre.PreStop.Sleep != nil {
		if grace <= need+time.Duration(pre.PreStop.Sleep.Seconds)*time.Second {
			t.Errorf("terminationGracePeriodSeconds %v does not cover the preStop sleep too", grace)
		}
	}
}

// plughostHCL returns the --config file the container reads: a ConfigMap
// key mounted at that path.
func plughostHCL(t *testing.T, m *manifests) (key string, src []byte) {
	t.Helper()
	d, c := m.plughost(t)
	cfgPath := serveArgs(t, c)["config"]
	if cfgPath == "" {
		t.Fatal("no --config")
	}
	for _, vm := range c.VolumeMounts {
		rel, err := filepath.Rel(vm.MountPath, cfgPath)
		if err != nil || strings.HasPrefix(rel, "..") || vm.SubPath != "" {
			continue
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name != vm.Name || v.ConfigMap == nil {
				continue
			}
			key = rel
			for _, it := range v.ConfigMap.Items {
				if it.Path == rel {
					key = it.Key
				}
			}
			o, ok := m.find("v1/ConfigMap", v.ConfigMap.Name)
			if !ok {
				t.Fatalf("--config %s: no ConfigMap %s", cfgPath, v.ConfigMap.Name)
			}
			data, ok := o.obj.(*corev1.ConfigMap).Data[key]
			if !ok {
				t.Fatalf("--config %s: ConfigMap %s has no key %s", cfgPath, v.ConfigMap.Name, key)
			}
			return key, []byte(data)
		}
	}
	t.Fatalf("--config %s is in no ConfigMap volume the container mounts", cfgPath)
	return "", nil
}

// TestConfigMapIsPlughostConfig: the ConfigMap's plughost.hcl is HCL that
// plughost's own host/config parses (its tasks block included), whose
// tasks.redis.address names a Service of the manifests (or a host outside
// them), and which holds no secret.
func TestConfigMapIsPlughostConfig(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	key, src := plughostHCL(t, m)
	file, diags := hclsyntax.ParseConfig(src, key, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s is not HCL: %v", key, diags)
	}
	if _, err := config.Parse(src, key); err != nil {
		t.Errorf("host/config refuses %s: %v", key, err)
	}
	var noSecrets func(b *hclsyntax.Body)
	noSecrets = func(b *hclsyntax.Body) {
		for name, a := range b.Attributes {
			if name == "password" || name == "token" || name == "state_key" || name == "secret" {
				t.Errorf("%s: %s sets %s: secrets come from the Secret, through the environment", key, a.NameRange, name)
			}
		}
		for _, child := range b.Blocks {
			noSecrets(child.Body)
		}
	}
	noSecrets(file.Body.(*hclsyntax.Body))

	addr := ""
	for _, b := range file.Body.(*hclsyntax.Body).Blocks {
		if b.Type != "tasks" {
			continue
		}
		for _, r := range b.Body.Blocks {
			if a, ok := r.Body.Attributes["address"]; ok && r.Type == "redis" {
				v, diags := a.Expr.Value(nil)
				if diags.HasErrors() || !v.Type().Equals(cty.String) {
					t.Fatalf("tasks.redis.address is not a string: %v", diags)
				}
				addr = v.AsString()
			}
		}
	}
	if addr == "" {
		t.Fatal("no tasks { redis { address } } in " + key)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("tasks.redis.address %q: %v", addr, err)
	}
	if strings.Contains(host, ".") {
		return // a managed Redis outside the manifests
	}
	o, ok := m.find("v1/Service", host)
	if !ok {
		t.Fatalf("tasks.redis.address %q names no Service of the manifests", addr)
	}
	found := false
	for _, p := range o.obj.(*corev1.Service).Spec.Ports {
		found = found || strconv.Itoa(int(p.Port)) == port
	}
	if !found {
		t.Errorf("tasks.redis.address %q: Service %s has no port %s", addr, host, port)
	}
}

// dockerfile returns deploy/Dockerfile's lines, continuations joined.
func dockerfile(t *testing.T) []string {
	t.Helper()
	src := string(bytesOf(t, "../Dockerfile"))
	src = strings.ReplaceAll(src, "\\\n", " ")
	var lines []string
	for line := range strings.SplitSeq(src, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

// dockerfileMatch returns the submatches of the first line matching re.
func dockerfileMatch(t *testing.T, re string) []string {
	t.Helper()
	r := regexp.MustCompile(re)
	for _, l := range dockerfile(t) {
		if m := r.FindStringSubmatch(l); m != nil {
			return m
		}
	}
	t.Fatalf("deploy/Dockerfile has no line matching %s", re)
	return nil
}

// dockerfileUID is the uid of the final image's USER.
func dockerfileUID(t *testing.T) int64 {
	t.Helper()
	uid, err := strconv.ParseInt(dockerfileMatch(t, `^USER (\d+)(?::\d+)?$`)[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return uid
}

// dockerfilePluginDir is where the final image holds the plugins.
func dockerfilePluginDir(t *testing.T) string {
	t.Helper()
	return path.Clean(dockerfileMatch(t, `^COPY --from=build /out/plugins/ (\S+)$`)[1])
}

// TestDockerfile: deploy/Dockerfile builds with a Go no older than
// go.mod's, builds every binary without cgo (see its comment), and its
// final image runs as the Deployment's non-root uid.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	goMod := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(bytesOf(t, filepath.Join(repoRoot, "go.mod")))
	if goMod == nil {
		t.Fatal("no go line in go.mod")
	}
	goImage := dockerfileMatch(t, `^FROM golang:(\d+\.\d+\.\d+)-bookworm AS build$`)[1]
	if version.Compare("go"+goImage, "go"+string(goMod[1])) < 0 {
		t.Errorf("the Dockerfile builds with Go %s, older than go.mod's %s", goImage, goMod[1])
	}
	builds := 0
	for _, l := range dockerfile(t) {
		for _, cmd := range strings.Split(l, "&&") {
			if strings.Contains(cmd, "go build") {
				builds++
				if !strings.Contains(cmd, "CGO_ENABLED=0 go build") {
					t.Errorf("a go build without CGO_ENABLED=0: %s", strings.TrimSpace(cmd))
				}
			}
		}
	}
	if builds < 2 {
		t.Errorf("the Dockerfile has %d go build commands, want plughost's and the plugins'", builds)
	}
	if uid := dockerfileUID(t); uid == 0 {
		t.Error("the image runs as root")
	}
	if dir := dockerfilePluginDir(t); !filepath.IsAbs(dir) {
		t.Errorf("the plugins go to %q, not an absolute path", dir)
	}
}
