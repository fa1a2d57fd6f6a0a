package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The Node.js example plugin (examples/node-plugin, its packages installed
// by `npm ci` there, which `make test` runs), and the contract it loads.
var (
	nodeExample   = filepath.Join("..", "..", "examples", "node-plugin")
	contractProto = filepath.Join("..", "..", "pluginproto", "proto", "plugin.proto")
)

// The example carries a copy of plugin.proto, so that it can be copied out
// of the repository; the copy is the contract.
func TestNodeExampleProtoIsTheContract(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile(contractProto)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(nodeExample, "proto", "plugin.proto"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("examples/node-plugin/proto/plugin.proto differs from pluginproto/proto/plugin.proto: copy it again")
	}
}

// nodeProject lays the example out as an author would deploy it: the
// project in a directory of its own (node_modules included, here a link to
// the example's), its #! line naming the node binary, and the plugin
// directory holding a link named hello to plugin.mjs. It returns the
// plugin directory and the project's.
func nodeProject(t *testing.T, base string) (plugins, proj string) {
	return nodeProjectOf(t, base, nodeExample, "hello")
}

// nodeProjectOf is nodeProject for the Node.js example in dir (its
// plugin.mjs, package files and proto/ directory), linked into the plugin
// directory as name.
func nodeProjectOf(t *testing.T, base, example, name string) (plugins, proj string) {
	t.Helper()
	for _, f := range []string{nodeBin, filepath.Join(example, "node_modules", "@grpc", "grpc-js")} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%v\nthe Node.js example's test needs Node 22 (npm ci in conformance/) and the example's packages (npm ci in %s); make test runs both", err, example)
		}
	}
	node, err := filepath.EvalSymlinks(nodeBin) // the binary itself: the #! line names it
	if err != nil {
		t.Fatal(err)
	}
	node, _ = filepath.Abs(node)
	proj = filepath.Join(base, "src", name)
	plugins = filepath.Join(base, "plugins")
	for _, d := range []string{filepath.Join(proj, "proto"), plugins} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"plugin.mjs", "package.json", "package-lock.json", "proto/plugin.proto", "proto/health.proto", "proto/go_plugin.proto"} {
		data, err := os.ReadFile(filepath.Join(example, f))
		if err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if f == "plugin.mjs" {
			// "#!/usr/bin/env node" finds node only in the plugin's PATH
			// (/usr/local/bin:/usr/bin:/bin); Node 22 is elsewhere here.
			first, rest, _ := bytes.Cut(data, []byte("\n"))
			if string(first) != "#!/usr/bin/env node" {
				t.Fatalf("plugin.mjs starts with %q, want #!/usr/bin/env node", first)
			}
			data, mode = append([]byte("#!"+node+"\n"), rest...), 0o755
		}
		if err := os.WriteFile(filepath.Join(proj, f), data, mode); err != nil {
			t.Fatal(err)
		}
	}
	deps, err := filepath.Abs(filepath.Join(example, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(deps, filepath.Join(proj, "node_modules")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(proj, "plugin.mjs"), filepath.Join(plugins, name)); err != nil {
		t.Fatal(err)
	}
	return plugins, proj
}

// TestNodeExamplePlugin serves the Node.js example through the sandbox with
// the real plughost: with runtime = "node" in its plugin block it starts
// (every layer the machine has but write-xor-exec: V8 needs writable and
// executable memory), serves greet to an MCP client, and exits when asked
// (GRPCController.Shutdown: no "failed to exit gracefully"); with
// allow_jit = false V8 aborts; without the runtime, node cannot start, and
// the error names the interpreter and the runtime to set.
func TestNodeExamplePlugin(t *testing.T) {
	t.Parallel()
	base, err := os.MkdirTemp("", "plughost-node-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755) // as root, plugins run as uid 65534
	plugins, proj := nodeProject(t, base)
	config := filepath.Join(base, "plughost.hcl")
	if err := os.WriteFile(config, []byte("sandbox {\n  plugin \"hello\" {\n    runtime = \"node\"\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(base, "bare.hcl") // no runtime: the default policy
	if err := os.WriteFile(bare, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(base, "data"), "XDG_CACHE_HOME="+filepath.Join(base, "cache"),
		"XDG_STATE_HOME="+filepath.Join(base, "state"), "HOME="+base)
	t.Cleanup(func() {
		if left := processesRunning(proj); len(left) > 0 {
			t.Errorf("node plugin processes outlived plughost: %v", left)
		}
	})

	t.Run("serve", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		stderr := newLineBuffer()
		cmd := exec.CommandContext(ctx, bin.plughost, "serve", "--plugins", plugins, "--config", config, "--log-level", "debug")
		cmd.Env, cmd.Stderr = env, stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		defer func() {
			if t.Failed() {
				t.Logf("plughost stderr:\n%s", stderr)
			}
		}()
		client := mcp.NewClient(&mcp.Implementation{Name: "node-e2e", Version: "1"}, nil)
		session, err := client.Connect(ctx, &mcp.IOTransport{Reader: stdout, Writer: stdin}, sessionEra)
		if err != nil {
			cmd.Process.Kill()
			t.Fatalf("connect: %v", err)
		}
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := text(res); res.IsError || !strings.HasPrefix(got, "Hello, Ada! (Node.js v22.") {
			t.Errorf("greet = %q (isError %v), want Hello, Ada! (Node.js v22.…)", got, res.IsError)
		}
		// The host checks the arguments against the Node tool's inputSchema.
		res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if got := text(res); !res.IsError || !strings.Contains(got, "name") {
			t.Errorf("greet without a name = %q (isError %v), want an isError result naming name", got, res.IsError)
		}
		stderr.await(t, `plugin started: plugin=hello`)
		if log := stderr.String(); !strings.Contains(log, "landlock") || !strings.Contains(log, "seccomp") {
			t.Errorf("the node plugin was not started in the sandbox:\n%s", log)
		}
		// allow_jit is unset: runtime "node" may map writable and
		// executable memory, and the host says so.
		if log := stderr.String(); !strings.Contains(log, `allowed for a JIT compiler: runtime \"node\"`) {
			t.Errorf("the report does not say that the node plugin may map writable and executable memory:\n%s", log)
		}
		session.Close() // stdin closes: plughost stops the plugin and exits
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			t.Fatal("plughost did not exit within 15s of stdin closing")
		}
		if log := stderr.String(); strings.Contains(log, "failed to exit gracefully") {
			t.Errorf("the node plugin did not exit on Shutdown:\n%s", log)
		}
	})

	// plughost call starts the plugin, calls, and stops it: no 2 s wait
	// for a plugin that ignores Shutdown.
	t.Run("call", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, bin.plughost, "call", "greet", "--args", `{"name":"Grace"}`, "--plugins", plugins, "--config", config)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("plughost call: %v\nstderr:\n%s", err, &stderr)
		}
		if got := stdout.String(); !strings.HasPrefix(got, "Hello, Grace! (Node.js v22.") {
			t.Errorf("plughost call greet printed %q", got)
		}
		if strings.Contains(stderr.String(), "failed to exit gracefully") {
			t.Errorf("the node plugin did not exit on Shutdown:\n%s", &stderr)
		}
	})

	// Measured: node's V8 aborts without writable and executable memory,
	// even for its first function.
	t.Run("allow_jit = false", func(t *testing.T) {
		noJIT := filepath.Join(base, "nojit.hcl")
		if err := os.WriteFile(noJIT, []byte("sandbox {\n  plugin \"hello\" {\n    runtime   = \"node\"\n    allow_jit = false\n  }\n}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, bin.plughost, "call", "greet", "--args", `{"name":"Ada"}`, "--plugins", plugins, "--config", noJIT)
		cmd.Env, cmd.Stderr = env, &stderr
		if err := cmd.Run(); err == nil {
			t.Fatalf("node ran with allow_jit = false\nstderr:\n%s", &stderr)
		}
		if !strings.Contains(stderr.String(), "SetPermissions") {
			t.Errorf("stderr lacks V8's failure to map executable memory (v8::base::OS::SetPermissions):\n%s", &stderr)
		}
	})

	t.Run("without the runtime", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, bin.plughost, "call", "greet", "--plugins", plugins, "--config", bare)
		cmd.Env, cmd.Stderr = env, &stderr
		if err := cmd.Run(); err == nil {
			t.Fatalf("plughost call succeeded without runtime = \"node\"\nstderr:\n%s", &stderr)
		}
		for _, want := range []string{
			filepath.Join(plugins, "hello") + " is a script run by /", // the node binary, by its path
			"give the plugin the node preset",
			"{ runtime = ",
			"openssl.cnf", // node's own complaint, from its stderr
		} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("stderr lacks %q:\n%s", want, &stderr)
			}
		}
	})
}
