package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseTasks(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		src, filename string
		want          Tasks
	}{
		"full": {`
tasks {
  ttl             = "1h"
  poll_interval   = "500ms"
  max_running     = 256
  max_result_size = "4MiB"
  escalate_after  = "5s"
  redis {
    address         = "redis:6379"
    username        = "plughost"
    password_file   = "/run/secrets/redis"
    db              = 2
    key_prefix      = "ph:"
    replica_timeout = "5s"
  }
}
`, "plughost.hcl", Tasks{TTL: time.Hour, PollInterval: 500 * time.Millisecond, MaxRunning: 256, MaxResultSize: 4 << 20,
			EscalateAfter: 5 * time.Second, Redis: &Redis{Address: "redis:6379", Username: "plughost", PasswordFile: "/run/secrets/redis",
				DB: 2, KeyPrefix: "ph:", ReplicaTimeout: 5 * time.Second}}},
		"lower bounds": {"tasks {\n  ttl = \"1m\"\n  poll_interval = \"100ms\"\n  max_running = 1\n  max_result_size = \"1KiB\"\n  escalate_after = \"0s\"\n}\n",
			"plughost.hcl", Tasks{TTL: time.Minute, PollInterval: 100 * time.Millisecond, MaxRunning: 1, MaxResultSize: 1 << 10, EscalateOff: true}},
		"upper bounds": {"tasks {\n  ttl = \"168h\"\n  poll_interval = \"1m\"\n  max_running = 100000\n  max_result_size = \"64MiB\"\n  escalate_after = \"1h\"\n" +
			"  redis {\n    address = \"/run/redis.sock\"\n    replica_timeout = \"1m\"\n  }\n}\n",
			"plughost.hcl", Tasks{TTL: 168 * time.Hour, PollInterval: time.Minute, MaxRunning: 100000, MaxResultSize: 64 << 20,
				EscalateAfter: time.Hour, Redis: &Redis{Address: "/run/redis.sock", ReplicaTimeout: time.Minute}}},
		"relative password file": {"tasks {\n  redis {\n    address = \"[::1]:6379\"\n    password_file = \"secrets/redis\"\n  }\n}\n",
			"/etc/plughost/plughost.hcl", Tasks{Redis: &Redis{Address: "[::1]:6379", PasswordFile: "/etc/plughost/secrets/redis"}}},
		"bytes as a number": {"tasks {\n  max_result_size = 2048\n}\n", "plughost.hcl", Tasks{MaxResultSize: 2048}},
		"empty block":       {"tasks {}\n", "plughost.hcl", Tasks{}},
		"absent":            {"stateless {}\n", "plughost.hcl", Tasks{}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(c.src), c.filename)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, cfg.Tasks); diff != "" {
				t.Errorf("tasks block (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseTasksErrors(t *testing.T) {
	t.Parallel()
	redis := func(body string) string {
		return "tasks {\n  redis {\n    address = \"redis:6379\"\n    " + body + "\n  }\n}\n"
	}
	for name, c := range map[string]struct{ src, want string }{
		"short ttl":      {"tasks {\n  ttl = \"59s\"\n}\n", `plughost.hcl:2,9-14: Invalid ttl; ttl must be from 1m to 168h (7 days), not 59s`},
		"long ttl":       {"tasks {\n  ttl = \"169h\"\n}\n", `plughost.hcl:2,9-15: Invalid ttl; ttl must be from 1m to 168h (7 days), not 169h0m0s`},
		"ttl in days":    {"tasks {\n  ttl = \"7d\"\n}\n", `plughost.hcl:2,9-13: Invalid ttl; ttl must be a duration such as "500ms", "5s" or "1h"`},
		"number ttl":     {"tasks {\n  ttl = 60\n}\n", `plughost.hcl:2,9-11: Invalid ttl; ttl must be a duration`},
		"null ttl":       {"tasks {\n  ttl = null\n}\n", `plughost.hcl:2,9-13: Invalid ttl; ttl must be set`},
		"fast poll":      {"tasks {\n  poll_interval = \"99ms\"\n}\n", `plughost.hcl:2,19-25: Invalid poll_interval; poll_interval must be from 100ms to 1m, not 99ms`},
		"slow poll":      {"tasks {\n  poll_interval = \"61s\"\n}\n", `Invalid poll_interval; poll_interval must be from 100ms to 1m, not 1m1s`},
		"no running":     {"tasks {\n  max_running = 0\n}\n", `plughost.hcl:2,17-18: Invalid max_running; max_running must be a whole number from 1 to 100000`},
		"many running":   {"tasks {\n  max_running = 100001\n}\n", `Invalid max_running; max_running must be a whole number from 1 to 100000`},
		"half running":   {"tasks {\n  max_running = 1.5\n}\n", `Invalid max_running; max_running must be a whole number from 1 to 100000`},
		"string running": {"tasks {\n  max_running = \"many\"\n}\n", `Invalid max_running; max_running must be a whole number`},
		"small result":   {"tasks {\n  max_result_size = \"1023B\"\n}\n", `plughost.hcl:2,21-28: Invalid max_result_size; max_result_size must be from 1KiB to 64MiB, not 1023 bytes`},
		"big result":     {"tasks {\n  max_result_size = \"65MiB\"\n}\n", `Invalid max_result_size; max_result_size must be from 1KiB to 64MiB, not 68157440 bytes`},
		"bad result":     {"tasks {\n  max_result_size = \"lots\"\n}\n", `Invalid max_result_size; max_result_size must be a size such as "512MiB"`},
		"late escalation": {"tasks {\n  escalate_after = \"61m\"\n}\n",
			`plughost.hcl:2,20-25: Invalid escalate_after; escalate_after must be from 0s (only when the plugin says so) to 1h, not 1h1m0s`},
		"negative escalation": {"tasks {\n  escalate_after = \"-1s\"\n}\n", `Invalid escalate_after; escalate_after must be from 0s`},
		"password in the file": {redis(`password = "hunter2"`),
			`plughost.hcl:4,5-13: Unsupported argument; An argument named "password" is not expected here. "password" belongs in a file named by password_file, or $PLUGHOST_REDIS_PASSWORD: never in this file.`},
		"no address":        {"tasks {\n  redis {\n    db = 1\n  }\n}\n", `plughost.hcl:2,9-9: Missing required argument; The argument "address" is required`},
		"address sans port": {"tasks {\n  redis {\n    address = \"redis\"\n  }\n}\n", `plughost.hcl:3,15-22: Invalid address; address must be "host:port", or the path of a unix socket starting with /`},
		"address port 0":    {"tasks {\n  redis {\n    address = \"redis:0\"\n  }\n}\n", `Invalid address`},
		"relative socket":   {"tasks {\n  redis {\n    address = \"run/redis.sock\"\n  }\n}\n", `Invalid address`},
		"empty username":    {redis(`username = ""`), `plughost.hcl:4,16-18: Invalid username; username must be a user name`},
		"empty password file": {redis(`password_file = " "`),
			`Invalid password_file; password_file must be the path of a file holding the password (not the password itself)`},
		"negative db":  {redis(`db = -1`), `plughost.hcl:4,10-12: Invalid db; db must be a whole number from 0 to 1048576`},
		"empty prefix": {redis(`key_prefix = ""`), `Invalid key_prefix; key_prefix must be a prefix without spaces`},
		"short replica timeout": {redis(`replica_timeout = "999ms"`),
			`plughost.hcl:4,23-30: Invalid replica_timeout; replica_timeout must be from 1s to 1m, not 999ms`},
		"long replica timeout": {redis(`replica_timeout = "2m"`), `replica_timeout must be from 1s to 1m, not 2m0s`},
		"two redis blocks": {"tasks {\n  redis {\n    address = \"a:1\"\n  }\n  redis {\n    address = \"b:1\"\n  }\n}\n",
			`plughost.hcl:5,3-8: Duplicate redis block`},
		"two tasks blocks": {"tasks {}\ntasks {}\n", `plughost.hcl:2,1-6: Duplicate tasks block`},
		"tasks typo": {"tasks {\n  poll_intreval = \"1s\"\n}\n",
			`plughost.hcl:2,3-16: Unsupported argument; An argument named "poll_intreval" is not expected here. Did you mean "poll_interval"?`},
		"redis typo": {redis(`replica_timout = "5s"`),
			`Unsupported argument; An argument named "replica_timout" is not expected here. Did you mean "replica_timeout"?`},
		"block typo":       {"taks {}\n", `plughost.hcl:1,1-5: Unsupported block type; Blocks of type "taks" are not expected here. Did you mean "tasks"?`},
		"ttl in stateless": {"stateless {\n  ttl = \"1h\"\n}\n", `"ttl" belongs in tasks { }.`},
		"redis at the top": {"redis {}\n", `"redis" belongs in tasks { }.`},
		"address in tasks": {"tasks {\n  address = \"redis:6379\"\n}\n", `"address" belongs in redis { } inside tasks { }.`},
		"timeout in redis": {redis(`timeout = "5s"`), `"timeout" belongs in sandbox { } or a plugin block inside it.`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(c.src), "plughost.hcl")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}
