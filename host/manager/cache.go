package manager

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/pluginclient"
	"github.com/plughost/plughost/host/tool"
	"github.com/plughost/plughost/internal/atomicfile"
	"github.com/plughost/plughost/pluginproto"
)

// The catalog cache: what each plugin offered when it last ran, kept on
// disk (Options.CacheDir) so that the next start can publish it before any
// plugin process runs. See the package documentation.

// cacheFormat is the version of the cache entry's format. An entry of any
// other format is ignored (with a warning) and rewritten. Format 2 added
// the plugin's title and description.
const cacheFormat = 2

// cacheEntry is one plugin's file in the cache directory, <name>.json.
type cacheEntry struct {
	Format int    `json:"format"`
	Name   string `json:"name"`
	// Key is the digest the entry is valid for (see cacheKey).
	Key string `json:"key"`
	// Binary identifies the executable the entry was made from.
	Binary binaryID `json:"binary"`

	Plugin   string             `json:"plugin"`  // Describe's name
	Version  string             `json:"version"` // Describe's version
	Contract uint32             `json:"contract"`
	Offers   pluginproto.Offers `json:"offers"`
	// Title and Description are Describe's, within pluginclient.MaxTitle
	// and MaxDescription (an entry read back is bounded again).
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// Requests is what the plugin asked to be granted (Describe).
	Requests  pluginproto.Requests `json:"requests,omitzero"`
	Tools     []json.RawMessage    `json:"tools"`
	Resources []json.RawMessage    `json:"resources"`
	Templates []json.RawMessage    `json:"templates"`
	Prompts   []json.RawMessage    `json:"prompts"`

	// parsed is what lookup parsed of the definitions (not stored).
	parsed *lists
}

// binaryID is a plugin executable's SHA-256 and the stat fingerprint it
// was taken at: while the file's stat matches, the digest is reused rather
// than the file hashed again.
type binaryID struct {
	SHA256 string   `json:"sha256"`
	Stat   statMark `json:"stat"`
}

// statMark is what stat says of a file; a rewrite, a rename over it or a
// touch changes at least one field (ctime changes with any of them).
type statMark struct {
	Size    int64  `json:"size"`
	MtimeNs int64  `json:"mtime_ns"`
	CtimeNs int64  `json:"ctime_ns"`
	Inode   uint64 `json:"inode"`
	Device  uint64 `json:"device"`
}

// catalogCache reads and writes the entries of one directory. A nil
// *catalogCache is the cache of a manager without one: it finds nothing
// and stores nothing.
type catalogCache struct {
	dir string
	log hclog.Logger
}

func (c *catalogCache) path(name string) string { return filepath.Join(c.dir, name+".json") }

// staleTemp is the age past which a temporary file of store (.<name>.json.*.tmp)
// is an interrupted write, not one in progress: a write takes milliseconds.
const staleTemp = time.Hour

// sweep removes the temporary files of writes interrupted by a host's
// death (SIGKILL between create and rename); a live host's writes in
// progress are younger than staleTemp and stay. A missing directory is
// not an error: nothing has been written yet.
func (c *catalogCache) sweep(now time.Time) {
	temps, _ := filepath.Glob(filepath.Join(c.dir, ".*.tmp")) // only ErrBadPattern, and the pattern is fixed
	for _, path := range temps {
		if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && now.Sub(fi.ModTime()) > staleTemp {
			if err := os.Remove(path); err == nil {
				c.log.Debug("removed an interrupted catalog cache write", "file", path)
			}
		}
	}
}

