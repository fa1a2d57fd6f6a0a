package config

import (
	"os"
	"path/filepath"
)

// EnvConfig names the configuration file when a command is given no
// --config: for MCP clients whose own flags clash with plughost's (the MCP
// Inspector has a --config of its own), and for clients whose
// configuration sets environment variables more readily than arguments.
const EnvConfig = "PLUGHOST_CONFIG"

// DefaultPath is where `plughost init` writes the starter configuration
// and where plughost looks when neither --config nor $PLUGHOST_CONFIG
// names one: $XDG_CONFIG_HOME/plughost/plughost.hcl
// (~/.config/plughost/plughost.hcl); "" when neither XDG_CONFIG_HOME nor
// HOME is set. getenv nil is os.Getenv.
func DefaultPath(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	base := getenv("XDG_CONFIG_HOME")
	if base == "" {
		home := getenv("HOME")
		if home == "" {
			return ""
		}
		base = filepath.Join(home, ".config")
	}
	return filepath.Join(base, "plughost", "plughost.hcl")
}

// Where a configuration file was found, as Locate reports it.
const (
	FromFlag    = "--config"
	FromEnv     = "$" + EnvConfig
	FromDefault = "the default location"
)

// Locate says which configuration file a command reads: flag (its
// --config) when given, else $PLUGHOST_CONFIG when set, else DefaultPath
// when that file exists; from is FromFlag, FromEnv or FromDefault, and
// path "" (with from "") when there is none: every setting has its
// default. A file named by the flag or the variable need not exist: Load
// then says so, rather than plughost running without the file meant.
func Locate(flag string, getenv func(string) string) (path, from string) {
	if getenv == nil {
		getenv = os.Getenv
	}
	switch {
	case flag != "":
		return flag, FromFlag
	case getenv(EnvConfig) != "":
		return getenv(EnvConfig), FromEnv
	}
	if def := DefaultPath(getenv); def != "" {
		if st, err := os.Stat(def); err == nil && st.Mode().IsRegular() {
			return def, FromDefault
		}
	}
	return "", ""
}
