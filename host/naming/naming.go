// Package naming holds every rule plughost applies to the names it serves:
// provider names (a plugin, a device), tool and prompt names, and how
// names that clash or cannot be served as they are become names that can
// (or, for resource URIs, which are never renamed, which provider owns
// one). Nothing else in the host decides whether a name is valid
// or how to derive one; the catalog, the plugin manager, the device bridge
// and the configuration file all ask this package.
//
// # Provider names
//
// A provider name is 1 to [MaxProvider] (32) of [a-zA-Z0-9_-]. It prefixes a
// tool's exposed name when two providers offer the same tool
// (<provider>__<tool>), so it is kept short enough to leave room for the
// tool. Where a provider's natural name cannot be one, a valid name is
// derived, never refused:
//
//	naming.ForFile("echo")                                  // "echo", ""
//	naming.ForFile("my.tool.sh")                            // "my_tool", reason: characters replaced
//	naming.ForFile("a-plugin-with-a-rather-long-file-name") // "a-plugin-with-a-rather_3f1c2a9b", reason: shortened
//	naming.ForDevice("kitchen box")                         // "device-kitchen-box"
//
// The rules, in order: a plugin file loses its last extension; every
// character outside the alphabet becomes "_" (a device id, which is free
// text, has each run of them turned into one "-"); a plugin whose name
// would start with [DevicePrefix] is given "plugin-" in front, because that
// prefix is the device bridge's, so a device can never take a plugin's name
// or the reverse; a name longer than 32 characters keeps its first 23 and
// gets "_" and 8 hex digits of a SHA-256 of the whole name. The hash makes
// the short name stable (the same file always gets the same name) and
// distinct from the short name of another long file with the same start.
// [ForLabel] maps a configuration file's plugin block to the same name, so
// a block may name a plugin by its long file name or by its derived name.
//
// # Tool and prompt names
//
// A provider may name a tool 1 to [MaxTool] (128) of [A-Za-z0-9_.-], MCP's
// rule ([CheckName]; pluginproto, which may not import the host, checks
// the same rule on its own when a Go plugin adds a tool). Clients are shown
// only names matching ^[a-zA-Z0-9_-]{1,64}$ ([ValidExposed]): Claude
// Desktop refuses the rest. [Assign] turns the names every provider offers
// into unique exposed names, keeping those it gave before:
//
//  0. A name keeps the exposed name the previous Assign gave it while its
//     provider offers it (names are sticky): a name a client called
//     reaches the same provider until that provider goes, and clash
//     resolution never moves a name to another provider. The steps below
//     name the newcomers, around the kept names.
//  1. A tool keeps its own name unless another provider offers the same
//     name; then every newcomer among them becomes <provider>__<tool> (in
//     one Assign with no previous names, every one of them). A name that
//     starts with another provider's "<provider>__" ([Foreign]) becomes
//     <provider>__<tool> too, under its own provider's prefix: only
//     provider p exposes names starting "p__", so no provider (a device,
//     say) can take a name clients expect from another.
//  2. '.' becomes '_'.
//  3. A name longer than 64 characters, or one that now collides with
//     another or a kept name, is cut and given a stable hash of provider
//     and tool: <prefix>_<8 hex>. Of colliding names, a kept one keeps
//     its name; else one that was never altered keeps its name when it is
//     the only such one (bare names beat prefixed ones).
//  4. A hashed name that still collides gets a longer hash.
//
// The newcomers' names depend only on which providers offer which names
// and on the kept names, never on the order they came in: providers
// published together (the catalog's SetAll) are named alike whatever
// their order, and one published later is named around the others. Prompt names follow the same rules in a
// namespace of their own: call CheckName with [Prompt] and Assign once per
// kind.
//
// # Resource URIs
//
// A resource's URI is its identity: clients read and subscribe by it, and
// other resources and tool results link to it, so it is never renamed.
// When two providers offer the same URI, [Claim] gives it to one owner:
// the provider whose name sorts first (byte-wise, so "a" before "b" and
// "Z" before "a"). The others' resources of that URI are hidden, not
// renamed. Like Assign's, the result depends only on which providers offer
// which URIs, never on the order they came in, and an operator can tell
// the winner from the provider names alone.
//
// Resource templates are never renamed or hidden either: every provider's
// templates are listed, and the catalog decides which one serves a URI
// that several match (see host/catalog).
package naming

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Limits.
const (
	// MaxProvider is the longest provider name.
	MaxProvider = 32
	// MaxTool is the longest tool or prompt name a provider may offer
	// (MCP: 1 to 128 characters).
	MaxTool = 128
	// MaxExposed is the longest name shown to clients.
	MaxExposed = 64
)

// DevicePrefix starts every device's provider name and no plugin's.
const DevicePrefix = "device-"

