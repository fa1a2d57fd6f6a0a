//go:build unix

package embeddings

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/plughost/plughost/internal/embedtest"
)

// endpoint serves answer (a function of the request) at /v1/embeddings.
func endpoint(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, req request)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		var req request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("the client sent no JSON: %v", err)
		}
		answer(w, r, req)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func client(t *testing.T, o Options) *Client {
	t.Helper()
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEmbedSendsTheRequestAndPlacesVectorsByIndex(t *testing.T) {
	url := endpoint(t, func(w http.ResponseWriter, r *http.Request, req request) {
		if got := r.Header.Get("Authorization"); got != "Bearer sk-secret" {
			t.Errorf("Authorization %q", got)
		}
		if req.Model != "m" || req.EncodingFormat != "float" || req.Dimensions != 3 || strings.Join(req.Input, "|") != "a|b" {
			t.Errorf("request %+v", req)
		}
		io.WriteString(w, `{"data":[{"index":1,"embedding":[0,1,0]},{"index":0,"embedding":[1,0,0]}]}`)
	})
	c := client(t, Options{URL: url + "/", Model: "m", Key: "sk-secret", Dimensions: 3})
	vecs, err := c.Embed(context.Background(), []string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 2 || vecs[0][0] != 1 || vecs[1][1] != 1 {
		t.Errorf("vectors %v; want a's [1 0 0] first", vecs)
	}
}

func TestEmbedErrorsNameTheCauseAndNotTheKey(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"refused", `{"error":{"message":"Incorrect API key provided"}}`, 401, "401 Unauthorized: Incorrect API key provided"},
		{"plain error", `{"error":"model not found"}`, 404, "404 Not Found: model not found"},
		{"not json", `<html>`, 200, "not an embeddings list"},
		{"too few", `{"data":[{"index":0,"embedding":[1]}]}`, 200, "1 vectors for 2 texts"},
		{"repeated index", `{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}`, 200, "out of range or repeated"},
		{"mixed dimensions", `{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[1,2]}]}`, 200, "1 and 2 dimensions"},
		{"empty vector", `{"data":[{"index":0,"embedding":[]},{"index":1,"embedding":[1]}]}`, 200, "vector 0 is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := endpoint(t, func(w http.ResponseWriter, _ *http.Request, _ request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			_, err := client(t, Options{URL: url, Model: "m", Key: "sk-secret"}).Embed(context.Background(), []string{"a", "b"})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "sk-secret") {
				t.Errorf("error %v; want one naming %q and not the key", err, tc.want)
			}
		})
	}
}

func TestEmbedIsBounded(t *testing.T) {
	t.Run("batch", func(t *testing.T) {
		c := client(t, Options{URL: "http://127.0.0.1:1/v1", Model: "m"})
		if _, err := c.Embed(context.Background(), make([]string, MaxBatch+1)); err == nil || !strings.Contains(err.Error(), "at most 256") {
			t.Errorf("error %v; want the batch refused before sending", err)
		}
	})
	t.Run("answer size", func(t *testing.T) {
		url := endpoint(t, func(w http.ResponseWriter, _ *http.Request, _ request) {
			io.WriteString(w, `{"data":[{"index":0,"embedding":[`)
			chunk := strings.Repeat("0.5,", 1<<16)
			for written := 0; written <= MaxResponseBytes; written += len(chunk) {
				if _, err := io.WriteString(w, chunk); err != nil {
					return // the client stopped reading
				}
			}
		})
		// A minute: writing 32 MiB on a busy machine may take longer than
		// the default timeout, which would hide the size check.
		_, err := client(t, Options{URL: url, Model: "m", Timeout: time.Minute}).Embed(context.Background(), []string{"a"})
		if err == nil || !strings.Contains(err.Error(), "over 33554432 bytes") {
			t.Errorf("error %v; want the answer's size refused", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		defer close(release)
		url := endpoint(t, func(http.ResponseWriter, *http.Request, request) { <-release })
		_, err := client(t, Options{URL: url, Model: "m", Timeout: 50 * time.Millisecond}).Embed(context.Background(), []string{"a"})
		if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
			t.Errorf("error %v; want the timeout named", err)
		}
	})
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{URL: "ftp://x/v1", Model: "m"}, "want http:// or https://"},
		{Options{URL: "127.0.0.1:8080", Model: "m"}, "want http:// or https://"},
		{Options{URL: "https://user:sk-secret@api.example/v1", Model: "m"}, "not in the URL"},
		{Options{URL: "https://api.example/v1"}, "no model"},
		{Options{URL: "https://api.example/v1", Model: "m", Dimensions: -1}, "dimensions -1"},
	} {
		_, err := New(tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "sk-secret") {
			t.Errorf("New(%+v): %v; want an error naming %q (and never the key)", tc.o, err, tc.want)
		}
	}
}

// TestARealEndpoint embeds through conformance/embeddings.mjs, a real
// model behind the OpenAI-compatible shape: texts that mean close things
// lie closer than texts that do not.
func TestARealEndpoint(t *testing.T) {
	c := client(t, Options{URL: embedtest.Start(t), Model: embedtest.Model, Timeout: time.Minute})
	vecs, err := c.Embed(context.Background(), []string{"book a room for the night", "reserve a hotel", "compile the kernel"})
	if err != nil {
		t.Fatal(err)
	}
	cos := func(a, b []float32) float64 {
		var ab, aa, bb float64
		for i := range a {
			ab += float64(a[i] * b[i])
			aa += float64(a[i] * a[i])
			bb += float64(b[i] * b[i])
		}
		return ab / (aa * bb)
	}
	if len(vecs[0]) != 512 {
		t.Errorf("%d dimensions; the Universal Sentence Encoder has 512", len(vecs[0]))
	}
	if near, far := cos(vecs[0], vecs[1]), cos(vecs[0], vecs[2]); near <= far {
		t.Errorf("room/hotel %.3f, room/kernel %.3f: want the first closer", near, far)
	}
}
