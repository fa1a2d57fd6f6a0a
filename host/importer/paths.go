package importer

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/plughost/plughost/host/declared"
)

// The rule for the paths a stdio server names in its args, env values and
// cwd. In the desktop host the server ran with the user's rights; in
// plughost it sees only what its plugin block grants, so every path it
// names is either granted (for real, in the block import writes) or moved
// to the server's own ${HOME}, its private data directory, and each is
// said in a line of the report:
//
//   - a path under a system directory (/usr, /etc, /opt, …) is granted
//     read-only: a server has no business writing there;
//   - an existing directory that is /, your home itself, or that holds or
//     lies in one of plughost's own directories (configuration, state
//     with its secrets and trust file, data with the plugin directory) or
//     a directory of keys (~/.ssh, ~/.gnupg, ~/.aws; ~/.config as a
//     whole) is granted nothing: a server that could write there could
//     change plughost's configuration and give itself any grant, or read
//     your keys. The grant is written commented out, with a decide: line
//     saying why and to name a narrower directory (guarded);
//   - any other existing directory is granted read-write (allow_write): the
//     filesystem server's roots are the user's choice of what it may
//     change, and in the desktop host it could; the line says how to
//     narrow it to allow_read;
//   - an existing file is granted read-only (a configuration, a key, a
//     database read): granting a file read-write rarely works, since
//     programs replace a file through a new one in its directory (or keep
//     a journal there), and granting that directory would give more than
//     was meant;
//   - a file the server writes — one of a known server's stores (stores),
//     or a path in env that does not exist yet in a directory that does —
//     is moved to ${HOME}/BASENAME, and an existing one copied there at
//     import: the server keeps its data, and nothing outside its own
//     directory becomes writable. The original is left as it was; the
//     line says how to keep using it in place instead;
//   - a path that does not exist (nor, in env, its directory) is granted
//     nothing, and said.
//
// The program an interpreter runs (its first file argument) is not
// granted here: plughost grants it itself (sandbox.ServerGrants).

// systemDirs hold the system's files: a path under one is granted
// read-only, never written, never moved.
var systemDirs = []string{"/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/nix", "/snap", "/var/lib", "/proc", "/sys", "/dev"}

