package config

import (
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Registry holds the registry block: the MCP Registry plughost install
// and search-registry resolve names through.
//
//	registry {
//	  url     = "https://registry.example.com" # or a file or directory of server.json documents
//	  timeout = "30s"
//	}
type Registry struct {
	// URL is url: an https URL (http only to a loopback address), or the
	// path of a file or directory of server.json documents (relative to
	// the configuration file's directory); "" when not set: the official
	// registry.
	URL string
	// Timeout is timeout: the limit of one request to it; 0 when not
	// set (host/registry's default, 30s).
	Timeout time.Duration
}

var registrySchema = hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "url"}, {Name: "timeout"}}}

// decode reads the registry block; dir is the configuration file's.
func (r *Registry) decode(body hcl.Body, dir string) error {
	_, err := attributes(body, &registrySchema, func(name string, a *hcl.Attribute, v cty.Value) (err error) {
		switch name {
		case "url":
			if v.Type() != cty.String || strings.TrimSpace(v.AsString()) == "" {
				return diag(a.Expr.Range(), "Invalid url", "url must be a registry's URL, or the path of a file or directory of server.json documents")
			}
			s := strings.TrimSpace(v.AsString())
			if !strings.Contains(s, "://") {
				r.URL = inDir(dir, s)
				return nil
			}
			if !registryURL(s) {
				return diag(a.Expr.Range(), "Invalid url", "url must be https://HOST[/PATH] (http:// only to a loopback address: what a registry answers decides what this host runs)")
			}
			r.URL = s
		case "timeout":
			r.Timeout, err = durationIn(a, v, time.Second, 10*time.Minute, "1s to 10m")
		}
		return err
	})
	return err
}

// registryURL reports whether s is an https URL, or an http one to a
// loopback address.
func registryURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	return u.Scheme == "https" || u.Scheme == "http" && (u.Hostname() == "localhost" || ip != nil && ip.IsLoopback())
}
