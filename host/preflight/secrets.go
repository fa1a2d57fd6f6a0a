package preflight

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/mcp/sealed"
	"github.com/plughost/plughost/internal/secretfile"
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

// StateKey returns the secret sealing serve's requestState, from the first
// of $PLUGHOST_STATE_KEY (the secret itself), the stateless block's
// state_key_file, and the file $PLUGHOST_STATE_KEY_FILE names; source
// says which ("" when none: serve then makes a key of its own). A secret
// must hold at least sealed.KeySize bytes once one trailing newline is
// trimmed.
func StateKey(st config.Stateless, getenv func(string) string) (secret []byte, source string, err error) {
	secret, source, err = secretfile.Find(getenv, EnvStateKey, st.KeyFile, "state_key_file in the stateless block", EnvStateKeyFile, "state key")
	if err != nil || source == "" {
		return nil, source, err
	}
	if len(secret) < sealed.KeySize {
		return nil, source, fmt.Errorf("%s: the state key is %d bytes (after trimming a trailing newline); it must be at least %d: make one with `head -c 32 /dev/urandom | base64`",
			source, len(secret), sealed.KeySize)
	}
	return secret, source, nil
}

// ErrRedisNeedsStateKey: a tasks block's redis block without a state key
// the replicas share. Each replica seals the task records it writes with
// that key (package redistore), and refuses a record that does not open
// with its own: with keys of their own, replicas could not read each
// other's tasks.
var ErrRedisNeedsStateKey = errors.New("tasks in redis need the state key every replica shares: each seals the task records it writes with it " +
	"(state_key_file in the stateless block, or $" + EnvStateKey + ")")

// RedisPassword returns the password of the tasks' redis block, from the
// first of $PLUGHOST_REDIS_PASSWORD, the block's password_file and the
// file $PLUGHOST_REDIS_PASSWORD_FILE names; "" with source "" for none. A
// file is read as a state key file is (its owner's alone, one trailing
// newline trimmed); an empty password is refused.
func RedisPassword(r *config.Redis, getenv func(string) string) (password, source string, err error) {
	secret, source, err := secretfile.Find(getenv, EnvRedisPassword, r.PasswordFile, "password_file in the tasks block's redis block",
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
// read as a state key file is ([secretfile.Read]: its owner's alone, at
// most secretfile.MaxSize bytes).
func EmbeddingsKey(e *config.Embeddings, getenv func(string) string) (string, error) {
	var key string
	switch {
	case e.APIKeyFile != "":
		b, err := secretfile.Read(e.APIKeyFile, "search: the embeddings key file "+e.APIKeyFile)
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
// The file is read as a state key file is ([secretfile.Read]: its owner's
// alone, at most secretfile.MaxSize bytes).
func ClientSecret(a *config.Auth, getenv func(string) string) (string, error) {
	if a.ClientSecretFile == "" {
		return getenv(EnvClientSecret), nil
	}
	b, err := secretfile.Read(a.ClientSecretFile, "auth: client_secret_file "+a.ClientSecretFile)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// ConsoleClientSecret returns the console block's client secret: its
// client_secret_file's content, trimmed; "" for a public client (no
// file). The file is read as the auth block's is ([secretfile.Read]).
func ConsoleClientSecret(c *config.Console) (string, error) {
	if c.ClientSecretFile == "" {
		return "", nil
	}
	b, err := secretfile.Read(c.ClientSecretFile, "console: client_secret_file "+c.ClientSecretFile)
	if err != nil {
		return "", err
	}
	secret := strings.TrimSpace(string(b))
	if secret == "" {
		return "", fmt.Errorf("console: client_secret_file %s is empty", c.ClientSecretFile)
	}
	return secret, nil
}

// unwrapPath drops the path an *fs.PathError repeats: the source already
// names it.
func unwrapPath(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}
