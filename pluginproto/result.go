package pluginproto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/plughost/plughost/internal/pluginwire"
)

// Result is what a tool returns: an MCP CallToolResult.
type Result struct {
	// Content is what the model reads: text, images, audio, resources.
	Content []Content
	// StructuredContent, when not nil, is the result as a JSON object that
	// conforms to the tool's OutputSchema. When Content is empty, its JSON
	// text is also sent as a text block, as MCP asks for clients that do not
	// read structured content.
	StructuredContent any
	// IsError marks a failure of the tool itself (bad arguments, a missing
	// file), which the model sees and can correct.
	IsError bool
	// Meta is the result's optional "_meta" object.
	Meta map[string]any
}

// TextResult returns a result whose only content is the text s.
func TextResult(s string) *Result {
	return &Result{Content: []Content{Text(s)}}
}

// ErrorResult returns an isError result whose only content is the formatted
// text.
func ErrorResult(format string, args ...any) *Result {
	return &Result{Content: []Content{Text(fmt.Sprintf(format, args...))}, IsError: true}
}

// encode returns r as MCP CallToolResult JSON. "content" is always present.
func (r *Result) encode() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"content":[`)
	var structured []byte
	if r.StructuredContent != nil {
		b, err := json.Marshal(r.StructuredContent)
		if err != nil {
			return nil, fmt.Errorf("structuredContent: %w", err)
		}
		if string(b) != "null" {
			if !pluginwire.IsObject(b) {
				return nil, fmt.Errorf("structuredContent is not a JSON object: %.80s", b)
			}
			structured = b
		}
	}
	for i, c := range r.Content {
		if i > 0 {
			buf.WriteByte(',')
		}
		if len(c.raw) == 0 {
			return nil, fmt.Errorf("content[%d] is the zero Content; build blocks with Text, Image, ...", i)
		}
		if !pluginwire.IsObject(c.raw) {
			return nil, fmt.Errorf("content[%d] is not a JSON object: %.80s", i, c.raw)
		}
		if err := json.Compact(&buf, c.raw); err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
	}
	if len(r.Content) == 0 && structured != nil {
		b, _ := json.Marshal(textBlock{Type: "text", Text: string(structured)})
		buf.Write(b)
	}
	buf.WriteByte(']')
	if structured != nil {
		buf.WriteString(`,"structuredContent":`)
		buf.Write(structured)
	}
	if r.IsError {
		buf.WriteString(`,"isError":true`)
	}
	if r.Meta != nil {
		b, err := json.Marshal(r.Meta)
		if err != nil {
			return nil, fmt.Errorf("_meta: %w", err)
		}
		buf.WriteString(`,"_meta":`)
		buf.Write(b)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// Content is one MCP content block. Build it with Text, Image, Audio,
// EmbeddedText, EmbeddedBlob, ResourceLink or, for a block this package does
// not model, RawContent. Its JSON is computed when it is built.
type Content struct {
	raw json.RawMessage
}

// MarshalJSON returns the block's MCP JSON.
func (c Content) MarshalJSON() ([]byte, error) {
	if len(c.raw) == 0 {
		return nil, errors.New("pluginproto: zero Content; build blocks with Text, Image, ...")
	}
	return c.raw, nil
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type dataBlock struct {
	Type     string `json:"type"`
	Data     []byte `json:"data"` // base64 on the wire
	MIMEType string `json:"mimeType"`
}

type resourceBlock struct {
	Type     string `json:"type"`
	Resource any    `json:"resource"`
}

type textResource struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text"`
}

type blobResource struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Blob     []byte `json:"blob"` // base64 on the wire
}

type linkBlock struct {
	Type     string `json:"type"`
	URI      string `json:"uri"`
	Name     string `json:"name"`
	MIMEType string `json:"mimeType,omitempty"`
}

func block(v any) Content {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // cannot happen: strings and byte slices always marshal
	}
	return Content{raw: b}
}

// Text returns a text content block.
func Text(s string) Content {
	return block(textBlock{Type: "text", Text: s})
}

// Image returns an image content block; data is the raw image (sent base64
// encoded) and mimeType its type, such as "image/png".
func Image(data []byte, mimeType string) Content {
	return block(dataBlock{Type: "image", Data: nonNil(data), MIMEType: mimeType})
}

// Audio returns an audio content block; data is the raw audio (sent base64
// encoded) and mimeType its type, such as "audio/wav".
func Audio(data []byte, mimeType string) Content {
	return block(dataBlock{Type: "audio", Data: nonNil(data), MIMEType: mimeType})
}

// EmbeddedText returns a resource content block embedding a text resource.
// mimeType may be empty.
func EmbeddedText(uri, mimeType, text string) Content {
	return block(resourceBlock{Type: "resource", Resource: textResource{URI: uri, MIMEType: mimeType, Text: text}})
}

// EmbeddedBlob returns a resource content block embedding a binary resource
// (sent base64 encoded). mimeType may be empty.
func EmbeddedBlob(uri, mimeType string, data []byte) Content {
	return block(resourceBlock{Type: "resource", Resource: blobResource{URI: uri, MIMEType: mimeType, Blob: nonNil(data)}})
}

// ResourceLink returns a resource_link content block: a pointer to a resource
// the client may read, named name. mimeType may be empty.
func ResourceLink(uri, name, mimeType string) Content {
	return block(linkBlock{Type: "resource_link", URI: uri, Name: name, MIMEType: mimeType})
}

// RawContent returns a content block given as MCP JSON, for blocks or fields
// (annotations, _meta) this package does not model. It must be a JSON object
// with a "type"; a malformed block turns the tool's result into an error
// result naming the problem.
func RawContent(blockJSON json.RawMessage) Content {
	return Content{raw: blockJSON}
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
