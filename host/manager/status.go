package manager

import (
	"github.com/plughost/plughost/host/trust"
	"github.com/plughost/plughost/pluginproto"
)

// What Status reports of each plugin, and the events Options.OnEvent
// learns of.

// Event is a plugin's life event, for Options.OnEvent.
type Event string

// The events of a plugin's life.
const (
	// EventStarted: a plugin process started (a first start, a restart, a
	// reload, a lazy plugin woken), before its handshake.
	EventStarted Event = "started"
	// EventCrashed: a running plugin died, or a restart failed: a death
	// that counts towards CrashLimit.
	EventCrashed Event = "crashed"
	// EventParked: the plugin died CrashLimit times within CrashWindow and
	// stays down until its file changes.
	EventParked Event = "parked"
	// EventQuarantined: Options.Trust refused the plugin file; it is
	// not started nor published (StateQuarantined).
	EventQuarantined Event = "quarantined"
	// EventLoaded: a started plugin answered its handshake and what it
	// offers is published (StateRunning): what a page showing the
	// plugins waits for, where EventStarted comes before the handshake.
	EventLoaded Event = "loaded"
)

// State is where a plugin is in its life.
type State string

// The states of a plugin, as reported by Status.
const (
	// StateLoading: the plugin is starting (first load or a reload).
	StateLoading State = "loading"
	// StateRunning: the plugin is running and published.
	StateRunning State = "running"
	// StateRestarting: the plugin died and waits for its backoff to restart.
	StateRestarting State = "restarting"
	// StateParked: the plugin died too often; it stays down until its file
	// changes.
	StateParked State = "parked"
	// StateFailed: the plugin could not be loaded; it is retried when its
	// file changes.
	StateFailed State = "failed"
	// StateIdle: a lazy plugin whose definitions are published but whose
	// process is not running; a request starts it.
	StateIdle State = "idle"
	// StateRefused: the plugin is not loaded because another plugin file
	// has the same provider name (LastError names it); it is looked at
	// again when its file changes.
	StateRefused State = "refused"
	// StateQuarantined: Options.Trust refused the plugin file (not
	// approved, changed since approval, not validly signed; Trust.Reason
	// says which); it is not started nor published, and is checked again
	// when its file, its signature or the trust files change.
	StateQuarantined State = "quarantined"
)

// PluginStatus is a snapshot of one plugin.
type PluginStatus struct {
	// Name is the provider name, derived from the file name by
	// naming.ForFile.
	Name string
	// Renamed says why Name is not the file name without its extension
	// (characters replaced, shortened, a reserved prefix); empty when it
	// is.
	Renamed string
	// Path is the plugin's executable.
	Path string
	// State is where the plugin is in its life.
	State State
	// PID is the running process's id; 0 when none runs.
	PID int
	// Version is the plugin's own name and version from Describe
	// ("echo 1.2.0"); empty until it has answered.
	Version string
	// Contract is the plugin contract version it speaks (Describe's,
	// the one negotiated at the handshake); 0 until it has answered.
	Contract uint32
	// Tools is how many tools the plugin offers; Resources, Templates and
	// Prompts how many resources, resource templates and prompts.
	Tools, Resources, Templates, Prompts int
	// Restarts counts restarts after the plugin died.
	Restarts int
	// LastError is the last load failure or death; empty if none since
	// the file last changed.
	LastError string
	// LastStderr is the excerpt of the plugin's stderr that goes with
	// LastError, when the plugin wrote any: all of it, or its first KiB
	// and its last 2 KiB with the number of bytes elided between them.
	// Empty otherwise. (The log line of the failure quotes it at its end.)
	LastStderr string
	// NextStep is the one thing the operator can do about LastError (a
	// grant to add, a variable to set), from Options.NextStep; empty when
	// none is known.
	NextStep string
	// Refused lists the definitions the plugin listed that the manager
	// did not publish (one without its name or URI, one listed twice),
	// each with the reason; the catalog checks and may refuse the rest
	// (catalog.Catalog.Skipped). Known only once the plugin has run: a
	// plugin published from the catalog cache reports none.
	Refused []Refusal
	// Hidden names what the plugin offers that Options.ExposeFor hides
	// from clients ("tool get_secret", "prompt review"); the counts above
	// include it.
	Hidden []string
	// Sandbox lists the sandbox layers confining the running process, as
	// reported by Options.Launcher; nil when none runs or no Launcher
	// reports any.
	Sandbox []string
	// Storage is what the running plugin holds of each of its storage
	// limits (its data directory, its tmp), as the Launcher reports it;
	// nil when none runs or the Launcher reports none.
	Storage []Storage
	// storage reports Storage while the plugin runs.
	storage func() []Storage
	// Stderr is the running process's last stderr lines, oldest first:
	// those of the excerpt's tail (its last 2 KiB, at most 50 lines; a
	// long line kept cut), blank ones left out; nil when none runs.
	// Written by the plugin: text, never markup.
	Stderr []string
	// stderr reports Stderr while the plugin runs.
	stderr func() []string
	// Trust is the plugin's last trust check: its mode, state, digest,
	// signer, and why it is quarantined. Zero without Options.Trust.
	Trust trust.Verdict
	// Requests is what the plugin asks to be granted: a declared
	// server's declaration says; a binary's Describe (known once it has
	// run, or from its catalog cache entry of that very binary).
	Requests pluginproto.Requests
	// Denied is what of Requests its sandbox policy does not grant
	// (Options.Denied): the plugin runs without it.
	Denied pluginproto.Requests
	// Held lists the definitions the plugin lists that clients are not
	// served as listed (mode pinned or signed: changed since approved, or
	// never approved), by kind and name.
	Held []Held
	// Overridden lists the definitions the operator's overrides change
	// (Options.Overrides), by kind and name, each with the plugin's text.
	Overridden []Overridden
}

// Storage is one storage limit of a running plugin.
type Storage struct {
	// Name says which: "data" (its data directory, kept across
	// restarts) or "tmp".
	Name string `json:"name"`
	// Used and Limit are in bytes; Used is -1 when it could not be
	// measured.
	Used  int64 `json:"used"`
	Limit int64 `json:"limit"`
}

// Refusal is a definition a plugin listed that the manager did not publish.
type Refusal struct {
	// Kind is what it defines: "tool", "resource", "resource template"
	// or "prompt" (catalog.Kind's values).
	Kind string
	// Name is its name, URI or URI template; empty when it has none.
	Name string
	// Reason says what is wrong.
	Reason string
}

// setError records err (nil: none) as the last error, followed by suffix.
func (st *PluginStatus) setError(err error, suffix string) {
	if err == nil {
		st.LastError, st.LastStderr, st.NextStep = "", "", ""
		return
	}
	text, stderr := splitStderr(err)
	st.LastError, st.LastStderr = text+suffix, stderr
}
