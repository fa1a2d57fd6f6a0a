package config

import (
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Embeddings holds the settings of the search block's embeddings block:
// an OpenAI-compatible embeddings endpoint (host/embeddings) that ranks
// the tools by meaning as well as by words.
//
//	search {
//	  embeddings {
//	    url          = "http://127.0.0.1:11434/v1"  # the base: requests go to url + "/embeddings"
//	    model        = "nomic-embed-text"
//	    api_key_file = "/run/secrets/embeddings"     # or api_key_env = "OPENAI_API_KEY"; neither: no key sent
//	    dimensions   = 256                           # optional, for models that shorten their vectors
//	    timeout      = "10s"                         # each request; 1s to 2m (default 10s)
//	  }
//	}
//
// The key never goes in this file: a file (relative to the configuration
// file's directory) or an environment variable holds it, and plughost
// serve reads it at start.
type Embeddings struct {
	URL        string
	Model      string
	APIKeyFile string // absolute; "" when not set
	APIKeyEnv  string // "" when not set
	Dimensions int    // 0: the model's own
	Timeout    time.Duration
}

var embeddingsSchema = hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "url", Required: true}, {Name: "model", Required: true},
		{Name: "api_key_file"}, {Name: "api_key_env"}, {Name: "dimensions"}, {Name: "timeout"}},
}

// Bounds of the embeddings block.
const (
	minEmbeddingsTimeout = time.Second
	maxEmbeddingsTimeout = 2 * time.Minute
	maxDimensions        = 16384
)

func (e *Embeddings) decode(body hcl.Body, dir string) error {
	_, err := attributes(body, &embeddingsSchema, func(name string, a *hcl.Attribute, v cty.Value) (err error) {
		bad := func(want string) error { return diag(a.Expr.Range(), "Invalid "+name, name+" must be "+want) }
		str := ""
		if v.Type() == cty.String {
			str = v.AsString()
		}
		switch name {
		case "url":
			u, perr := url.Parse(str)
			switch {
			case perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
				return bad(`an http:// or https:// URL, the endpoint's base, such as "http://127.0.0.1:11434/v1"`)
			case u.User != nil:
				return bad("a URL without a user or key: the key goes in api_key_file or api_key_env")
			}
			e.URL = str
		case "model":
			if strings.TrimSpace(str) == "" {
				return bad(`the model's name, as the endpoint knows it, such as "text-embedding-3-small"`)
			}
			e.Model = str
		case "api_key_file":
			if strings.TrimSpace(str) == "" {
				return bad("the path of a file holding the key (not the key itself)")
			}
			e.APIKeyFile = inDir(dir, str)
		case "api_key_env":
			if str == "" || strings.ContainsAny(str, "= \t\r\n") {
				return bad(`the name of an environment variable, such as "OPENAI_API_KEY"`)
			}
			e.APIKeyEnv = str
		case "dimensions":
			e.Dimensions, err = wholeIn(a, v, 1, maxDimensions)
		case "timeout":
			e.Timeout, err = durationIn(a, v, minEmbeddingsTimeout, maxEmbeddingsTimeout, "1s to 2m")
		}
		return err
	})
	if err == nil && e.APIKeyFile != "" && e.APIKeyEnv != "" {
		return diag(body.MissingItemRange(), "Two keys", "the embeddings block may name api_key_file or api_key_env, not both")
	}
	return err
}