// searchPaths are variables holding lists of directories separated by
// ':': each existing one is granted read-only.
var searchPaths = []string{"PATH", "NODE_PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "GEM_PATH", "PERL5LIB", "CLASSPATH"}

// store names the file a known server writes: the variable (env) or the
// flag taking it as its value (flag), and the value import gives the
// variable when the entry sets none (def: the server's default file lies
// in its package, which the sandbox grants read-only).
type store struct{ env, flag, def string }

// stores are the files known servers write, by package.
var stores = map[string]store{
	"@modelcontextprotocol/server-memory": {env: "MEMORY_FILE_PATH", def: "${HOME}/memory.jsonl"},
	"mcp-server-sqlite":                   {flag: "--db-path"},
}

// fileCopy is a file import copies into a server's data directory.
type fileCopy struct{ from, to string }

// paths applies the rule above to s, whose package (packageOf) is pkg,
// rewriting in s what it moves and adding to g what it grants; launched
// says a launcher (npx, uvx) runs it, whose arguments hold no script.
func (c *converter) paths(name string, s *declared.Server, pkg string, launched bool, g *grants, add func(string, string, ...any)) {
	st, known := stores[pkg]
	if known && st.env != "" && st.def != "" {
		if _, set := s.Env[st.env]; !set {
			if s.Env == nil {
				s.Env = map[string]string{}
			}
			s.Env[st.env] = st.def
			add(MovedNote, "env %s = %q, added: by default the server keeps its data inside its own package, which the sandbox lets it read only; "+
				"now in its data directory, %s", st.env, st.def, c.dataDir(name))
		}
	}
	program := g.runtime != "" && !launched // the first file argument of an interpreter is its script, which plughost grants itself
	for i := 0; i < len(s.Args); i++ {
		a := s.Args[i]
		flag, value, glued := strings.Cut(a, "=")
		if !glued {
			value = a
		}
		isStore := known && st.flag != "" && (glued && flag == st.flag || i > 0 && s.Args[i-1] == st.flag)
		if !filepath.IsAbs(value) {
			continue
		}
		if program && !glued && !isStore {
			if isDir, ok := c.stat(value); ok && !isDir {
				program = false
				add(InfoNote, "%s is the program %s runs: plughost grants it itself (and a node_modules tree it lies in)", value, filepath.Base(s.Command))
				continue
			}
		}
		if v := c.place(name, fmt.Sprintf("args[%d]", i), value, isStore, false, g, add); v != value {
			if glued {
				v = flag + "=" + v
			}
			s.Args[i] = v
		}
	}
	if filepath.IsAbs(s.Cwd) {
		s.Cwd = c.place(name, "cwd", s.Cwd, false, false, g, add)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		v := s.Env[k]
		switch {
		case slices.Contains(searchPaths, k):
			var granted []string
			for _, d := range filepath.SplitList(v) {
				if isDir, ok := c.stat(d); ok && isDir && filepath.IsAbs(d) && !slices.Contains(g.read, d) {
					g.read = append(g.read, d)
					granted = append(granted, d)
				}
			}
			if len(granted) > 0 {
				add(GrantNote, "env %s: read-only: %s", k, strings.Join(granted, ", "))
			}
		case filepath.IsAbs(v) && !strings.Contains(v, ":"):
			s.Env[k] = c.place(name, "env "+k, v, known && k == st.env, true, g, add)
		}
	}
}

// place decides for the absolute path p that a server names (from says
// where: "args[2]", "env MEMORY_FILE_PATH", "cwd"): it grants it in g, or
// moves it to the server's ${HOME} and returns its new value; isStore
// says it is a file the server writes, inEnv that it is an env value.
func (c *converter) place(name, from, p string, isStore, inEnv bool, g *grants, add func(string, string, ...any)) string {
	p = filepath.Clean(p)
	isDir, exists := c.stat(p)
	parentIsDir, _ := c.stat(filepath.Dir(p))
	switch {
	case slices.Contains(g.read, p) || slices.Contains(g.write, p):
	case underSystem(p) && exists:
		g.read = append(g.read, p)
		add(GrantNote, "%s %s: read-only (a system path)", from, p)
	case underSystem(p):
		add(InfoNote, "%s %s does not exist here: nothing granted", from, p)
	case isStore && !isDir, inEnv && !exists && parentIsDir:
		return c.move(name, from, p, exists, g, add)
	case exists && isDir && c.guarded(p) != "":
		why := c.guarded(p)
		g.writeDecide = append(g.writeDecide, writeDecision{path: p, why: why})
		add(DecideNote, "%s %s: NOT granted: %s. Its plugin block has allow_write = [%q] commented out; "+
			"grant a narrower directory instead, one holding only what the server should see or change (e.g. %s)",
			from, p, why, p, c.narrower(p))
	case exists && isDir:
		g.write = append(g.write, p)
		add(GrantNote, "%s %s: read-write (a directory: in the desktop host the server had your rights on it); "+
			"if it only reads it, move it from allow_write to allow_read in its plugin block", from, p)
	case exists:
		g.read = append(g.read, p)
		add(GrantNote, "%s %s: read-only (a file); if the server changes it, copy it into %s and name it ${HOME}/%s instead, "+
			"or grant its directory with allow_write = [%q]", from, p, c.dataDir(name), filepath.Base(p), filepath.Dir(p))
	default:
		add(InfoNote, "%s %s does not exist here: nothing granted (the server will not find it)", from, p)
	}
	return p
}

// move moves the file p (from says where the server names it) to the
// server's ${HOME}: it returns the new value, and when the file exists
// adds its copy into the data directory to g.
func (c *converter) move(name, from, p string, exists bool, g *grants, add func(string, string, ...any)) string {
	to := "${HOME}/" + filepath.Base(p)
	data := c.dataDir(name)
	what := "it does not exist yet: the server creates it there"
	if exists {
		g.copies = append(g.copies, fileCopy{from: p, to: filepath.Join(data, filepath.Base(p))})
		what = "import copied the file there (the original stays as it was, no longer updated)"
	}
	add(MovedNote, "%s %s is now %s, in the server's own data directory %s; %s. The server writes that file, and making "+
		"a file (or replacing one through a new one beside it) would need all of %s writable; to keep it in place instead, put the path back and grant allow_write = [%q]",
		from, p, to, data, what, filepath.Dir(p), filepath.Dir(p))
	return to
}

// dataDir is the data directory of the server called name: its ${HOME}.
func (c *converter) dataDir(name string) string {
	return filepath.Join(c.stateDir, "plugins", name, "data")
}

// underSystem reports whether p is one of systemDirs or lies under one.
func underSystem(p string) bool {
	return slices.ContainsFunc(systemDirs, func(d string) bool { return p == d || strings.HasPrefix(p, d+"/") })
}

// keyDirs are the directories under the home that hold keys and
// credentials, or (~/.config) every program's configuration: no server is
// granted one of them, or a directory holding one, automatically.
var keyDirs = []string{".ssh", ".gnupg", ".aws", ".config"}

// guarded says why the directory p must not be granted to a server
// automatically: it is /, the home itself, or it holds or lies in one of
// plughost's own directories or a directory of keys (keyDirs); "" when
// none of these.
func (c *converter) guarded(p string) string {
	within := func(a, b string) bool { return a == b || strings.HasPrefix(a, b+"/") } // a is b or under it
	if p == "/" {
		return "it is the whole filesystem: the server could change plughost's own configuration (and so give itself any grant) and read your keys"
	}
	if c.home != "" && p == c.home {
		return "it is your whole home: the server could change plughost's own configuration (and so give itself any grant) and read your keys (~/.ssh)"
	}
	for _, d := range c.own {
		if d != "" && (within(d, p) || within(p, d)) {
			return fmt.Sprintf("it would let the server change plughost's own configuration or state (%s), and so give itself any grant", d)
		}
	}
	if c.home != "" {
		for _, k := range keyDirs {
			d := filepath.Join(c.home, k)
			if within(d, p) || k != ".config" && within(p, d) { // ~/.config as a whole, not a directory of it
				if k == ".config" {
					return fmt.Sprintf("it would let the server change every program's configuration (%s), plughost's included, and so give itself any grant", d)
				}
				return fmt.Sprintf("it would let the server read your keys (%s)", d)
			}
		}
	}
	return ""
}

// narrower suggests, for the guarded directory p, a directory to grant
// instead.
func (c *converter) narrower(p string) string {
	if c.home != "" && (p == "/" || p == c.home || strings.HasPrefix(c.home, p+"/")) {
		return filepath.Join(c.home, "Documents") + ", or a project directory"
	}
	return "a subdirectory holding only the server's files"
}
