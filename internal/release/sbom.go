package release

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// SBOMName is the file name of version's software bill of materials.
func SBOMName(version string) string { return "plughost_" + version + ".cdx.json" }

// WriteSBOM writes out/SBOMName(version): a CycloneDX SBOM (JSON) of the
// plughost module, every module the release's programs are built from
// with its version, hash and detected license. The generator is
// cyclonedx-gomod, pinned as a tool in tools/sbom/go.mod, a module of its
// own so that its dependencies stay out of plughost's go.mod, and run with
// `go tool` there. -noserial and -notimestamp leave out the two fields
// that would differ from one run to the next.
func WriteSBOM(ctx context.Context, goCmd, source, out, version string) (string, error) {
	name := SBOMName(version)
	src, err := filepath.Abs(source)
	if err != nil {
		return "", err
	}
	dst, err := filepath.Abs(filepath.Join(out, name))
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, goCmd, "tool", "cyclonedx-gomod", "mod", "-json", "-licenses",
		"-noserial", "-notimestamp", "-output", dst, src)
	cmd.Dir = filepath.Join(src, "tools", "sbom")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cyclonedx-gomod (tools/sbom): %w\n%s", err, strings.TrimSpace(string(b)))
	}
	return name, nil
}
