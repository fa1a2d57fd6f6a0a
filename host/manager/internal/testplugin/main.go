// Command testplugin is the plugin the manager's tests run as a real
// subprocess. Its tools let a test look inside the plugin process and make it
// misbehave:
//
//   - pid: the plugin's pid;
//   - stdin: whether its stdin is /dev/null;
//   - env: the value of the environment variable named by {"name": ...};
//   - spawn: starts a child process (in the plugin's process group, holding
//     the plugin's stderr) that sleeps forever, and returns its pid;
//   - crash: exits with status 3 while the call is in flight;
//   - grow: adds a tool "grown" (the host is told the tool list changed);
//   - print: writes lines "print: <how>" the ways a plugin's author would
//     after Serve: fmt.Println (os.Stdout), fmt.Fprintln(os.Stderr),
//     log.Printf, and straight to file descriptors 1 and 2 (as a plugin
//     in another language, or a child process, would);
//   - touch: reports the resource test://doc updated and adds the resource
//     test://added (the host is told the resource list changed);
//   - ask: asks the user to confirm (elicitation), and returns the answer;
//   - panic: panics (the plugin answers that it failed, and lives on);
//   - job: declares task support "optional", goes on as a task when it
//     may (RunAsTask), reports progress "working" and returns "task: true"
//     or "task: false";
//   - a resource test://doc, a template test://item/{id} and a prompt
//     "greet" (argument "name", required and completed from a list);
//   - variant_<v>: exists to tell builds apart (v is set with
//     -ldflags "-X main.variant=...").
//
// It asks to read /srv/testplugin, to reach api.example.com:443 and for
// $TESTPLUGIN_TOKEN (Plugin.Request).
//
// When the environment variable TESTPLUGIN_DIE_IF names a file that exists,
// the plugin exits with status 4 before the handshake; when
// TESTPLUGIN_HANG_IF does, it never completes the handshake. At start it logs
// "testplugin started" through its hclog logger (stderr).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/plughost/plughost/pluginproto"
)

var variant = "v1"

// realStderr is fd 2 as the host set it up: go-plugin's Serve replaces the
// os.Stderr variable, not the descriptor. (A package variable, so that no
// finalizer closes it.)
var realStderr = os.NewFile(2, "stderr")

// realStdout is fd 1, which carried the handshake.
var realStdout = os.NewFile(1, "stdout")

func text(s string) func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
	return func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
		return pluginproto.TextResult(s), nil
	}
}

