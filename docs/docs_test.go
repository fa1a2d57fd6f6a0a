// Package docs holds plughost's documentation pages and the test that keeps
// them honest. The README and every page here are read as a reader would
// use them:
//
//   - every ```hcl block is a configuration plughost accepts: it parses with
//     host/config, as `plughost serve --config` would read it. A block that
//     is deliberately part of a file is preceded by the line
//     <!-- fragment --> and is then only parsed as HCL syntax;
//   - every ```json block is JSON (one value, or several in a row, as JSON
//     lines);
//   - every relative link names a file or directory that exists, and every
//     #anchor a heading of its page, by GitHub's rule (see anchor);
//   - the README stays a short map: at most readmeMaxLines lines;
//   - every docs/PAGE.md "Heading" a help string or a doc comment of the
//     Go source points to is a heading of that page.
package docs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/plughost/plughost/host/config"
)

// readmeMaxLines bounds the README: what plughost is, the quickstart, the
// two commands and a map of these pages.
const readmeMaxLines = 300

// fragmentMark, on the line before a fence, marks an hcl block that is part
// of a configuration rather than a whole one.
const fragmentMark = "<!-- fragment -->"

// pages returns the README and every page of this directory, as paths
// relative to this directory.
func pages(t *testing.T) []string {
	t.Helper()
	md, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(md) == 0 {
		t.Fatal("no *.md page in docs/")
	}
	return append([]string{filepath.Join("..", "README.md")}, md...)
}

// block is one fenced code block of a page.
type block struct {
	lang     string // the fence's info string, first word
	line     int    // the line of the opening fence, from 1
	body     string
	fragment bool // preceded by fragmentMark
}

// prose is a run of lines outside code blocks.
type prose struct {
	line int // its first line, from 1
	text string
}

// split cuts a page into its fenced code blocks and the prose between them.
func split(src string) (blocks []block, texts []prose) {
	lines := strings.Split(strings.TrimSuffix(src, "\n"), "\n")
	var cur *block
	var fence string
	var text strings.Builder
	textStart := 1
	prev := ""
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		if cur == nil {
			if f, ok := fenceOf(trimmed); ok {
				texts = append(texts, prose{textStart, text.String()})
				text.Reset()
				lang, _, _ := strings.Cut(strings.TrimSpace(trimmed[len(f):]), " ")
				cur = &block{lang: lang, line: i + 1, fragment: prev == fragmentMark}
				fence = f
				continue
			}
			if text.Len() == 0 {
				textStart = i + 1
			}
			text.WriteString(l)
			text.WriteByte('\n')
			if trimmed != "" {
				prev = trimmed
			}
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
			blocks = append(blocks, *cur)
			cur, prev = nil, ""
			continue
		}
		cur.body += strings.TrimPrefix(l, indentOf(lines[cur.line-1])) + "\n"
	}
	texts = append(texts, prose{textStart, text.String()})
	return blocks, texts
}

// fenceOf returns the fence a trimmed line opens (``` or ~~~, or longer).
func fenceOf(trimmed string) (string, bool) {
	for _, c := range []string{"`", "~"} {
		n := len(trimmed) - len(strings.TrimLeft(trimmed, c))
		if n >= 3 {
			return strings.Repeat(c, n), true
		}
	}
	return "", false
}

func indentOf(line string) string {
	return line[:len(line)-len(strings.TrimLeft(line, " "))]
}