// pluginPrefix is put before a plugin name that would start with
// DevicePrefix.
const pluginPrefix = "plugin-"

// hashLen is the number of hex digits of the hash that shortens or
// disambiguates a name; a second round uses twice as many.
const hashLen = 8

// ValidProvider reports whether s is a provider name: 1 to 32 of
// [a-zA-Z0-9_-].
func ValidProvider(s string) bool {
	return len(s) >= 1 && len(s) <= MaxProvider && allBytes(s, isExposedByte)
}

// CheckProvider returns nil when s is a provider name, otherwise an error
// that says what one is.
func CheckProvider(s string) error {
	if ValidProvider(s) {
		return nil
	}
	return fmt.Errorf("%q is not a provider name: want 1 to %d of [a-zA-Z0-9_-]", s, MaxProvider)
}

// ForFile returns the provider name of a plugin file: base (a file name,
// not a path) without its last extension, characters outside
// [a-zA-Z0-9_-] replaced by "_", "plugin-" put before a name starting with
// "device-", shortened with a hash when longer than 32. reason is empty
// when the name is the file name without its extension, else says what
// changed, for the log and the plugin's status.
func ForFile(base string) (name, reason string) {
	file := base
	if i := strings.LastIndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	var why []string
	name = strings.Map(func(r rune) rune {
		if r < 0x80 && isExposedByte(byte(r)) {
			return r
		}
		return '_'
	}, base)
	if name != base {
		why = append(why, "characters outside [a-zA-Z0-9_-] replaced by _")
	}
	if strings.HasPrefix(name, DevicePrefix) {
		name = pluginPrefix + name
		why = append(why, "the prefix "+DevicePrefix+" belongs to devices")
	}
	if len(name) > MaxProvider {
		why = append(why, fmt.Sprintf("shortened to %d characters", MaxProvider))
	}
	name = Shorten(name)
	if len(why) > 0 {
		reason = fmt.Sprintf("provider name derived from file name %q: %s", file, strings.Join(why, "; "))
	}
	return name, reason
}

// maxFileName is the longest file name (NAME_MAX on Linux and macOS).
const maxFileName = 255

// ForLabel returns the provider name that a configuration file's block
// labelled label configures: the name a plugin file called label gets (see
// ForFile), so an operator may write a plugin's long file name or the
// derived name `plughost plugins` shows; both reach the same plugin. label
// must be 1 to 255 of [a-zA-Z0-9_-].
func ForLabel(label string) (string, error) {
	if len(label) == 0 || len(label) > maxFileName || !allBytes(label, isExposedByte) {
		return "", fmt.Errorf("%q is not a plugin name: want its provider name as `plughost plugins` shows it (letters, digits, _ and -)", label)
	}
	name, _ := ForFile(label)
	return name, nil
}

// ForDevice returns the provider name of a device: DevicePrefix and id,
// where every run of characters outside [a-zA-Z0-9_-] becomes one "-" (none
// at the ends), shortened with a hash when longer than 32. An id with no
// usable character gives "" (the caller picks another id).
func ForDevice(id string) string {
	b := make([]byte, 0, len(id))
	dash := false
	for i := 0; i < len(id); i++ {
		c := id[i]
		if isExposedByte(c) {
			b = append(b, c)
			dash = false
		} else if !dash && len(b) > 0 {
			b = append(b, '-')
			dash = true
		}
	}
	if dash {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return ""
	}
	return Shorten(DevicePrefix + string(b))
}

// Shorten returns name when it has at most 32 characters, else its first
// 23, "_" and 8 hex digits of a SHA-256 of the whole name. name must be of
// the provider alphabet; the result then is a provider name.
func Shorten(name string) string {
	if len(name) <= MaxProvider {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "_" + hex.EncodeToString(sum[:])[:hashLen]
	return name[:MaxProvider-len(suffix)] + suffix
}

// Kind is what a name names, for messages.
type Kind string

// Kinds of names a provider offers.
const (
	Tool   Kind = "tool"
	Prompt Kind = "prompt"
)

// CheckName returns nil when s may name a tool or prompt of a provider
// (1 to 128 of [A-Za-z0-9_.-]), otherwise an error saying so.
func CheckName(k Kind, s string) error {
	if len(s) >= 1 && len(s) <= MaxTool && allBytes(s, isMCPByte) {
		return nil
	}
	return fmt.Errorf("invalid %s name %q: want 1 to %d of [A-Za-z0-9_.-]", k, s, MaxTool)
}

// ValidExposed reports whether s matches ^[a-zA-Z0-9_-]{1,64}$, the names
// clients are shown.
func ValidExposed(s string) bool {
	return len(s) >= 1 && len(s) <= MaxExposed && allBytes(s, isExposedByte)
}

func isExposedByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-'
}

func isMCPByte(b byte) bool { return isExposedByte(b) || b == '.' }

func allBytes(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}
