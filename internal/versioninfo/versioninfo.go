// Package versioninfo says which plughost this is: what `plughost version`
// prints. The version and commit come from the release build's -X flags
// (internal/release); a binary built otherwise falls back to what the Go
// toolchain recorded (a `go install …@v0.4.0` has its module version, a
// build in a checkout its VCS revision), and to "dev" and "unknown" last,
// so the command never guesses.
package versioninfo

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/plughost/plughost/host/pluginclient"
)

// Info is a plughost binary's version information.
type Info struct {
	// Version is the release's semantic version, or "dev".
	Version string `json:"version"`
	// Commit is the commit the binary was built from ("-dirty" appended
	// when the toolchain saw uncommitted changes), or "unknown".
	Commit string `json:"commit"`
	// GoVersion is the Go toolchain that built it; Platform is GOOS/GOARCH.
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	// Contract is the newest plugin contract version the host speaks;
	// OldestContract is the oldest it still loads. A plugin built with
	// any pluginproto whose contract falls between them runs.
	Contract       uint32 `json:"plugin_contract"`
	OldestContract uint32 `json:"oldest_plugin_contract"`
}

// Read returns the running binary's Info. version and commit are the
// values of the -X flags ("" or "dev" when not set).
func Read(version, commit string) Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuild(version, commit, bi)
}

// fromBuild is Read with the build information given (nil when the binary
// has none), so that the fallbacks are tested.
func fromBuild(version, commit string, bi *debug.BuildInfo) Info {
	info := Info{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Contract: pluginclient.ContractVersion, OldestContract: pluginclient.OldestContractVersion}
	if info.Version == "dev" {
		info.Version = ""
	}
	if bi != nil {
		if v := bi.Main.Version; info.Version == "" && v != "" && v != "(devel)" {
			info.Version = v
		}
		var revision, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if info.Commit == "" && revision != "" {
			info.Commit = revision
			if modified == "true" {
				info.Commit += "-dirty"
			}
		}
		info.GoVersion = cmp.Or(bi.GoVersion, info.GoVersion)
	}
	info.Version = cmp.Or(info.Version, "dev")
	info.Commit = cmp.Or(info.Commit, "unknown")
	return info
}

// Write prints info as `plughost version` does: one line of version,
// then one per field; with asJSON, one JSON object instead (the fields'
// names are part of the command's interface).
func (info Info) Write(w io.Writer, asJSON bool) error {
	if asJSON {
		b, err := json.MarshalIndent(info, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	contracts := fmt.Sprint(info.Contract)
	if info.OldestContract != info.Contract {
		contracts = fmt.Sprintf("%d (loads plugins of contracts %d to %d)", info.Contract, info.OldestContract, info.Contract)
	}
	_, err := fmt.Fprintf(w, "plughost %s\ncommit:          %s\ngo:              %s\nplatform:        %s\nplugin contract: %s\n",
		info.Version, info.Commit, info.GoVersion, info.Platform, contracts)
	return err
}
