// Package preflight finds what would stop plughost serve from starting
// with a configuration, before it is deployed: `plughost check` prints
// what Check finds, and serve runs the same Check first and refuses to
// start when it finds anything, so the two cannot disagree.
//
// Check reads the configuration file (every HCL diagnostic, each with its
// file:line, not the first one and a count), then what the file names:
//
//   - files: the audit log's directory, the state key and redis password
//     files (their owner's alone), allowed_signers and the trust file,
//     the embeddings key file, the introspection client secret file, and
//     serve's --tls-cert and --tls-key;
//   - variables: a variable the file names (api_key_env) that is unset;
//   - keys: a state key too short, or in a file open to others;
//   - redis: the tasks' redis block is dialled (bounded by a few seconds)
//     and logged in to with the password serve would use;
//   - rules: the access block's CEL rules compile when the file is read,
//     so a rule that does not compile is a configuration diagnostic;
//   - declarations, when Options.Plugins names the plugin directory
//     (plughost check; not serve, where such a server alone fails): each
//     declared server's secret sources (bearer_token_file and _env,
//     header_files, env_files, oauth's client secret) exist and are
//     granted to it by its sandbox block, each problem at the
//     declaration's file; and each hook whose plugin is not in the
//     directory, at the hook's block.
//
// When the file itself has mistakes, they are all reported, and what it
// names is checked once it reads. Each Problem says where (file:line, a
// flag or a variable), what, and how to fix it:
//
//	rep := preflight.Check(&preflight.Options{Config: "plughost.hcl"})
//	for _, p := range rep.Problems {
//		fmt.Println(p)
//	}
//
// The readers of secrets here (StateKey, RedisPassword, EmbeddingsKey,
// ClientSecret) are the ones serve uses to load them.
package preflight

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/plughost/plughost/host/bundlesig"
	"github.com/plughost/plughost/host/config"
	"github.com/plughost/plughost/host/tasks/redistore"
	"github.com/plughost/plughost/host/trust"
	"github.com/plughost/plughost/internal/tlsreload"
)

// Problem is one thing that would stop serve.
type Problem struct {
	// Where is the file and line ("plughost.hcl:12" or
	// "plughost.hcl:12,3" for a diagnostic of the file itself), a flag
	// ("--tls-cert") or a variable ("$PLUGHOST_STATE_KEY"); "" when the
	// problem is nowhere in particular.
	Where string
	// What is the problem, in one line.
	What string
	// Fix is what to do about it; "" when What says it.
	Fix string
}

// String is the problem as check prints it: "where: what (fix: …)".
func (p Problem) String() string {
	s := p.What
	if p.Where != "" {
		s = p.Where + ": " + s
	}
	if p.Fix != "" {
		s += "\n    fix: " + p.Fix
	}
	return s
}

// Options say what Check checks; nil means the configuration file alone,
// with none (every default).
type Options struct {
	// Config is the configuration file; "" for none.
	Config string
	// Getenv reads the environment; nil is os.Getenv.
	Getenv func(string) string
	// TLSCert and TLSKey are serve's --tls-cert and --tls-key; "" when
	// not given.
	TLSCert, TLSKey string
	// AuditLog is serve's --audit-log, which wins over the audit block's
	// file; "" when not given.
	AuditLog string
	// Plugins is the plugin directory whose declared servers
	// (NAME.mcp.json) are checked too: each secret source they name
	// exists (a file readable, a variable set) and is granted to the
	// server by its sandbox block. "" checks none. serve leaves it
	// empty: such a server fails to start, the others serve.
	Plugins string
}

// Report is what Check found.
type Report struct {
	// Config is the configuration read; nil when the file could not be.
	Config *config.Config
	// Problems are what would stop serve, in the order checked; none when
	// it would start.
	Problems []Problem
}

