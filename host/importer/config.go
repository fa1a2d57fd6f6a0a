package importer

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/naming"
)

// MergeConfig returns src, the content of a configuration file (named
// filename in errors), with blocks added to its sandbox block, or with a
// sandbox block of its own appended when it has none; an empty src gives a
// whole new file. Everything else in src stays byte for byte, comments
// included: the text is spliced at the positions hclsyntax parses, not
// re-printed.
//
// A plugin whose block src has already is left as it is and its name
// returned in kept, unless replace: then its block is replaced. src must
// parse as a configuration (host/config), and so must the result: a
// mistake is an error, never a broken file.
func MergeConfig(src []byte, filename string, blocks []Block, replace bool) (out []byte, kept []string, err error) {
	if len(bytes.TrimSpace(src)) == 0 {
		var b bytes.Buffer
		b.WriteString(snippetHeader + "sandbox {\n")
		for _, bl := range blocks {
			b.WriteString(bl.Text)
		}
		b.WriteString("}\n")
		return check(b.Bytes(), filename, nil)
	}
	if _, err := config.Parse(src, filename); err != nil {
		return nil, nil, fmt.Errorf("%s does not parse, so import leaves it as it is: %w", filename, err)
	}
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, nil, diags
	}
	var sandbox *hclsyntax.Block
	for _, b := range file.Body.(*hclsyntax.Body).Blocks {
		if b.Type == "sandbox" {
			sandbox = b
		}
	}
	if sandbox == nil {
		var b bytes.Buffer
		b.Write(src)
		if !bytes.HasSuffix(src, []byte("\n")) {
			b.WriteByte('\n')
		}
		b.WriteString("\n" + snippetHeader + "sandbox {\n")
		for _, bl := range blocks {
			b.WriteString(bl.Text)
		}
		b.WriteString("}\n")
		return check(b.Bytes(), filename, nil)
	}

	// The edits, as byte ranges of src replaced by text, applied from the
	// last: the blocks replaced, then the new ones before the closing brace.
	type edit struct {
		start, end int
		text       string
	}
	var edits []edit
	existing := map[string]*hclsyntax.Block{}
	for _, b := range sandbox.Body.Blocks {
		if b.Type == "plugin" && len(b.Labels) == 1 {
			if name, err := naming.ForLabel(b.Labels[0]); err == nil {
				existing[name] = b
			}
		}
	}
	var add bytes.Buffer
	for _, bl := range blocks {
		old, has := existing[bl.Name]
		switch {
		case has && bl.Plugin && replace:
			start, end := lineOf(src, old.Range().Start.Byte, old.Range().End.Byte)
			edits = append(edits, edit{start, end, bl.Text})
		case has && bl.Plugin:
			kept = append(kept, bl.Name)
		case has: // a comment only: the block there says more
		case !bl.Plugin && bytes.Contains(src, []byte(bl.Text)): // said already, by an earlier import
		default:
			add.WriteString(bl.Text)
		}
	}
	brace := sandbox.CloseBraceRange.Start.Byte
	lineStart := bytes.LastIndexByte(src[:brace], '\n') + 1
	if len(bytes.TrimSpace(src[lineStart:brace])) == 0 && lineStart > sandbox.OpenBraceRange.End.Byte {
		edits = append(edits, edit{lineStart, lineStart, add.String()})
	} else {
		edits = append(edits, edit{brace, brace, "\n" + add.String()})
	}
	slices.SortFunc(edits, func(a, b edit) int { return b.start - a.start })
	out = slices.Clone(src)
	for _, e := range edits {
		out = slices.Concat(out[:e.start], []byte(e.text), out[e.end:])
	}
	return check(out, filename, kept)
}

// lineOf widens the range [start, end) of src to whole lines: from the
// start of start's line when only blanks precede it, through the newline
// ending end's line when only blanks follow it.
func lineOf(src []byte, start, end int) (int, int) {
	if ls := bytes.LastIndexByte(src[:start], '\n') + 1; len(bytes.TrimSpace(src[ls:start])) == 0 {
		start = ls
	}
	if le := bytes.IndexByte(src[end:], '\n'); le >= 0 && len(bytes.TrimSpace(src[end:end+le])) == 0 {
		end += le + 1
	}
	return start, end
}

// check returns out when it parses as a configuration file.
func check(out []byte, filename string, kept []string) ([]byte, []string, error) {
	if _, err := config.Parse(out, filename); err != nil {
		return nil, nil, fmt.Errorf("the merged configuration would not parse (a bug of plughost import; %s is left as it is): %w", filename, err)
	}
	return out, kept, nil
}

// WriteConfig adds blocks to the configuration file at path
// (MergeConfig), or writes a new one (mode 0644, its directory
// made) when there is none; the names of the plugins whose blocks it kept
// are returned.
func WriteConfig(path string, blocks []Block, replace bool) ([]string, error) {
	src, err := os.ReadFile(path)
	mode := os.FileMode(0o644)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	default:
		if st, err := os.Stat(path); err == nil {
			mode = st.Mode().Perm()
		}
	}
	out, kept, err := MergeConfig(src, path, blocks, replace)
	if err != nil {
		return nil, err
	}
	return kept, WriteNew(path, out, mode, true)
}

// RemovePluginBlock removes the plugin block of the plugin name from the
// sandbox block of the configuration file at path (plughost uninstall
// undoing what plughost install added), everything else byte for byte;
// removed is false when the file has none. The result must parse, or the
// file is left as it is.
func RemovePluginBlock(path, name string) (removed bool, err error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	file, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		return false, diags
	}
	for _, sb := range file.Body.(*hclsyntax.Body).Blocks {
		if sb.Type != "sandbox" {
			continue
		}
		for _, b := range sb.Body.Blocks {
			if b.Type != "plugin" || len(b.Labels) != 1 {
				continue
			}
			if n, err := naming.ForLabel(b.Labels[0]); err != nil || n != name {
				continue
			}
			start, end := lineOf(src, b.Range().Start.Byte, b.Range().End.Byte)
			out, _, err := check(slices.Concat(src[:start], src[end:]), path, nil)
			if err != nil {
				return false, err
			}
			mode := os.FileMode(0o644)
			if st, err := os.Stat(path); err == nil {
				mode = st.Mode().Perm()
			}
			return true, WriteNew(path, out, mode, true)
		}
	}
	return false, nil
}
