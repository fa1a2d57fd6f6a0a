package packages

import (
	"context"
	"fmt"
)

// installPip installs a Python package into a virtual environment of its
// own. Not written yet: uvx and pipx run declarations are refused with
// what to declare instead.
func (i *Installer) installPip(_ context.Context, s *Spec) (*Installed, error) {
	return nil, fmt.Errorf("%s %s: Python packages are %w yet: install it into a virtual environment yourself "+
		"(python3 -m venv DIR && DIR/bin/pip install %s) and declare DIR/bin/PROGRAM", s.Runner, s, ErrUnsupported, s)
}

// pipLockDigest is the digest of a Python tree's pinned requirements.
func pipLockDigest(tree string) (string, error) {
	return "", fmt.Errorf("%s: Python trees are %w", tree, ErrUnsupported)
}