var (
	headingRE  = regexp.MustCompile(`(?m)^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlIDRE   = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	codeSpanRE = regexp.MustCompile("`[^`]*`")
	// linkRE matches an inline link, its label possibly over several lines.
	linkRE   = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// anchor is the anchor GitHub gives a heading: its text lowercased, every
// character that is not a letter, a digit, a space, a hyphen or an
// underscore dropped (backticks, colons, parentheses, commas, …), then
// each space a hyphen.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns every anchor of a page: its headings' (a repeated one
// gets -1, -2, … as on GitHub) and its explicit <a id> or <a name>.
func anchors(src string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	_, texts := split(src)
	for _, p := range texts {
		for _, m := range headingRE.FindAllStringSubmatch(p.text, -1) {
			a := anchor(m[2])
			if n := seen[a]; n > 0 {
				out[fmt.Sprintf("%s-%d", a, n)] = true
			} else {
				out[a] = true
			}
			seen[a]++
		}
		for _, m := range htmlIDRE.FindAllStringSubmatch(p.text, -1) {
			out[m[1]] = true
		}
	}
	return out
}

func TestAnchor(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Sandbox", "sandbox"},
		{"Over HTTP", "over-http"},
		{"Authorization (OAuth)", "authorization-oauth"},
		{"Configuration files: init, check and PLUGHOST_CONFIG", "configuration-files-init-check-and-plughost_config"},
		{"Quickstart: a desktop client listing plughost's tools", "quickstart-a-desktop-client-listing-plughosts-tools"},
		{"Limits: what a client, device or plugin can make plughost hold", "limits-what-a-client-device-or-plugin-can-make-plughost-hold"},
		{"Every tool from the first request; plugins on demand", "every-tool-from-the-first-request-plugins-on-demand"},
		{"With `--token`", "with---token"},
		{"Asking the client (elicitation, sampling, roots)", "asking-the-client-elicitation-sampling-roots"},
	} {
		if got := anchor(tc.heading); got != tc.want {
			t.Errorf("anchor(%q) = %q; want %q", tc.heading, got, tc.want)
		}
	}
}

func TestAnchorsNumberRepeatedHeadings(t *testing.T) {
	got := anchors("# A\n\n```sh\n# not a heading\n```\n\n## Limits\n\n### Limits\n\n<a id=\"here\"></a>\n")
	want := []string{"a", "here", "limits", "limits-1"}
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, want) {
		t.Errorf("anchors = %q; want %q", keys, want)
	}
}

func TestSplit(t *testing.T) {
	src := "text\n\n<!-- fragment -->\n```hcl\na = 1\n```\n\n  ```json\n  {}\n  ```\nend\n"
	blocks, texts := split(src)
	if len(blocks) != 2 {
		t.Fatalf("split found %d blocks; want 2", len(blocks))
	}
	if b := blocks[0]; b.lang != "hcl" || b.line != 4 || b.body != "a = 1\n" || !b.fragment {
		t.Errorf("first block = %+v", b)
	}
	if b := blocks[1]; b.lang != "json" || b.line != 8 || b.body != "{}\n" || b.fragment {
		t.Errorf("second block = %+v", b)
	}
	if n := len(texts); n != 3 || texts[2].line != 11 || texts[2].text != "end\n" {
		t.Errorf("prose = %+v", texts)
	}
}

// TestReadmeIsShort keeps the README a map, not a manual.
func TestReadmeIsShort(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(src, []byte("\n")); n > readmeMaxLines {
		t.Errorf("README.md has %d lines; at most %d: move the detail to a page of docs/", n, readmeMaxLines)
	}
}

// TestConfigurationBlocks parses every hcl block as plughost would.
func TestConfigurationBlocks(t *testing.T) {
	blocks := blocksOf(t, "hcl")
	for _, b := range blocks {
		if b.fragment {
			if _, diags := hclsyntax.ParseConfig([]byte(b.body), b.where, hcl.InitialPos); diags.HasErrors() {
				t.Errorf("%s: a fragment that is not HCL: %v", b.where, diags)
			}
			continue
		}
		if _, err := config.Parse([]byte(b.body), b.where); err != nil {
			t.Errorf("%s: plughost would refuse this configuration (mark a deliberate fragment with %s):\n%v", b.where, fragmentMark, err)
		}
	}
	if len(blocks) == 0 {
		t.Error("no hcl block found")
	}
}

// TestJSONBlocks decodes every json block: one JSON value or several.
func TestJSONBlocks(t *testing.T) {
	for _, b := range blocksOf(t, "json") {
		if err := decodeAll(b.body); err != nil {
			t.Errorf("%s: %v", b.where, err)
		}
	}
}

// A pageBlock is a fenced block of a page, with where it stands
// (PAGE:LINE) for messages and HCL's positions.
type pageBlock struct {
	block
	where string
}

// blocksOf returns the fenced blocks of language lang in every page.
func blocksOf(t *testing.T, lang string) []pageBlock {
	t.Helper()
	var out []pageBlock
	for _, page := range pages(t) {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		blocks, _ := split(string(src))
		for _, b := range blocks {
			if b.lang == lang {
				out = append(out, pageBlock{b, fmt.Sprintf("%s:%d", page, b.line)})
			}
		}
	}
	return out
}

func decodeAll(body string) error {
	dec := json.NewDecoder(strings.NewReader(body))
	values := 0
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("not JSON: %w", err)
		}
		values++
	}
	if values == 0 {
		return errors.New("an empty json block")
	}
	return nil
}

