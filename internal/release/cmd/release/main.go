// Command release builds a plughost release from a clean checkout: the
// archives of every platform, the source archive, a CycloneDX SBOM,
// SHA256SUMS and its SSH signature, and (with -tag) the annotated version
// tag. `make release VERSION=v0.4.0` runs it; package internal/release
// holds the rules.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/plughost/plughost/internal/release"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// run makes the release the command line asks for: it checks the version
// and the tree before anything is built or tagged.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.String("version", "", "the release's semantic version tag, e.g. v0.4.0")
	source := fs.String("source", ".", "the plughost checkout to release")
	out := fs.String("out", "", "output directory (default dist/VERSION); must not exist yet")
	key := fs.String("key", os.Getenv("PLUGHOST_RELEASE_KEY"), "ssh-keygen -Y sign key: the private key file, or the public key of one held by ssh-agent (default $PLUGHOST_RELEASE_KEY)")
	tag := fs.Bool("tag", false, "make the annotated tag VERSION on HEAD (removed again if the release fails)")
	targets := fs.String("targets", "", "comma-separated OS/ARCH list (default every platform)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := release.CheckVersion(*version); err != nil {
		return fmt.Errorf("%w: run make release VERSION=vX.Y.Z", err)
	}
	head, err := release.ReadHead(ctx, *source)
	if err != nil {
		return err
	}
	dir := cmp.Or(*out, filepath.Join(*source, "dist", *version))
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s exists: a release directory is written once (remove it to build again)", dir)
	}
	ts, err := parseTargets(*targets)
	if err != nil {
		return err
	}
	if *tag {
		if err := release.Tag(ctx, *source, *version, head.Commit); err != nil {
			return err
		}
	}
	if err := build(ctx, stdout, stderr, *source, dir, *version, head, ts, *key); err != nil {
		err = errors.Join(err, os.RemoveAll(dir)) // it did not exist: a failed release leaves nothing half-made
		if *tag {
			err = errors.Join(err, release.DeleteTag(context.Background(), *source, *version))
		}
		return err
	}
	if *tag {
		fmt.Fprintf(stdout, "tagged %s on %s: push it with git push origin %s\n", *version, head.Commit, *version)
	}
	return nil
}

func build(ctx context.Context, stdout, stderr io.Writer, source, dir, version string, head release.Head, ts []release.Target, key string) error {
	logf := func(format string, args ...any) { fmt.Fprintf(stdout, format+"\n", args...) }
	names, err := release.Build(ctx, release.Options{Source: source, Out: dir, Version: version,
		Commit: head.Commit, Time: head.Time, Targets: ts, Log: logf})
	if err != nil {
		return err
	}
	src, err := release.WriteSourceArchive(ctx, source, dir, version, head.Commit)
	if err != nil {
		return err
	}
	logf("release: %s", src)
	sbom, err := release.WriteSBOM(ctx, "go", source, dir, version)
	if err != nil {
		return err
	}
	logf("release: %s", sbom)
	if err := release.WriteSums(dir, append(names, src, sbom)); err != nil {
		return err
	}
	logf("release: %s", release.SumsFile)
	if key == "" {
		fmt.Fprintf(stderr, "\n*** release: NOT SIGNED: no key given (make release RELEASE_KEY=FILE, or PLUGHOST_RELEASE_KEY);\n"+
			"*** %s has no %s: sign it before publishing:\n***   ssh-keygen -Y sign -n %s -f KEY %s\n\n",
			dir, release.SigFile, release.SignatureNamespace, filepath.Join(dir, release.SumsFile))
		return nil
	}
	if err := release.Sign(ctx, dir, key); err != nil {
		return err
	}
	logf("release: %s", release.SigFile)
	return nil
}

// parseTargets reads "linux/amd64,windows/arm64"; empty means every target.
func parseTargets(s string) ([]release.Target, error) {
	if s == "" {
		return nil, nil
	}
	var ts []release.Target
	for f := range strings.SplitSeq(s, ",") {
		os, arch, ok := strings.Cut(strings.TrimSpace(f), "/")
		if !ok || os == "" || arch == "" {
			return nil, fmt.Errorf("-targets: %q is not OS/ARCH", f)
		}
		ts = append(ts, release.Target{OS: os, Arch: arch})
	}
	return ts, nil
}
