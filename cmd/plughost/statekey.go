package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/mcp/sealed"
)

// The environment variables that give the key sealing requestState. There
// is no flag: a command line shows in ps and in shell history.
const (
	// envStateKey holds the secret itself; it wins over any file.
	envStateKey = "PLUGHOST_STATE_KEY"
	// envStateKeyFile names a file holding the secret, used when the
	// configuration names none.
	envStateKeyFile = "PLUGHOST_STATE_KEY_FILE"
)

// maxKeyFile bounds what is read of a key file: a secret takes a few dozen
// bytes, so a larger file is a mistake (or /dev/zero), not a secret.
const maxKeyFile = 64 << 10

// stateSealer returns the Sealer of serve's requestState (stateless MCP,
// 2026-07-28), from the first of
//
//  1. $PLUGHOST_STATE_KEY, the secret itself;
//  2. the file of the stateless block's state_key_file;
//  3. the file $PLUGHOST_STATE_KEY_FILE names;
//  4. none: a random key of this process's own, logged at INFO, since
//     replicas behind a load balancer then cannot open each other's states.
//
// A secret must hold at least sealed.KeySize bytes once one trailing newline
// is trimmed. A key file must exist and, when it is a regular file, be
// accessible to its owner only (chmod 600); a symlink is judged by its
// target. Errors name where the secret came from, never the secret.
func stateSealer(cfg config.Stateless, getenv func(string) string, log hclog.Logger) (*sealed.Sealer, error) {
	secret, source, err := findSecret(getenv, envStateKey, cfg.KeyFile, "state_key_file in the stateless block", envStateKeyFile, "state key")
	if source == "" {
		log.Info("requestState is sealed with a per-process key: replicas behind a load balancer must share a key "+
			"(state_key_file in the config's stateless block, or $"+envStateKey+")", "see", `README "Replicas share a state key"`)
		return sealed.NewRandom(), nil
	}
	if err != nil {
		return nil, err
	}
	if len(secret) < sealed.KeySize {
		return nil, fmt.Errorf("%s: the state key is %d bytes (after trimming a trailing newline); it must be at least %d: make one with `head -c 32 /dev/urandom | base64`",
			source, len(secret), sealed.KeySize)
	}
	s, err := sealed.New(secret)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err) // sealed's errors never show the secret
	}
	log.Debug("requestState is sealed with a shared key", "from", source)
	return s, nil
}

// findSecret reads a secret from the first of: the environment variable
// envValue (the secret itself); the file the configuration names
// (configFile, set by configKey); the file the environment variable
// envFile names. One trailing newline is trimmed. source says where it came from ("" when nowhere: no secret);
// errors name it, never the secret. what names the secret ("state key").
func findSecret(getenv func(string) string, envValue, configFile, configKey, envFile, what string) (secret []byte, source string, err error) {
	switch {
	case getenv(envValue) != "":
		source = "$" + envValue
		secret = []byte(getenv(envValue))
	case configFile != "":
		source = what + " file " + configFile + " (" + configKey + ")"
		secret, err = readKeyFile(configFile, source)
	case getenv(envFile) != "":
		path := getenv(envFile)
		source = what + " file " + path + " ($" + envFile + ")"
		secret, err = readKeyFile(path, source)
	default:
		return nil, "", nil
	}
	if err != nil {
		return nil, source, err
	}
	secret, _ = bytes.CutSuffix(secret, []byte("\n"))
	return secret, source, nil
}

// readKeyFile reads the secret in the file at path (a state key, the
// tasks' redis password); source names it in errors.
func readKeyFile(path, source string) ([]byte, error) {
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
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, unwrapPath(err))
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("%s is larger than %d KiB: not a secret", source, maxKeyFile>>10)
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