// cacheKey is the digest an entry is valid for: the binary's contents, the
// contract version the host speaks, and the plugin's launch configuration
// (Options.Fingerprint), each length-prefixed.
func cacheKey(binarySHA string, fingerprint string) string {
	h := sha256.New()
	for _, part := range []string{"plughost-catalog-cache", binarySHA, strconv.Itoa(pluginclient.ContractVersion), fingerprint} {
		fmt.Fprintf(h, "%d:%s;", len(part), part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// lookup returns the valid entry of the named plugin, or nil; id is the
// binary's identity as found: zero when it could not be read, and when
// there is no entry to compare it with (missing, unreadable, corrupt,
// foreign), so that a cold first scan hashes nothing. A corrupt
// or foreign entry is logged as a warning, a stale one at debug level.
func (c *catalogCache) lookup(name, path, fingerprint string) (e *cacheEntry, id binaryID) {
	if c == nil {
		return nil, binaryID{}
	}
	log := c.log.With("plugin", name, "entry", c.path(name))
	b, err := os.ReadFile(c.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		log.Debug("no catalog cache entry")
		return nil, binaryID{} // hashed once the plugin has loaded, off the first scan
	}
	if err != nil {
		log.Warn("cannot read the catalog cache entry; ignoring it", "error", err)
		return nil, binaryID{} // hashed once the plugin has loaded, off the first scan
	}
	e = new(cacheEntry)
	if err := json.Unmarshal(b, e); err != nil {
		log.Warn("corrupt catalog cache entry; ignoring it", "error", err)
		return nil, binaryID{} // hashed once the plugin has loaded, off the first scan
	}
	if e.Format != cacheFormat || e.Name != name {
		log.Warn("foreign catalog cache entry; ignoring it", "format", e.Format, "name", e.Name)
		return nil, binaryID{} // hashed once the plugin has loaded, off the first scan
	}
	id, ok := identify(path, &e.Binary)
	if !ok {
		log.Debug("cannot identify the plugin binary; not using the catalog cache")
		return nil, binaryID{}
	}
	if e.Key != cacheKey(id.SHA256, fingerprint) {
		log.Debug("stale catalog cache entry; ignoring it")
		return nil, id
	}
	l, err := e.parse()
	if err != nil {
		log.Warn("corrupt catalog cache entry; ignoring it", "error", err)
		return nil, id
	}
	e.parsed = &l
	return e, id
}

// parse returns the entry's definitions, refusing an entry whose
// definitions are not JSON objects with their key (the catalog checks the
// rest when it is published).
func (e *cacheEntry) parse() (lists, error) {
	var l lists
	for _, k := range []struct {
		kind, key string
		raws      []json.RawMessage
		add       func(key string, raw json.RawMessage)
	}{
		{"tool", "name", e.Tools, func(k string, raw json.RawMessage) { l.tools = append(l.tools, tool.Def{Name: k, JSON: raw}) }},
		{"resource", "uri", e.Resources, func(k string, raw json.RawMessage) {
			l.resources = append(l.resources, tool.Resource{URI: k, JSON: raw})
		}},
		{"resource template", "uriTemplate", e.Templates, func(k string, raw json.RawMessage) {
			l.templates = append(l.templates, tool.Template{URITemplate: k, JSON: raw})
		}},
		{"prompt", "name", e.Prompts, func(k string, raw json.RawMessage) { l.prompts = append(l.prompts, tool.Prompt{Name: k, JSON: raw}) }},
	} {
		for i, raw := range k.raws {
			key, ok := keyOf(raw, k.key)
			if !ok {
				return lists{}, fmt.Errorf("%s %d has no %s", k.kind, i, k.key)
			}
			k.add(key, raw)
		}
	}
	return l, nil
}

// keyOf returns the string member key of a JSON object.
func keyOf(raw json.RawMessage, key string) (string, bool) {
	var probe map[string]json.RawMessage
	var k string
	if json.Unmarshal(raw, &probe) != nil || json.Unmarshal(probe[key], &k) != nil || k == "" {
		return "", false
	}
	return k, true
}

// lists returns the entry's definitions: those lookup parsed, for an
// entry read from the cache (a warm start asks for them two or three
// times, and parsing 1,000 definitions each time was 4% of its CPU), else
// parsed now.
func (e *cacheEntry) lists() lists {
	if e.parsed == nil {
		l, _ := e.parse()
		return l
	}
	l := *e.parsed
	return lists{tools: slices.Clone(l.tools), resources: slices.Clone(l.resources), templates: slices.Clone(l.templates), prompts: slices.Clone(l.prompts)}
}

// description returns the entry's Describe answer.
func (e *cacheEntry) description() pluginclient.Description {
	return pluginclient.Description{Name: e.Plugin, Version: e.Version, ContractVersion: e.Contract, Offers: e.Offers,
		About: pluginclient.Bound(pluginproto.About{Title: e.Title, Description: e.Description}), Requests: e.Requests.Clone()}
}

// newEntry is the entry of what a running plugin offers.
func newEntry(name string, id binaryID, fingerprint string, d pluginclient.Description, l lists) *cacheEntry {
	e := &cacheEntry{
		Format: cacheFormat, Name: name, Key: cacheKey(id.SHA256, fingerprint), Binary: id,
		Plugin: d.Name, Version: d.Version, Contract: d.ContractVersion, Offers: d.Offers,
		Title: d.About.Title, Description: d.About.Description, Requests: d.Requests.Clone(),
		Tools: []json.RawMessage{}, Resources: []json.RawMessage{}, Templates: []json.RawMessage{}, Prompts: []json.RawMessage{},
	}
	for _, t := range l.tools {
		e.Tools = append(e.Tools, t.JSON)
	}
	for _, r := range l.resources {
		e.Resources = append(e.Resources, r.JSON)
	}
	for _, t := range l.templates {
		e.Templates = append(e.Templates, t.JSON)
	}
	for _, p := range l.prompts {
		e.Prompts = append(e.Prompts, p.JSON)
	}
	return e
}

// store writes e atomically (a temporary file renamed over the entry). A
// failure is logged: the cache only saves time.
func (c *catalogCache) store(e *cacheEntry) {
	if c == nil || e.Binary.SHA256 == "" {
		return
	}
	log := c.log.With("plugin", e.Name)
	b, err := json.Marshal(e)
	if err == nil {
		err = os.MkdirAll(c.dir, 0o700)
	}
	if err == nil {
		err = atomicfile.Write(c.path(e.Name), b)
	}
	if err != nil {
		log.Warn("cannot write the catalog cache entry", "error", err)
		return
	}
	log.Debug("catalog cache entry written", "entry", c.path(e.Name))
}

// sameLists reports whether two sets of definitions are the same, byte
// for byte and in order.
func sameLists(a, b lists) bool {
	return slices.EqualFunc(a.tools, b.tools, func(x, y tool.Def) bool { return string(x.JSON) == string(y.JSON) }) &&
		slices.EqualFunc(a.resources, b.resources, func(x, y tool.Resource) bool { return string(x.JSON) == string(y.JSON) }) &&
		slices.EqualFunc(a.templates, b.templates, func(x, y tool.Template) bool { return string(x.JSON) == string(y.JSON) }) &&
		slices.EqualFunc(a.prompts, b.prompts, func(x, y tool.Prompt) bool { return string(x.JSON) == string(y.JSON) })
}
