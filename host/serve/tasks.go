package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"

	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/preflight"
	"github.com/plughost/plughost/host/tasks"
	"github.com/plughost/plughost/host/tasks/redistore"
)

// The environment variables that give the password of the tasks' redis
// (preflight reads them; never the configuration file, nor a flag).
const (
	envRedisPassword     = preflight.EnvRedisPassword
	envRedisPasswordFile = preflight.EnvRedisPasswordFile
)

// taskService returns serve's task service (MCP's tasks extension) as the
// tasks block configures it: tasks kept in this process, or, with a redis
// block, in the redis the replicas share, logging in with the password of
// the first of
//
//  1. $PLUGHOST_REDIS_PASSWORD, the password itself;
//  2. the file of the redis block's password_file;
//  3. the file $PLUGHOST_REDIS_PASSWORD_FILE names;
//  4. none.
//
// A password file is read as a state key file is (its owner's alone, one
// trailing newline trimmed). Errors name where the password came from,
// never the password. The records in redis are sealed with stateKey, the
// state key the replicas share (preflight.ErrRedisNeedsStateKey when there
// is none). The replica is named after the host, plus six random hex
// digits: a pod restarted under the same host name is a new replica, so
// its predecessor's unfinished tasks fail rather than wait for it.
func taskService(cfg config.Tasks, stateKey []byte, getenv func(string) string, log hclog.Logger) (*tasks.Service, error) {
	replica := replicaName()
	store, where, err := taskStore(cfg, replica, stateKey, getenv, log)
	if err != nil {
		return nil, err
	}
	svc := tasks.New(tasks.Options{Store: store, Replica: replica, TTL: cfg.TTL, PollInterval: cfg.PollInterval,
		MaxRunning: cfg.MaxRunning, MaxResultBytes: int(cfg.MaxResultSize), Logger: log})
	log.Info("tasks are kept "+where, "replica", replica)
	return svc, nil
}

// drainTasks waits, until grace ends, for the tasks this replica runs to
// end (tasks.Service.Drain); the ones still running are failed by Stop.
func (h *Host) drainTasks(grace context.Context) {
	if h.tasks == nil {
		return
	}
	if err := h.tasks.Drain(grace); err != nil {
		h.log.Warn("stopping: failing the tasks still running here", "error", err)
	}
}

// replicaName returns the host name and six random hex digits.
func replicaName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "plughost"
	}
	b := make([]byte, 3)
	rand.Read(b)
	return host + "-" + hex.EncodeToString(b)
}

// taskStore opens the store of the tasks, and says where it keeps them.
// The memory store keeps at least 4×max_running tasks
// (tasks.DefaultMaxTasks when that is more): it never refuses the tasks
// max_running allows, and keeps room for three times as many finished
// ones; its byte budget is tasks.DefaultMaxBytes.
func taskStore(cfg config.Tasks, replica string, stateKey []byte, getenv func(string) string, log hclog.Logger) (tasks.Store, string, error) {
	r := cfg.Redis
	if r == nil {
		return tasks.NewMemory(tasks.MemoryOptions{MaxTasks: max(tasks.DefaultMaxTasks, 4*cfg.MaxRunning)}), "in this process", nil
	}
	if stateKey == nil {
		return nil, "", fmt.Errorf("tasks: %w", preflight.ErrRedisNeedsStateKey)
	}
	password, err := redisPassword(r, getenv, log)
	if err != nil {
		return nil, "", err
	}
	redistore.LogTo(log.Named("redis"))
	store, err := redistore.New(redistore.Options{Address: r.Address, Username: r.Username, Password: password, DB: r.DB,
		KeyPrefix: r.KeyPrefix, ReplicaTimeout: r.ReplicaTimeout, Replica: replica, Secret: stateKey, Logger: log.Named("redis")})
	if err != nil {
		return nil, "", fmt.Errorf("tasks: %w", err)
	}
	return store, "in redis at " + r.Address, nil
}

// redisPassword returns the password of the redis block; "" for none
// (preflight.RedisPassword, as plughost check reads it).
func redisPassword(r *config.Redis, getenv func(string) string, log hclog.Logger) (string, error) {
	password, source, err := preflight.RedisPassword(r, getenv)
	if err == nil && source != "" {
		log.Debug("redis password", "from", source)
	}
	return password, err
}
