package serve

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/plughost/plughost/host/catalog"
	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/embeddings"
	"github.com/plughost/plughost/host/mcp"
	"github.com/plughost/plughost/host/preflight"
	"github.com/plughost/plughost/host/toolsearch"
)

// Tool search mode's index: by words, or by meaning as well through an
// embeddings endpoint, following the catalog.

// searchIndex returns the index of tool search mode as s says: by words,
// or with an embeddings block, by meaning as well.
func searchIndex(s *config.Search, log hclog.Logger) (*toolsearch.Index, error) {
	if s.Embeddings == nil {
		return toolsearch.New(), nil
	}
	return semanticIndex(s.Embeddings, log)
}

// followSearch puts the catalog in tool search mode as s says: x follows
// its tools, and each plugin's title and description (its provider
// stage), at once (catalog.FollowTools) until unfollow is called, which
// closes x.
func followSearch(cat *catalog.Catalog, x *toolsearch.Index, s *config.Search, log hclog.Logger) (ts *mcp.ToolSearch, unfollow func()) {
	stop := cat.FollowTools(func(ps []catalog.ProviderTools) {
		for _, p := range ps {
			if p.Tools == nil {
				x.Remove(p.Provider)
				continue
			}
			// The catalog checked every definition, so the index refuses
			// none; if it did, searches would find the provider's tools
			// as they were (calls are the catalog's, never the index's).
			if err := x.Set(p.Provider, toolsearch.Provider{Title: p.About.Title, Description: p.About.Description}, p.Tools); err != nil {
				log.Error("tool search: the index refused a provider's tools; searches find the ones it had", "provider", p.Provider, "error", err)
			}
		}
	})
	where := "every endpoint"
	if s.Path != "" {
		where = s.Path + " (/mcp serves every tool)"
	}
	log.Info("serving in tool search mode: tools/list offers search_tools, call_tool and the pinned tools",
		"at", where, "pinned", s.Pinned, "add_found", s.AddFound)
	unfollow = func() {
		stop()
		x.Close()
	}
	return &mcp.ToolSearch{Index: x, Pinned: s.Pinned, Limit: s.Limit, AddFound: s.AddFound, Description: s.Description}, unfollow
}

// semanticIndex returns an index that ranks by meaning as well, through
// the endpoint e names, its key read from e's file or variable.
func semanticIndex(e *config.Embeddings, log hclog.Logger) (*toolsearch.Index, error) {
	key, err := preflight.EmbeddingsKey(e, os.Getenv) // as plughost check reads it
	if err != nil {
		return nil, err
	}
	c, err := embeddings.New(embeddings.Options{URL: e.URL, Model: e.Model, Key: key, Dimensions: e.Dimensions, Timeout: e.Timeout})
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	log.Info("tool search ranks by meaning as well", "embeddings", c.Endpoint(), "model", e.Model)
	return toolsearch.NewSemantic(toolsearch.Semantic{Embedder: c, OnError: func(err error, n int) {
		log.Warn("tool search: the embeddings endpoint failed; searches rank by words meanwhile", "error", err, "failures", n)
	}, OnEmbedded: func(n int) {
		log.Debug("tool search: every tool embedded", "texts", n)
	}}), nil
}
