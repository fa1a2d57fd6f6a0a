// Package gitleaks holds gitleaks' default rule set, embedded as it ships:
// config/gitleaks.toml of github.com/zricethezav/gitleaks/v8 at Version,
// copied unchanged (its SHA-256 is SHA256, checked by this package's
// test). Gitleaks is MIT-licensed, © 2019 Zachary Rice: see LICENSE
// beside this file. To move to a newer rule set, copy the file from the
// module at the new version (go mod download -json
// github.com/zricethezav/gitleaks/v8@vX), update Version and SHA256, and
// run the secrets plugin's tests: its loader refuses keys it does not
// know, so a rule set needing new features fails there, not at run time.
package gitleaks

import _ "embed"

// Rules is the rule set's TOML text.
//
//go:embed gitleaks.toml
var Rules []byte

// Version is the gitleaks release the rule set comes from; SHA256 the
// hex SHA-256 of Rules.
const (
	Version = "v8.30.1"
	SHA256  = "e163e53b9e7e8a8511e77271e2b323ed057759542a6d988258afe3a1fa329caf"
)

// License is gitleaks' license text, shipped with the rule set.
//
//go:embed LICENSE
var License string
