// Package embeddings is a client of an OpenAI-compatible embeddings
// endpoint: POST {base}/embeddings with {"model", "input": [texts]},
// answered with {"data": [{"index", "embedding": [numbers]}]}. OpenAI,
// Azure OpenAI, Ollama, llama.cpp's server, vLLM, LM Studio and Hugging
// Face's text-embeddings-inference all serve it, so the operator picks
// the model and where it runs. Tool search (host/toolsearch) uses it to
// rank tools by meaning as well as by words:
//
//	c, err := embeddings.New(embeddings.Options{
//		URL:   "http://127.0.0.1:11434/v1", // the base; /embeddings is added
//		Model: "nomic-embed-text",
//		Key:   os.Getenv("OPENAI_API_KEY"), // sent as a bearer token; "" sends none
//	})
//	vecs, err := c.Embed(ctx, []string{"search flights", "book a hotel"})
//
// Every request is bounded: a timeout of its own, at most MaxBatch texts,
// an answer of at most MaxResponseBytes. An error names the endpoint's
// status and message, never the key.
package embeddings

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Limits of a request.
const (
	// MaxBatch is the most texts one Embed sends.
	MaxBatch = 256
	// MaxResponseBytes bounds an answer: 256 vectors of 3072 dimensions
	// written as JSON numbers take about 16 MiB.
	MaxResponseBytes = 32 << 20
	// DefaultTimeout bounds a request when Options.Timeout is 0.
	DefaultTimeout = 10 * time.Second
)

// Options configure a Client.
type Options struct {
	// URL is the endpoint's base, such as https://api.openai.com/v1:
	// requests go to URL + "/embeddings". http or https only.
	URL string
	// Model names the model, as the endpoint knows it.
	Model string
	// Key, when not empty, is sent as "Authorization: Bearer Key".
	Key string
	// Dimensions, when not 0, asks the model for vectors of that many
	// dimensions (models that can shorten theirs, such as OpenAI's
	// text-embedding-3 family); others may refuse it.
	Dimensions int
	// Timeout bounds each request; 0 means DefaultTimeout.
	Timeout time.Duration
	// Client sends the requests; nil means a client of the package's own.
	Client *http.Client
}

// Client embeds texts through an endpoint. It is safe for concurrent use.
type Client struct {
	endpoint string
	o        Options
}

// New checks o and returns a Client.
func New(o Options) (*Client, error) {
	u, err := url.Parse(o.URL)
	switch {
	case err != nil:
		// Not the URL itself, nor url's error, which quotes it: it may
		// hold a key.
		return nil, errors.New("embeddings url: not a URL; want http:// or https:// and a host, such as http://127.0.0.1:11434/v1")
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return nil, fmt.Errorf("embeddings url %q: want http:// or https:// and a host, such as http://127.0.0.1:11434/v1", u.Redacted())
	case u.User != nil:
		return nil, fmt.Errorf("embeddings url %q: a key goes in the key's file or variable, not in the URL", u.Redacted())
	case o.Model == "":
		return nil, errors.New("embeddings: no model named")
	case o.Dimensions < 0:
		return nil, fmt.Errorf("embeddings: dimensions %d: want a positive number, or 0 for the model's own", o.Dimensions)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	return &Client{endpoint: strings.TrimSuffix(o.URL, "/") + "/embeddings", o: o}, nil
}

// Endpoint is where the requests go.
func (c *Client) Endpoint() string { return c.endpoint }

// Embed returns one vector per text, in order. It fails, sending nothing,
// for more than MaxBatch texts.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	if len(texts) > MaxBatch {
		return nil, fmt.Errorf("embeddings: %d texts in one request, at most %d", len(texts), MaxBatch)
	}
	body, err := json.Marshal(request{Model: c.o.Model, Input: texts, EncodingFormat: "float", Dimensions: c.o.Dimensions})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.o.Key != "" {
		req.Header.Set("Authorization", "Bearer "+c.o.Key)
	}
	resp, err := c.o.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embeddings endpoint %s: %w", c.endpoint, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("embeddings endpoint %s: reading the answer: %w", c.endpoint, err)
	}
	if len(data) > MaxResponseBytes {
		return nil, fmt.Errorf("embeddings endpoint %s: the answer is over %d bytes", c.endpoint, MaxResponseBytes)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("embeddings endpoint %s: %s%s", c.endpoint, resp.Status, errorMessage(data))
	}
	return decode(data, len(texts))
}

type request struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

type response struct {
	Data []struct {
		Index     *int      `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// decode reads an answer to n texts: n vectors of one dimension, placed
// by their index (in order when the endpoint gives none).
func decode(data []byte, n int) ([][]float32, error) {
	var r response
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("embeddings: the answer is not an embeddings list: %v", err)
	}
	if len(r.Data) != n {
		return nil, fmt.Errorf("embeddings: %d vectors for %d texts", len(r.Data), n)
	}
	out := make([][]float32, n)
	for i, d := range r.Data {
		at := i
		if d.Index != nil {
			at = *d.Index
		}
		switch {
		case at < 0 || at >= n || out[at] != nil:
			return nil, fmt.Errorf("embeddings: vector %d has index %d, out of range or repeated", i, at)
		case len(d.Embedding) == 0:
			return nil, fmt.Errorf("embeddings: vector %d is empty", i)
		case len(d.Embedding) != len(r.Data[0].Embedding):
			return nil, fmt.Errorf("embeddings: vectors of %d and %d dimensions in one answer", len(r.Data[0].Embedding), len(d.Embedding))
		}
		out[at] = d.Embedding
	}
	return out, nil
}

// errorMessage returns ": message" from an OpenAI-style error answer
// ({"error": {"message"}} or {"error": "message"}), at most 200 bytes of
// it, or "" when there is none.
func errorMessage(data []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &e) != nil || len(e.Error) == 0 {
		return ""
	}
	var msg string
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(e.Error, &obj) == nil && obj.Message != "" {
		msg = obj.Message
	} else if json.Unmarshal(e.Error, &msg) != nil {
		return ""
	}
	if len(msg) > 200 {
		msg = strings.ToValidUTF8(msg[:200], "") + "…"
	}
	return ": " + msg
}
