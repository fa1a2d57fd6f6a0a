// Package secretfile reads the secrets plughost serve is given: the
// state key, the tasks' redis password, the embeddings key and the
// introspection client secret. A secret comes from the environment or
// from a file, and a file must be its owner's alone (chmod 600), so that
// another user of the machine cannot read it:
//
//	secret, source, err := secretfile.Find(os.Getenv, "PLUGHOST_STATE_KEY",
//		cfg.KeyFile, "state_key_file in the stateless block", "PLUGHOST_STATE_KEY_FILE", "state key")
//
// Errors name where a secret came from (source), never the secret.
package secretfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxSize bounds what is read of a secret file: a secret takes a few
// dozen bytes, so a larger file is a mistake (or /dev/zero), not a secret.
const MaxSize = 64 << 10

// Find reads a secret from the first of: the environment variable
// envValue (the secret itself); the file the configuration names
// (configFile, set by configKey); the file the environment variable
// envFile names. One trailing newline is trimmed. source says where it
// came from ("" when nowhere: no secret); errors name it, never the
// secret. what names the secret ("state key").
func Find(getenv func(string) string, envValue, configFile, configKey, envFile, what string) (secret []byte, source string, err error) {
	switch {
	case getenv(envValue) != "":
		source = "$" + envValue
		secret = []byte(getenv(envValue))
	case configFile != "":
		source = what + " file " + configFile + " (" + configKey + ")"
		secret, err = Read(configFile, source)
	case getenv(envFile) != "":
		path := getenv(envFile)
		source = what + " file " + path + " ($" + envFile + ")"
		secret, err = Read(path, source)
	default:
		return nil, "", nil
	}
	if err != nil {
		return nil, source, err
	}
	secret, _ = bytes.CutSuffix(secret, []byte("\n"))
	return secret, source, nil
}

// Read reads the secret in the file at path (a state key, the
// tasks' redis password, the embeddings key, the introspection client
// secret); source names it in errors. The file must exist
// and, when it is a regular file, be its owner's alone (chmod 600); a
// symlink is judged by its target.
func Read(path, source string) ([]byte, error) {
	f, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s does not exist", source)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", source, unwrapPath(err))
	}
	defer f.Close()
	st, err := f.Stat() // of the file opened, not of a name that may change meanwhile
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, unwrapPath(err))
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a file holding the key", source)
	}
	if perm := st.Mode().Perm(); st.Mode().IsRegular() && perm&0o077 != 0 {
		return nil, fmt.Errorf("%s is open to group or others (mode %04o): a secret must be its owner's alone: chmod 600 %s", source, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, unwrapPath(err))
	}
	if len(b) > MaxSize {
		return nil, fmt.Errorf("%s is larger than %d KiB: not a secret", source, MaxSize>>10)
	}
	return b, nil
}

// unwrapPath drops the path an *fs.PathError repeats: the source already
// names it.
func unwrapPath(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}