func main() {
	if os.Getenv("TESTPLUGIN_CHILD") == "1" {
		// The spawned child: sleep until killed.
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		select {}
	}
	if f := os.Getenv("TESTPLUGIN_DIE_IF"); f != "" {
		if _, err := os.Stat(f); err == nil {
			os.Exit(4)
		}
	}
	if f := os.Getenv("TESTPLUGIN_HANG_IF"); f != "" {
		if _, err := os.Stat(f); err == nil {
			select {} // never completes the handshake
		}
	}

	laneFD, _ := strconv.Atoi(os.Getenv("PLUGHOST_LANE_FD")) // Serve takes the lane and unsets it

	p := pluginproto.New("testplugin", variant)
	p.SetAbout(pluginproto.About{Title: "Test plugin " + variant, Description: "What the manager's tests start."})
	p.Request(pluginproto.Requests{Read: []string{"/srv/testplugin"}, Net: []string{"api.example.com:443"}, Env: []string{"TESTPLUGIN_TOKEN"}})
	p.AddTool(pluginproto.Tool{Name: "pid"}, text(strconv.Itoa(os.Getpid())))
	p.AddTool(pluginproto.Tool{Name: "stdin"}, func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
		in, err := os.Stdin.Stat()
		if err != nil {
			return nil, err
		}
		null, err := os.Stat(os.DevNull)
		if err != nil {
			return nil, err
		}
		return pluginproto.TextResult(strconv.FormatBool(os.SameFile(in, null))), nil
	})
	p.AddTool(pluginproto.Tool{Name: "env", InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)},
		func(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
			var args struct{ Name string }
			if err := req.Bind(&args); err != nil {
				return nil, err
			}
			return pluginproto.TextResult(os.Getenv(args.Name)), nil
		})
	p.AddTool(pluginproto.Tool{Name: "fail", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		func(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
			var args struct{ Text string }
			if err := req.Bind(&args); err != nil {
				return nil, err
			}
			return nil, errors.New(args.Text) // an isError result
		})
	p.AddTool(pluginproto.Tool{Name: "spawn"}, func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), "TESTPLUGIN_CHILD=1")
		cmd.Stderr = realStderr // the child holds the plugin's stderr pipe open
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		return pluginproto.TextResult(strconv.Itoa(cmd.Process.Pid)), nil
	})
	p.AddTool(pluginproto.Tool{Name: "hang"}, func(ctx context.Context, _ *pluginproto.Request) (*pluginproto.Result, error) {
		<-ctx.Done()
		p.Logger().Info("hang cancelled")
		return nil, ctx.Err()
	})
	// breaklane writes a frame that does not decode on the frame lane:
	// the host must drop the lane and restart the plugin.
	p.AddTool(pluginproto.Tool{Name: "breaklane"}, func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
		if laneFD < 3 {
			return nil, errors.New("no frame lane")
		}
		err := writeFD(laneFD, []byte{0, 0, 0, 6, 1, 0xff, 0xff, 0xff, 0xff, 0xff})
		return pluginproto.TextResult("written"), err
	})
	p.AddTool(pluginproto.Tool{Name: "crash"}, func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
		os.Exit(3)
		return nil, nil
	})
	p.AddTool(pluginproto.Tool{Name: "grow"}, func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
		p.AddTool(pluginproto.Tool{Name: "grown"}, text("grown"))
		return pluginproto.TextResult("ok"), nil
	})
	p.AddTool(pluginproto.Tool{Name: "print"}, func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
		fmt.Println("print: fmt.Println")
		fmt.Fprintln(os.Stderr, "print: fmt.Fprintln(os.Stderr)")
		log.Printf("print: log.Printf")
		fmt.Fprintln(realStdout, "print: fd 1")
		fmt.Fprintln(realStderr, "print: fd 2")
		return pluginproto.TextResult("printed"), nil
	})
	p.AddTool(pluginproto.Tool{Name: "variant_" + variant}, text(variant))
	p.Logger().Info("testplugin started", "variant", variant)
	p.AddTool(pluginproto.Tool{Name: "touch"}, func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
		p.ResourceUpdated("test://doc")
		p.AddResource(pluginproto.Resource{URI: "test://added", Name: "added"}, doc("added"))
		return pluginproto.TextResult("touched"), nil
	})
	p.AddTool(pluginproto.Tool{Name: "ask"}, func(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
		res, err := req.Elicit(ctx, pluginproto.ElicitParams{Message: "Sure?"})
		if err != nil {
			return nil, err
		}
		return pluginproto.TextResult("answer: " + res.Action), nil
	})
	p.AddTool(pluginproto.Tool{Name: "panic"}, func(context.Context, *pluginproto.Request) (*pluginproto.Result, error) {
		panic("boom")
	})
	p.AddTool(pluginproto.Tool{Name: "job", TaskSupport: pluginproto.TaskOptional}, func(_ context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
		task := req.RunAsTask()
		req.Progress(1, 1, "working")
		return pluginproto.TextResult(fmt.Sprintf("task: %v", task)), nil
	})
	// longjob goes on as a task when it may, then works "ms" milliseconds.
	p.AddTool(pluginproto.Tool{Name: "longjob", TaskSupport: pluginproto.TaskOptional}, func(ctx context.Context, req *pluginproto.Request) (*pluginproto.Result, error) {
		var args struct{ MS int }
		if err := req.Bind(&args); err != nil {
			return nil, err
		}
		req.RunAsTask()
		select {
		case <-time.After(time.Duration(args.MS) * time.Millisecond):
			return pluginproto.TextResult("long job done"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	p.AddResource(pluginproto.Resource{URI: "test://doc", Name: "doc", MIMEType: "text/plain"}, doc("the doc"))
	p.AddResourceTemplate(pluginproto.ResourceTemplate{URITemplate: "test://item/{id}", Name: "item"},
		func(_ context.Context, r *pluginproto.ResourceRead) (*pluginproto.ResourceResult, error) {
			return pluginproto.TextContents("text/plain", "item "+r.Vars["id"]), nil
		})
	p.AddPrompt(pluginproto.Prompt{
		Name:      "greet",
		Arguments: []pluginproto.PromptArgument{{Name: "name", Required: true}},
		Complete: func(context.Context, *pluginproto.CompleteRequest) (*pluginproto.Completion, error) {
			return &pluginproto.Completion{Values: []string{"Ada", "Alan"}}, nil
		},
	}, func(_ context.Context, g *pluginproto.PromptGet) (*pluginproto.PromptResult, error) {
		return &pluginproto.PromptResult{Messages: []pluginproto.Message{{Role: "user", Content: pluginproto.Text("Hello, " + g.Arguments["name"])}}}, nil
	})
	pluginproto.Serve(p)
}

// doc returns a resource handler answering text.
func doc(text string) pluginproto.ResourceHandler {
	return func(context.Context, *pluginproto.ResourceRead) (*pluginproto.ResourceResult, error) {
		return pluginproto.TextContents("text/plain", text), nil
	}
}
