// Package toolsearcheval loads the tool-search data of ../shared/toolsearch
// (LiveMCPBench's 70 MCP servers, 527 tools, and the 49 development
// tasks; see its README) and computes its metrics, so that every ranker
// (host/toolsearch, its plain BM25 baseline, a library's) is judged by the
// same code. Tests and benchmarks use it; the product never imports it.
//
//	data, err := toolsearcheval.Load()
//	m := toolsearcheval.Evaluate(data.Queries, func(query string, k int) []string {
//		return ids // the top k tools, best first, as "<server>::<tool>"
//	})
//	fmt.Println(m) // recall@1/5/10 and hit@1/5/10
package toolsearcheval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/mod/modfile"

	"github.com/plughost/plughost/host/naming"
)

// Module is the module whose root holds the repository; the shared
// directory is beside it.
const Module = "github.com/plughost/plughost"

// Server is one MCP server of the corpus with its tools, in file order.
type Server struct {
	Name        string // the corpus's server key ("yahoo-finance", "Ant Design Components")
	Title       string
	Description string
	Tools       []Tool
}

// Tool is one tool of the corpus.
type Tool struct {
	ID  string          // "<server>::<tool name>", as the queries' gold groups name it
	Def json.RawMessage // the MCP Tool object: name, description, inputSchema
}

// Query is one task: its text and, for each tool it needs, the group of
// tools any of which does the job.
type Query struct {
	ID     string     `json:"id"`
	Text   string     `json:"query"`
	Groups [][]string `json:"gold_groups"`
}

// Data is the corpus and the development queries.
type Data struct {
	Servers []Server
	Queries []Query
}

// Tools counts the corpus's tools.
func (d *Data) Tools() int {
	n := 0
	for _, s := range d.Servers {
		n += len(s.Tools)
	}
	return n
}

// Dir finds ../shared/toolsearch beside the root of Module, walking up
// from the working directory (a test's is its package's directory), and
// returns its real path.
func Dir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isRoot(dir) {
			// Symbolic links resolved: a sandboxed plugin granted this
			// path sees only the granted target, not a link to it (the
			// shared directory may be a link beside the checkout).
			return filepath.EvalSymlinks(filepath.Join(dir, "..", "shared", "toolsearch"))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no directory above the working directory holds the go.mod of %s", Module)
		}
		dir = parent
	}
}

func isRoot(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && modfile.ModulePath(b) == Module
}

// Load reads tools.jsonl and queries-dev.jsonl from Dir.
func Load() (*Data, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	return LoadDir(dir)
}

// LoadDir reads tools.jsonl and queries-dev.jsonl from dir.
func LoadDir(dir string) (*Data, error) {
	servers, err := ReadServers(filepath.Join(dir, "tools.jsonl"))
	if err != nil {
		return nil, err
	}
	d := &Data{Servers: servers}
	err = eachLine(filepath.Join(dir, "queries-dev.jsonl"), func(line []byte) error {
		var q Query
		if err := json.Unmarshal(line, &q); err != nil {
			return err
		}
		if len(q.Groups) == 0 {
			return fmt.Errorf("query %s has no gold groups", q.ID)
		}
		d.Queries = append(d.Queries, q)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// ReadServers reads a file shaped as tools.jsonl: the servers in the order
// of their first tool, each tool's Def its name, description and
// inputSchema.
func ReadServers(path string) ([]Server, error) {
	var servers []Server
	byName := make(map[string]int)
	err := eachLine(path, func(line []byte) error {
		var t struct {
			ID          string          `json:"id"`
			Server      string          `json:"server"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
			Title       string          `json:"server_title"`
			ServerDesc  string          `json:"server_description"`
		}
		if err := json.Unmarshal(line, &t); err != nil {
			return err
		}
		def, err := json.Marshal(map[string]any{"name": t.Name, "description": t.Description, "inputSchema": t.InputSchema})
		if err != nil {
			return err
		}
		i, ok := byName[t.Server]
		if !ok {
			i = len(servers)
			byName[t.Server] = i
			servers = append(servers, Server{Name: t.Server, Title: t.Title, Description: t.ServerDesc})
		}
		servers[i].Tools = append(servers[i].Tools, Tool{ID: t.ID, Def: def})
		return nil
	})
	return servers, err
}

// PluginName is the file name, and so the provider name, of the plugin
// that serves server in a plugin directory (corpusplugin): the server key
// with every character outside [a-zA-Z0-9_-] replaced by "_"
// ("Ant Design Components": Ant_Design_Components), as plughost derives
// provider names from file names (naming.ForFile). None of the corpus's
// keys clash so, nor is longer than a provider name may be.
func PluginName(server string) string {
	name, _ := naming.ForFile(server)
	return name
}

func eachLine(path string, f func([]byte) error) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<24)
	n := 0
	for sc.Scan() {
		n++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := f(sc.Bytes()); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if n == 0 {
		return errors.New(path + ": empty")
	}
	return nil
}

// Ks are the cut-offs the metrics are taken at.
var Ks = [...]int{1, 5, 10}

// Metrics are the README's measures, each at the cut-offs Ks, averaged
// over the queries.
type Metrics struct {
	// Recall[i] is the mean over queries of the share of a query's gold
	// groups with a member among its top Ks[i] results.
	Recall [len(Ks)]float64
	// Hit[i] is the share of queries with at least one group found in
	// their top Ks[i] results.
	Hit [len(Ks)]float64
}

// At returns recall and hit at cut-off k, one of Ks.
func (m Metrics) At(k int) (recall, hit float64) {
	for i, kk := range Ks {
		if kk == k {
			return m.Recall[i], m.Hit[i]
		}
	}
	panic(fmt.Sprintf("toolsearcheval: no metrics at %d", k))
}

// String is one table row: recall@1/5/10, then hit@1/5/10.
func (m Metrics) String() string {
	return fmt.Sprintf("%.3f %.3f %.3f | %.3f %.3f %.3f",
		m.Recall[0], m.Recall[1], m.Recall[2], m.Hit[0], m.Hit[1], m.Hit[2])
}

// Header names the columns of String.
const Header = "R@1   R@5   R@10  | H@1   H@5   H@10"

// Evaluate runs search once per query for the top max(Ks) tool IDs and
// scores them.
func Evaluate(queries []Query, search func(query string, k int) []string) Metrics {
	var m Metrics
	kmax := Ks[len(Ks)-1]
	for _, q := range queries {
		ids := search(q.Text, kmax)
		for i, k := range Ks {
			top := ids[:min(k, len(ids))]
			found := 0
			for _, g := range q.Groups {
				if anyIn(g, top) {
					found++
				}
			}
			m.Recall[i] += float64(found) / float64(len(q.Groups))
			if found > 0 {
				m.Hit[i]++
			}
		}
	}
	for i := range Ks {
		m.Recall[i] /= float64(len(queries))
		m.Hit[i] /= float64(len(queries))
	}
	return m
}

func anyIn(group, top []string) bool {
	for _, g := range group {
		for _, id := range top {
			if g == id {
				return true
			}
		}
	}
	return false
}
