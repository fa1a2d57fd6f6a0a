package serve

import (
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/mcp/sealed"
	"github.com/plughost/plughost/host/preflight"
)

// The environment variables that give the key sealing requestState
// (preflight reads them). There is no flag: a command line shows in ps and
// in shell history.
const (
	envStateKey     = preflight.EnvStateKey
	envStateKeyFile = preflight.EnvStateKeyFile
)

// stateSealer returns the Sealer of serve's requestState (stateless MCP,
// 2026-07-28), from the first of
//
//  1. $PLUGHOST_STATE_KEY, the secret itself;
//  2. the file of the stateless block's state_key_file;
//  3. the file $PLUGHOST_STATE_KEY_FILE names;
//  4. none: a random key of this process's own, logged at INFO, since
//     replicas behind a load balancer then cannot open each other's states.
//
// preflight.StateKey reads it, as plughost check does: at least
// sealed.KeySize bytes once one trailing newline is trimmed, a key file
// its owner's alone (chmod 600). Errors name where the secret came from,
// never the secret. It returns the secret too, which seals the task
// records in redis (taskService); nil with the per-process key.
func stateSealer(cfg config.Stateless, getenv func(string) string, log hclog.Logger) (*sealed.Sealer, []byte, error) {
	secret, source, err := preflight.StateKey(cfg, getenv)
	if source == "" {
		log.Info("requestState is sealed with a per-process key: replicas behind a load balancer must share a key "+
			"(state_key_file in the config's stateless block, or $"+envStateKey+")", "see", `docs/operators.md "Replicas share a state key"`)
		return sealed.NewRandom(), nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	s, err := sealed.New(secret)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", source, err) // sealed's errors never show the secret
	}
	log.Debug("requestState is sealed with a shared key", "from", source)
	return s, secret, nil
}
