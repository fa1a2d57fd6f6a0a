package preflight

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/mcp/sealed"
)

// The secrets serve reads at start: the state key, the tasks' redis
// password, the embeddings key and the introspection client secret. Each
// reader here is the one serve uses, so that Check refuses exactly what
// serve would. Errors name where a secret came from, never the secret.

// The environment variables that give the key sealing requestState. There
// is no flag: a command line shows in ps and in shell history.
const (
	// EnvStateKey holds the secret itself; it wins over any file.
	EnvStateKey = "PLUGHOST_STATE_KEY"
	// EnvStateKeyFile names a file holding the secret, used when the
	// configuration names none.
	EnvStateKeyFile = "PLUGHOST_STATE_KEY_FILE"
)

// The environment variables that give the password of the tasks' redis
// (never the configuration file, nor a flag).
const (
	// EnvRedisPassword holds the password itself; it wins over any file.
	EnvRedisPassword = "PLUGHOST_REDIS_PASSWORD"
	// EnvRedisPasswordFile names a file holding the password, used when
	// the redis block names none.
	EnvRedisPasswordFile = "PLUGHOST_REDIS_PASSWORD_FILE"
)

// EnvClientSecret holds the auth block's introspection client secret when
// the block names no client_secret_file.
const EnvClientSecret = "PLUGHOST_OAUTH_CLIENT_SECRET"

// MaxKeyFile bounds what is read of a key file: a secret takes a few dozen
// bytes, so a larger file is a mistake (or /dev/zero), not a secret.
const MaxKeyFile = 64 << 10

// StateKey returns the secret sealing serve's requestState, from the first
// of $PLUGHOST_STATE_KEY (the secret itself), the stateless block's
// state_key_file, and the file $PLUGHOST_STATE_KEY_FILE names; source
// says which ("" when none: serve then makes a key of its own). A secret
// must hold at least sealed.KeySize bytes once one trailing newline is
// trimmed.
func StateKey(st config.Stateless, getenv func(string) string) (secret []byte, source string, err error) {
	secret, source, err = FindSecret(getenv, EnvStateKey, st.KeyFile, "state_key_file in the stateless block", EnvStateKeyFile, "state key")
	if err != nil || source == "" {
		return nil, source, err
	}
	if len(secret) < sealed.KeySize {
		return nil, source, fmt.Errorf("%s: the state key is %d bytes (after trimming a trailing newline); it must be at least %d: make one with `head -c 32 /dev/urandom | base64`",
			source, len(secret), sealed.KeySize)
	}
	return secret, source, nil
}

// RedisPassword returns the password of the tasks' redis block, from the
// first of $PLUGHOST_REDIS_PASSWORD, the block's password_file and the
// file $PLUGHOST_REDIS_PASSWORD_FILE names; "" with source "" for none. A
// file is read as a state key file is (its owner's alone, one trailing
// newline trimmed); an empty password is refused.
func RedisPassword(r *config.Redis, getenv func(string) string) (password, source string, err error) {
	secret, source, err := FindSecret(getenv, EnvRedisPassword, r.PasswordFile, "password_file in the tasks block's redis block",
		EnvRedisPasswordFile, "redis password")
	switch {
	case err != nil || source == "":
		return "", source, err
	case len(secret) == 0:
		return "", source, fmt.Errorf("%s is empty", source)
	}
	return string(secret), source, nil
}

// EmbeddingsKey returns the key of the search block's embeddings
// endpoint: its api_key_file's content or its api_key_env's value,
// trimmed; "" when the block names neither (no key is sent). The file is
// read as a state key file is ([ReadSecretFile]: its owner's alone, at
// most MaxKeyFile bytes).
func EmbeddingsKey(e *config.Embeddings, getenv func(string) string) (string, error) {
	var key string
	switch {
	case e.APIKeyFile != "":
		b, err := ReadSecretFile(e.APIKeyFile, "search: the embeddings key file "+e.APIKeyFile)
		if err != nil {
			return "", err
		}
		if key = strings.TrimSpace(string(b)); key == "" {
			return "", fmt.Errorf("search: the embeddings key file %s is empty", e.APIKeyFile)
		}
	case e.APIKeyEnv != "":
		if key = strings.TrimSpace(getenv(e.APIKeyEnv)); key == "" {
			return "", fmt.Errorf("search: the embeddings key: $%s is not set", e.APIKeyEnv)
		}
	}
	return key, nil
}

// ClientSecret returns the auth block's introspection client secret: its
// client_secret_file's content, trimmed, else $PLUGHOST_OAUTH_CLIENT_SECRET.
// The file is read as a state key file is ([ReadSecretFile]: its owner's
// alone, at most MaxKeyFile bytes).
func ClientSecret(a *config.Auth, getenv func(string) string) (string, error) {
	if a.ClientSecretFile == "" {
		return getenv(EnvClientSecret), nil
	}
	b, err := ReadSecretFile(a.ClientSecretFile, "auth: client_secret_file "+a.ClientSecretFile)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// FindSecret reads a secret from the first of: the environment variable
// envValue (the secret itself); the file the configuration names
// (configFile, set by configKey); the file the environment variable
// envFile names. One trailing newline is trimmed. source says where it
// came from ("" when nowhere: no secret); errors name it, never the
// secret. what names the secret ("state key").
func FindSecret(getenv func(string) string, envValue, configFile, configKey, envFile, what string) (secret []byte, source string, err error) {
	switch {
	case getenv(envValue) != "":
		source = "$" + envValue
		secret = []byte(getenv(envValue))
	case configFile != "":
		source = what + " file " + configFile + " (" + configKey + ")"
		secret, err = ReadSecretFile(configFile, source)
	case getenv(envFile) != "":
		path := getenv(envFile)
		source = what + " file " + path + " ($" + envFile + ")"
		secret, err = ReadSecretFile(path, source)
	default:
		return nil, "", nil
	}
	if err != nil {
		return nil, source, err
	}
	secret, _ = bytes.CutSuffix(secret, []byte("\n"))
	return secret, source, nil
}

// ReadSecretFile reads the secret in the file at path (a state key, the
// tasks' redis password, the embeddings key, the introspection client
// secret); source names it in errors. The file must exist
// and, when it is a regular file, be its owner's alone (chmod 600); a
// symlink is judged by its target.
func ReadSecretFile(path, source string) ([]byte, error) {
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
	b, err := io.ReadAll(io.LimitReader(f, MaxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, unwrapPath(err))
	}
	if len(b) > MaxKeyFile {
		return nil, fmt.Errorf("%s is larger than %d KiB: not a secret", source, MaxKeyFile>>10)
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
