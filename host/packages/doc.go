// Package packages installs the package of a declared MCP server written
// as a package runner's one-liner, once, so that the server runs offline
// from then on.
//
// Nearly every MCP server's README says to run it with npx (or uvx):
//
//	{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}
//
// Run as written, that downloads and resolves the package at every start:
// the server would need the network, a writable npm cache, and would run
// whatever the registry serves that day. plughost instead takes the
// one-liner apart (Parse), and at the server's first start installs it
// (Installer.Ensure):
//
//  1. resolve: `npm view PKG@SPEC version` gives the exact version the
//     declaration's version or range allows today;
//  2. install: `npm install --prefix TREE --ignore-scripts PKG@VERSION`
//     into a tree of that version's own, in the server's cache
//     (Options.Dir, outside the server's data directory: the server may
//     not change what it runs);
//  3. record: installed.json names the tree, the program to run (the
//     package's bin, as npx would choose it), and the digests of the
//     lockfile npm wrote (LockDigest: each package's version and the
//     registry's SHA-512 integrity) and of the files (TreeDigest).
//
// Both steps run sandboxed (SandboxRunner), with the network and the
// user's npm settings that matter (NPMSettings: the registry, scoped
// registries, the CA file, proxies) but without their credentials. Every
// later start finds the record (Installer.Current) and runs `node
// PROGRAM` from the tree: no download, no resolution, and the server gets
// only the network its operator grants.
//
// Trust: Digest combines the declaration's digest with the installed
// tree's, recomputed, so that trust mode pinned approves exactly that
// tree, and a tree changed after its approval is held like a changed
// binary.
//
// An upgrade is explicit: Installer.Install with online set resolves the
// newest version the declaration allows and installs it beside the one
// that runs; Installer.Use switches to it.
//
// uvx and pipx run install into a virtual environment of the server's
// own, with pip's --require-hashes (see installPip's comment).
//
// Install scripts do not run (--ignore-scripts): they would run with the
// network and the tree writable. The few servers that need one (a native
// module to build) are installed by hand and declared as node FILE.
package packages
