package wrapped

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/plughost/plughost/internal/pluginhost"
	"github.com/plughost/plughost/pluginproto"
)

// offers is what the server's capabilities say it offers besides tools.
func offers(c *serverCapabilities) pluginproto.Offers {
	if c == nil {
		return pluginproto.Offers{}
	}
	o := pluginproto.Offers{Prompts: c.Prompts != nil, Completions: c.Completions != nil}
	if c.Resources != nil {
		o.Resources, o.ResourceSubscriptions = true, c.Resources.Subscribe
	}
	return o
}

// list lists everything the server offers and hands it to the plugin.
// It is no request a client caused, so it does not stop a question of the
// server from reaching the one call in flight (see exchanges.others).
func (b *bridge) list(ctx context.Context) error {
	var l pluginhost.ProxyLists
	var err error
	caps := b.init.Capabilities
	if caps == nil || caps.Tools != nil {
		if l.Tools, err = b.listAll(ctx, "tools/list", "tools"); err != nil {
			return fmt.Errorf("list tools: %w", err)
		}
	}
	if caps != nil && caps.Resources != nil {
		if l.Resources, err = b.listAll(ctx, "resources/list", "resources"); err != nil {
			return fmt.Errorf("list resources: %w", err)
		}
		if l.Templates, err = b.listAll(ctx, "resources/templates/list", "resourceTemplates"); err != nil {
			return fmt.Errorf("list resource templates: %w", err)
		}
	}
	if caps != nil && caps.Prompts != nil {
		if l.Prompts, err = b.listAll(ctx, "prompts/list", "prompts"); err != nil {
			return fmt.Errorf("list prompts: %w", err)
		}
	}
	if b.expect != nil {
		if diff := b.expect.compare(l); diff != "" && b.expect.Hold {
			b.log.Error("the server lists other tools or prompts than its manifest declares: held (trust mode pinned or signed)", "difference", diff)
			return fmt.Errorf("the server lists other tools or prompts than its manifest declares (%s): held in this trust mode", diff)
		} else if diff != "" {
			b.log.Warn("the server lists other tools or prompts than its manifest declares", "difference", diff)
		}
	}
	if err := pluginhost.Of(b.plugin).SetProxyLists(l); err != nil {
		b.log.Warn("the server listed definitions the host cannot serve", "error", err)
	}
	return nil
}

// listAll lists every page of method, whose items are under key, each
// item as the server wrote it.
func (b *bridge) listAll(ctx context.Context, method, key string) ([][]byte, error) {
	return all(func(cursor string) ([]json.RawMessage, string, error) {
		var params any
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
		}
		raw, err := b.call(ctx, method, params)
		if err != nil {
			return nil, "", err
		}
		var page map[string]json.RawMessage
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, "", fmt.Errorf("the server's answer to %s: %w", method, err)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(page[key], &items); len(page[key]) > 0 && err != nil {
			return nil, "", fmt.Errorf("the server's answer to %s: %s: %w", method, key, err)
		}
		var next string
		if len(page["nextCursor"]) > 0 {
			_ = json.Unmarshal(page["nextCursor"], &next)
		}
		return items, next, nil
	})
}

// Bounds of each list a wrapped server may give (tools, resources,
// templates, prompts): a server that pages forever fails its listing
// instead of growing the wrapper, or keeping it busy, without end.
const (
	maxListed = 10000
	maxPages  = 1000
)

// all collects a paginated list, page by page (page is given the cursor,
// "" first), at most maxListed items in at most maxPages pages.
func all(page func(cursor string) ([]json.RawMessage, string, error)) ([][]byte, error) {
	var out [][]byte
	cursor := ""
	for pages := 1; ; pages++ {
		items, next, err := page(cursor)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			if len(out) == maxListed {
				return nil, fmt.Errorf("the server lists over %d items", maxListed)
			}
			out = append(out, item)
		}
		if next == "" {
			return out, nil
		}
		if pages == maxPages {
			return nil, fmt.Errorf("the server lists over %d pages", maxPages)
		}
		cursor = next
	}
}

// changed notes a list_changed; relistLoop lists again, one burst of
// changes at a time.
func (b *bridge) changed() {
	select {
	case b.relist <- struct{}{}:
	default:
	}
}

func (b *bridge) relistLoop() {
	for range b.relist {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := b.list(ctx); err != nil {
			b.log.Warn("listing again after the server's list_changed failed; the lists stay as they were", "error", err)
		}
		cancel()
	}
}