// Err is nil when the report has no problems; else an error saying the
// one problem, or listing every one, one to a line, as `plughost check`
// prints them.
func (r *Report) Err() error {
	switch len(r.Problems) {
	case 0:
		return nil
	case 1: // as serve said it before it listed problems
		return errors.New(r.Problems[0].String())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problem(s) stop plughost from serving (plughost check lists them too):", len(r.Problems))
	for _, p := range r.Problems {
		b.WriteString("\n  " + strings.ReplaceAll(p.String(), "\n", "\n  "))
	}
	return errors.New(b.String())
}

// Check reads the configuration and what it names, and reports every
// problem serve would refuse to start with.
func Check(o *Options) *Report {
	if o == nil {
		o = &Options{}
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	r := &Report{}
	cfg := &config.Config{}
	var src []byte
	if o.Config != "" {
		var err error
		if src, err = os.ReadFile(o.Config); err != nil {
			r.add("", fmt.Sprintf("configuration %s: %v", o.Config, unwrapPath(err)), "pass --config FILE or $PLUGHOST_CONFIG naming a readable file")
			return r
		}
		if cfg, err = config.Parse(src, o.Config); err != nil {
			r.Problems = append(r.Problems, ConfigProblems(err)...)
			return r
		}
	}
	r.Config = cfg
	at := locator(src, o.Config)

	auditFile, auditWhere := o.AuditLog, "--audit-log"
	if auditFile == "" && cfg.Audit != nil {
		auditFile, auditWhere = cfg.Audit.File, at("audit", "file")
	}
	if err := CheckAuditFile(auditFile); err != nil {
		r.add(auditWhere, err.Error(), "create the directory, or name a writable file (\"-\" logs to stderr)")
	}
	stateKey, keySource, err := StateKey(cfg.Stateless, getenv)
	if err != nil {
		r.add(secretWhere(at("stateless", "state_key_file"), getenv, EnvStateKey, EnvStateKeyFile), err.Error(), "")
	}
	if rd := cfg.Tasks.Redis; rd != nil {
		if keySource == "" {
			r.add(at("tasks", "redis"), ErrRedisNeedsStateKey.Error(), "make a key (`head -c 32 /dev/urandom | base64`), give every replica the same "+
				"(state_key_file in the stateless block, or $"+EnvStateKey+")")
		}
		r.checkRedis(rd, stateKey, getenv, at)
	}
	r.checkTrust(cfg, getenv, at)
	if b := cfg.Trust.Bundles; len(b.TrustedRoots) > 0 {
		if _, err := bundlesig.NewPolicy(b.TrustedRoots, b.RequireSignature); err != nil {
			r.add(at("trust", "bundles", "trusted_roots"), err.Error(), "name PEM files of the CA certificates trusted to sign bundles")
		}
	}
	if s := cfg.Search; s != nil && s.Embeddings != nil {
		if _, err := EmbeddingsKey(s.Embeddings, getenv); err != nil {
			where, fix := at("search", "embeddings", "api_key_file"), "make the file readable, its owner's alone (chmod 600), holding the key"
			if s.Embeddings.APIKeyFile == "" {
				where, fix = at("search", "embeddings", "api_key_env"), "export $"+s.Embeddings.APIKeyEnv+" in serve's environment"
			}
			r.add(where, err.Error(), fix)
		}
	}
	if a := cfg.Auth; a != nil && a.ClientSecretFile != "" {
		if _, err := ClientSecret(a, getenv); err != nil {
			r.add(at("auth", "client_secret_file"), err.Error(), "make the file readable, its owner's alone (chmod 600), holding the secret")
		}
	}
	if _, err := ConsoleClientSecret(&cfg.Console); err != nil {
		r.add(at("console", "client_secret_file"), err.Error(), "make the file readable, its owner's alone (chmod 600), holding the console's client secret")
	}
	if o.TLSCert != "" && o.TLSKey != "" {
		if rl, err := tlsreload.New(o.TLSCert, o.TLSKey, nil); err != nil {
			r.add("--tls-cert, --tls-key", err.Error(), "") // tlsreload says which file, and what is wrong with it
		} else {
			rl.Close()
		}
	}
	if o.Plugins != "" {
		r.checkDeclarations(o.Plugins, cfg, o.Config, getenv)
		r.checkHooks(o.Plugins, cfg, src, o.Config)
	}
	return r
}

func (r *Report) add(where, what, fix string) {
	r.Problems = append(r.Problems, Problem{Where: where, What: what, Fix: fix})
}

// checkRedis reads the redis password and logs in to the redis, as serve
// would (without announcing a replica); stateKey seals the records (a
// random one when none is configured, a problem reported apart: the
// login is checked all the same).
func (r *Report) checkRedis(rd *config.Redis, stateKey []byte, getenv func(string) string, at func(...string) string) {
	password, _, err := RedisPassword(rd, getenv)
	if err != nil {
		r.add(secretWhere(at("tasks", "redis", "password_file"), getenv, EnvRedisPassword, EnvRedisPasswordFile), err.Error(), "")
		return
	}
	if stateKey == nil {
		stateKey = make([]byte, redistore.MinSecret)
		rand.Read(stateKey)
	}
	s, err := redistore.New(redistore.Options{Address: rd.Address, Username: rd.Username, Password: password, DB: rd.DB,
		KeyPrefix: rd.KeyPrefix, ReplicaTimeout: rd.ReplicaTimeout, Secret: stateKey})
	if err != nil {
		r.add(at("tasks", "redis", "address"), "tasks: "+err.Error(),
			"start the redis, or correct its address and credentials (without a redis block, tasks stay in this process)")
		return
	}
	s.Close()
}

// checkTrust reads the trust file and allowed_signers as serve's trust
// checker does.
func (r *Report) checkTrust(cfg *config.Config, getenv func(string) string, at func(...string) string) {
	t := cfg.Trust
	if !t.Uses(config.TrustPinned) && !t.Uses(config.TrustSigned) {
		return
	}
	file, err := TrustFile(cfg, getenv)
	if err != nil {
		r.add(at("trust"), err.Error(), "")
		return
	}
	_, err = trust.New(&trust.Options{Mode: trust.Mode(t.ModeFor("")), AllowedSigners: t.AllowedSigners, File: file,
		ModeFor: func(name string) trust.Mode { return trust.Mode(t.ModeFor(name)) }})
	if err == nil {
		return
	}
	where, fix := at("trust", "file"), "make the trust file readable, or remove it to start with no approvals"
	if t.AllowedSigners != "" && strings.Contains(err.Error(), "allowed signers") {
		where, fix = at("trust", "allowed_signers"), "create the file: one line per trusted key, as ssh-keygen(1) ALLOWED SIGNERS describes"
	}
	r.add(where, err.Error(), fix)
}

// TrustFile is the trust file of cfg: its trust block's file, else
// $XDG_STATE_HOME/plughost/trust.json (~/.local/state/plughost/trust.json):
// the state the operator's plughost keeps, out of the plugin directory so
// that whoever may drop a plugin there cannot approve it too.
func TrustFile(cfg *config.Config, getenv func(string) string) (string, error) {
	if cfg.Trust.File != "" {
		return cfg.Trust.File, nil
	}
	base := getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", errors.New("no trust file: neither XDG_STATE_HOME nor HOME is set; name one with trust { file = ... } in --config")
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "plughost", "trust.json"), nil
}

// CheckAuditFile says why serve could not append to the audit log at
// path; nil when it could, or when path is "" (no log) or "-" (stderr).
// Nothing is created.
func CheckAuditFile(path string) error {
	if path == "" || path == "-" {
		return nil
	}
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return fmt.Errorf("audit log %s is a directory", path)
	case err == nil:
		if err := canWrite(path); err != nil {
			return fmt.Errorf("audit log %s: not writable: %w", path, err)
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("audit log: %w", err)
	}
	dir := filepath.Dir(path)
	st, err = os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("audit log %s: its directory %s does not exist", path, dir)
	case err != nil:
		return fmt.Errorf("audit log: %w", err)
	case !st.IsDir():
		return fmt.Errorf("audit log %s: %s is not a directory", path, dir)
	}
	if err := canCreateIn(dir); err != nil {
		return fmt.Errorf("audit log %s: cannot create it in %s: %w", path, dir, err)
	}
	return nil
}

