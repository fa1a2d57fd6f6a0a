package packages

import (
	"bufio"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Settings are the user's package-manager settings that an install step
// needs (where the registry is, how to reach it, which CA to trust), read
// from their files and environment without the credentials those hold.
type Settings struct {
	// NPMRC is an .npmrc of the settings kept, in npm's ini form: the
	// install step's only npm configuration (its userconfig; the global
	// one is empty).
	NPMRC string
	// Read are the files the settings name that the step must read (a
	// cafile).
	Read []string
	// Dropped names the keys left out because they are credentials, and
	// those whose URL's user and password were removed, so that a
	// failure to authenticate can say why.
	Dropped []string
}

// npmKept are the npm settings an install step is given: the registry
// and per-scope registries, TLS trust and proxies, timeouts. Everything
// else is the user's business; anything that is a credential (_authToken,
// _auth, _password, username, certfile, keyfile) never leaves their file
// unless the operator grants the file itself (Options.NPMAuth).
var npmKept = regexp.MustCompile(`^(registry|@[a-z0-9._~-]+:registry|cafile|ca|strict-ssl|proxy|https-proxy|http-proxy|noproxy|no-proxy|` +
	`fetch-retries|fetch-retry-mintimeout|fetch-retry-maxtimeout|fetch-timeout|maxsockets|prefer-online|prefer-offline)$`)

// npmURLKey are the kept npm settings whose value is a URL, which may
// hold a user and password (https://user:pass@host/): without the
// operator's grant, those are removed as the other credentials are.
var npmURLKey = regexp.MustCompile(`^(registry|@[a-z0-9._~-]+:registry|proxy|https-proxy|http-proxy)$`)

// stripUserinfo is the URL v without its user and password, and whether
// it had any. A value that is not a URL with a host is returned as is.
func stripUserinfo(v string) (string, bool) {
	u, err := url.Parse(v)
	if err != nil || u.User == nil || u.Host == "" {
		if i := strings.Index(v, "@"); err != nil && i >= 0 && strings.Contains(v[:i], "://") {
			// unparsable, with what looks like userinfo: keep the scheme
			// and what follows the last @ (the host).
			scheme, _, _ := strings.Cut(v, "://")
			return scheme + "://" + v[strings.LastIndex(v, "@")+1:], true
		}
		return v, false
	}
	u.User = nil
	return u.String(), true
}

// NPMSettings reads npm's settings as npm would: its configuration files
// in order (npm's globalconfig, then the user's userconfig; a file that
// does not exist is skipped), then the npm_config_* variables of
// environ, which override them. A ${VAR} in a value is expanded from
// getenv, as npm does. Credentials are left out: the keys that hold them
// and the user and password of a URL-valued key (registry, proxy). With
// auth, they are kept too: the operator granted them.
func NPMSettings(configs []string, environ []string, getenv func(string) string, auth bool) (*Settings, error) {
	kv := map[string]string{}
	var dropped []string
	keep := func(k, v string) {
		k = strings.TrimSpace(k)
		v = strings.TrimSpace(os.Expand(strings.Trim(strings.TrimSpace(v), `"`), getenv))
		if k == "" {
			return
		}
		if npmKept.MatchString(k) || (auth && isNPMCredential(k)) {
			if !auth && npmURLKey.MatchString(k) {
				if stripped, ok := stripUserinfo(v); ok {
					v = stripped
					dropped = append(dropped, k)
				}
			}
			kv[k] = v
		} else if isNPMCredential(k) {
			dropped = append(dropped, k)
		}
	}
	for _, path := range configs {
		f, err := os.Open(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("npm settings: %w", err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' {
				continue
			}
			k, v, _ := strings.Cut(line, "=")
			keep(k, v)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("npm settings %s: %w", path, err)
		}
	}
	for _, e := range environ {
		k, v, ok := strings.Cut(e, "=")
		lower := strings.ToLower(k)
		if !ok || !strings.HasPrefix(lower, "npm_config_") {
			continue
		}
		name := strings.ReplaceAll(strings.TrimPrefix(lower, "npm_config_"), "_", "-")
		if name == "userconfig" || name == "globalconfig" || name == "cache" || name == "prefix" {
			continue
		}
		keep(name, v)
	}
	s := &Settings{Dropped: dropped}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, kv[k])
		if k == "cafile" && kv[k] != "" {
			s.Read = append(s.Read, kv[k])
		}
	}
	s.NPMRC = b.String()
	sort.Strings(s.Dropped)
	return s, nil
}

// isNPMCredential reports whether an npm setting is a credential: a
// registry's token, basic auth, or a client certificate's key.
func isNPMCredential(k string) bool {
	for _, c := range []string{"_authToken", "_auth", "_password", "username", "email", "certfile", "keyfile", "cert", "key"} {
		if k == c || strings.HasSuffix(k, ":"+c) {
			return true
		}
	}
	return false
}

// NPMConfigs are the configuration files npm reads for the user, in
// order: its globalconfig (npm_config_globalconfig, else PREFIX/etc/npmrc
// beside the node binary node, as npm computes it: /usr/etc/npmrc for
// /usr/bin/node) and its userconfig (npm_config_userconfig, else
// ~/.npmrc). user is the latter, for the grant of its credentials.
func NPMConfigs(home, node string, getenv func(string) string) (configs []string, user string) {
	global := getenv("npm_config_globalconfig")
	if global == "" && node != "" {
		if real, err := filepath.EvalSymlinks(node); err == nil {
			node = real
		}
		prefix := getenv("npm_config_prefix")
		if prefix == "" {
			prefix = filepath.Dir(filepath.Dir(node))
		}
		global = filepath.Join(prefix, "etc", "npmrc")
	}
	user = getenv("npm_config_userconfig")
	if user == "" && home != "" {
		user = filepath.Join(home, ".npmrc")
	}
	for _, c := range []string{global, user} {
		if c != "" {
			configs = append(configs, c)
		}
	}
	return configs, user
}
