//go:build unix

// Package embedtest runs a real sentence-embedding model behind an
// OpenAI-compatible endpoint for a test: conformance/embeddings.mjs (the
// Universal Sentence Encoder lite, pinned in conformance/package.json),
// run by the pinned Node 22, on a free loopback port, killed when the
// test ends.
//
//	url := embedtest.Start(t) // "http://127.0.0.1:PORT/v1"
//	c, err := embeddings.New(embeddings.Options{URL: url, Model: embedtest.Model})
//
// conformance/node_modules must be installed (cd conformance && npm ci;
// .ci/run does it): without it the test fails, saying so.
//
// Built on unix only (it runs conformance/node_modules/.bin/node in a
// process group); the tests that use it are tagged unix too.
package embedtest

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
)

// Model is the name the endpoint answers to (it serves one model and
// takes any name).
const Model = "universal-sentence-encoder-lite"

// startTimeout bounds loading the model (about 2 s here).
const startTimeout = 60 * time.Second

// Start starts the endpoint for t and returns its base URL.
func Start(t testing.TB) string {
	t.Helper()
	dir, err := conformanceDir()
	if err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(dir, "node_modules", ".bin", "node")
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("this test needs the pinned Node and model: cd conformance && npm ci (.ci/run does it): %v", err)
	}
	cmd := exec.Command(node, "embeddings.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PORT=0")
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the embeddings endpoint: %v", err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				port <- p
			}
		}
		close(port)
	}()
	select {
	case p, ok := <-port:
		if !ok {
			t.Fatal("the embeddings endpoint exited before listening (its errors are above)")
		}
		url := "http://127.0.0.1:" + p + "/v1"
		warmUp(t, url)
		return url
	case <-time.After(startTimeout):
		t.Fatalf("the embeddings endpoint did not listen within %v", startTimeout)
		return ""
	}
}

// warmUp embeds one text, so that the model's first answer (its
// compilation, several seconds on a busy machine) is not a test's.
func warmUp(t testing.TB, url string) {
	t.Helper()
	client := http.Client{Timeout: startTimeout}
	resp, err := client.Post(url+"/embeddings", "application/json", strings.NewReader(`{"input":["warm up"]}`))
	if err != nil {
		t.Fatalf("the embeddings endpoint's first answer: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the embeddings endpoint's first answer: %s", resp.Status)
	}
}

// conformanceDir finds conformance/ at the root of the module, walking up
// from the working directory (a test's is its package's directory).
func conformanceDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && modfile.ModulePath(data) == "github.com/plughost/plughost" {
			return filepath.Join(dir, "conformance"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no directory above the working directory holds plughost's go.mod")
		}
		dir = parent
	}
}