// secretWhere says where a secret came from: the variable holding it,
// else the configuration's key (where), else the variable naming its
// file — the order secretfile.Find reads them in.
func secretWhere(where string, getenv func(string) string, envValue, envFile string) string {
	switch {
	case getenv(envValue) != "":
		return "$" + envValue
	case where != "":
		return where
	case getenv(envFile) != "":
		return "$" + envFile
	}
	return ""
}

// ConfigProblems are the problems of a configuration file's error: one
// per HCL diagnostic, each at its file:line,column, with the diagnostic's
// detail (what was expected, the nearest valid key) as its fix; one per
// line of the access rules' CEL errors, each at its file:line:column.
func ConfigProblems(err error) []Problem {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var ps []Problem
		for _, e := range j.Unwrap() {
			ps = append(ps, ConfigProblems(e)...)
		}
		return ps
	}
	diags, ok := err.(hcl.Diagnostics)
	if !ok {
		var ps []Problem
		for line := range strings.Lines(err.Error()) {
			line = strings.TrimSpace(line)
			p := Problem{What: line}
			if m := located.FindStringSubmatch(line); m != nil {
				p.Where, p.What = m[1], m[2]
			}
			ps = append(ps, p)
		}
		return ps
	}
	var ps []Problem
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		p := Problem{What: d.Summary, Fix: d.Detail}
		if d.Subject != nil {
			p.Where = fmt.Sprintf("%s:%d,%d", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
		}
		ps = append(ps, p)
	}
	return ps
}

// located splits "file:line:column: what" (a CEL error of an access rule).
var located = regexp.MustCompile(`^(\S+:\d+:\d+): (.*)$`)

// ConfigError is err, a configuration file's error, with every problem
// on a line of its own (hcl's own message shows the first diagnostic and
// a count); errors.As still finds the hcl.Diagnostics in it.
func ConfigError(err error) error {
	if err == nil {
		return nil
	}
	ps := ConfigProblems(err)
	if len(ps) < 2 {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the configuration has %d errors:", len(ps))
	for _, p := range ps {
		b.WriteString("\n  " + strings.ReplaceAll(p.String(), "\n", "\n  "))
	}
	return &listedError{msg: b.String(), err: err}
}

// listedError is an error with a message of its own, wrapping the one
// it lists.
type listedError struct {
	msg string
	err error
}

func (e *listedError) Error() string { return e.msg }
func (e *listedError) Unwrap() error { return e.err }
