// Package trust decides which plugin files may run: the trust modes of
// the configuration's trust block, the trust file of approvals, and SSH
// signatures checked against an allowed_signers file.
//
// Without it, every executable dropped into the plugin directory runs
// (sandboxed) and its tools reach the model at once. With it, each plugin
// is in one of three modes (a default, and per plugin):
//
//   - open: every file runs, as before. The default; plughost serve warns
//     when it serves HTTP beyond loopback in this mode.
//   - pinned: a file runs only while its SHA-256 is the one approved for
//     its provider name in the trust file. A new file is pending, a file
//     whose digest differs from its approval is changed, an approval
//     withdrawn while the host runs is revoked: each is quarantined (not
//     started, not served), shown by `plughost plugins` with its digest,
//     the reason and what it asks for.
//   - signed: a file runs only while NAME.sig beside it is a valid SSH
//     signature of it (SSHSIG, namespace "plughost-plugin") by a key of
//     allowed_signers. A valid signature suffices: no approval is needed,
//     since the operator's trust is in the keys and a release signed by a
//     trusted key should run without a further step.
//
// A declared MCP server's file is its NAME.mcp.json: its declaration is
// what is approved or signed (NAME.mcp.json.sig), not the program it
// names. Pin that program by its path in a directory only the operator
// writes, or use a plugin binary.
//
// # Approving
//
// The trust file (File) is JSON, so that a configuration manager can
// write it as well as the commands do:
//
//	plughost approve echo     # writes echo's current digest into the trust file
//	plughost revoke echo      # removes it
//
// Update writes it under a lock and atomically; a running host follows it
// (Checker.Watch) and starts an approved plugin, or stops a revoked one,
// without a restart.
//
// # Signing
//
// An author signs with the ssh-keygen they have, and the operator lists
// the keys they trust (see Signers for the file's format):
//
//	ssh-keygen -Y sign -f ~/.ssh/id_ed25519 -n plughost-plugin echo   # writes echo.sig
//	echo "alice@example.com namespaces=\"plughost-plugin\" $(cat ~/.ssh/id_ed25519.pub)" >> allowed_signers
//
// Verification is offline and reads the file as a stream
// (github.com/hiddeco/sshsig over golang.org/x/crypto/ssh). The namespace
// is checked, so a signature made for git or for a file (-n git, -n file)
// is refused rather than replayed as a plugin's.
//
// # Definitions
//
// An approval pins what the plugin offers as well as its file: each
// tool's, prompt's, resource's and resource template's definition, by
// Definition.Key, as a Pinned in the entry's Definitions (trust file
// format 2). Pin fingerprints one ("sha256/v1:" and a SHA-256 over a
// length-prefixed encoding of its kind, name, title, description and
// schemas, each schema as Canonical JSON), its annotations apart; the
// definition itself is kept so that clients can keep being served it
// while a changed one is held back, and so that DiffFields and WordDiff
// can show the change word by word:
//
//	p, _ := trust.Pin(trust.Definition{Kind: trust.KindTool, Name: "add", JSON: raw})
//	p.Pin          // "sha256/v1:5e1c…": key order and white space do not change it
//	p.Annotations  // "sha256/v1:09ab…": recorded, never held back
//
// The Checker hands an approved plugin's pins to the manager in
// Verdict.Definitions. A Comparer, one per plugin, rules on each listing
// against them: in modes pinned and signed (Mode.HoldsDefinitions) a
// definition whose pin differs is held back and served as approved (not
// at all when only its pin was approved), a new one is not served; when
// the approval pins none, the binary's first listing stands in for it; in
// mode open a change is only reported. The manager publishes what the
// rulings serve and tells what changed (package manager, "Definitions
// pinned"):
//
//	rulings, _ := c.Compare(v, listed)
//	for _, r := range rulings {
//		r.Status // DefAsApproved, DefChanged or DefNew
//		r.Served // the listed JSON, the approved one, or nil: not served
//	}
//
// # What a plugin asks for
//
// A plugin says what it needs (pluginproto.Plugin.Request, or a
// declaration's requests member): paths, network destinations and
// environment variables. Denied compares it with what its sandbox policy
// grants; the host shows both and logs the difference, and never widens a
// grant because a plugin asked.
//
// # What this does not cover
//
// The host checks the file by its path right before it starts it. A file
// replaced in the instant between the check and the start runs, until the
// directory event of that replacement (a few milliseconds later) has it
// checked again, quarantined and stopped. Keep the plugin directory
// writable by the operator alone all the same: trust modes hold back
// what others manage to drop into it, not what its owner runs.
package trust