func TestDecodeAll(t *testing.T) {
	for _, tc := range []struct {
		body string
		ok   bool
	}{
		{`{"a": 1}`, true},
		{"{\"a\": 1}\n{\"b\": [2]}\n", true},
		{`{"a": 1,}`, false},
		{"", false},
	} {
		if err := decodeAll(tc.body); (err == nil) != tc.ok {
			t.Errorf("decodeAll(%q) = %v; want ok %v", tc.body, err, tc.ok)
		}
	}
}

// TestLinks resolves every relative link of the README and the pages: the
// file or directory exists, and an #anchor names a heading of its page.
func TestLinks(t *testing.T) {
	anchorsOf := map[string]map[string]bool{}
	pageAnchors := func(path string) (map[string]bool, error) {
		if a, ok := anchorsOf[path]; ok {
			return a, nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		anchorsOf[path] = anchors(string(src))
		return anchorsOf[path], nil
	}
	links := 0
	for _, page := range pages(t) {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		_, texts := split(string(src))
		for _, p := range texts {
			// Code spans are not links; blank them, keeping the line count.
			text := codeSpanRE.ReplaceAllStringFunc(p.text, func(s string) string {
				return strings.Map(func(r rune) rune {
					if r == '\n' {
						return r
					}
					return ' '
				}, s)
			})
			for _, m := range linkRE.FindAllStringSubmatchIndex(text, -1) {
				target := text[m[4]:m[5]]
				if schemeRE.MatchString(target) {
					continue
				}
				links++
				where := fmt.Sprintf("%s:%d", page, p.line+strings.Count(text[:m[0]], "\n"))
				file, frag, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
					if _, err := os.Stat(path); err != nil {
						t.Errorf("%s: link to %s: no such file or directory", where, target)
						continue
					}
				}
				if frag == "" || !strings.HasSuffix(path, ".md") {
					continue
				}
				a, err := pageAnchors(path)
				if err != nil {
					t.Errorf("%s: link to %s: %v", where, target, err)
					continue
				}
				if !a[frag] {
					t.Errorf("%s: link to %s: %s has no heading with anchor #%s", where, target, path, frag)
				}
			}
		}
	}
	if links == 0 {
		t.Error("no relative link found")
	}
}

// sourceRefRE matches a pointer from Go source to a section of a page, as
// help strings and doc comments write it: docs/security.md "Sandbox" (the
// quotes possibly escaped inside a Go string).
var sourceRefRE = regexp.MustCompile(`docs/([a-z0-9-]+\.md),? \\?"([^"\\]+)\\?"`)

// TestSourcePointers checks that every docs/PAGE.md "Heading" the
// command's help and the packages' comments point a reader to is a
// heading of that page.
func TestSourcePointers(t *testing.T) {
	var files []string
	for _, dir := range []string{"cmd", "host", "pluginproto", "sandbox", "internal"} {
		err := filepath.WalkDir(filepath.Join("..", dir), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(path, ".go") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range sourceRefRE.FindAllSubmatch(src, -1) {
			page, heading := string(m[1]), string(m[2])
			body, err := os.ReadFile(page)
			if err != nil {
				t.Errorf("%s: points to docs/%s, which does not exist", path, page)
				continue
			}
			if !anchors(string(body))[anchor(heading)] {
				t.Errorf("%s: points to docs/%s %q, which has no such heading", path, page, heading)
			}
		}
	}
}

func TestSourceRefRE(t *testing.T) {
	for _, tc := range []struct{ src, page, heading string }{
		{`see docs/security.md "Sandbox", "Trust"`, "security.md", "Sandbox"},
		{`(see docs/operators.md \"Tool search\")`, "operators.md", "Tool search"},
		{`docs/operators.md, "Replicas share a state key"`, "operators.md", "Replicas share a state key"},
	} {
		m := sourceRefRE.FindStringSubmatch(tc.src)
		if m == nil || m[1] != tc.page || m[2] != tc.heading {
			t.Errorf("sourceRefRE in %q = %q; want %s %q", tc.src, m, tc.page, tc.heading)
		}
	}
}
