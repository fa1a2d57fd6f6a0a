package config

import (
	"errors"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// The hooks block: guardrail plugins asked around every call, read and
// prompt get, and about every definition, in the order written (package
// hooks runs them; docs/operators.md "Guardrails" teaches them).
//
//	hooks {
//	  hook "secrets" {
//	    plugin   = "secrets"                      # the plugin that serves it
//	    on       = ["before_call", "after_call"]  # tool.HookPoints
//	    match    = "item.provider != 'vault'"     # CEL over caller and item; default: every request
//	    mode     = "enforce"                      # "enforce" | "permissive" (log and audit only) | "off"
//	    on_error = "refuse"                       # when it fails or times out: "refuse" | "pass"
//	    timeout  = "200ms"
//	  }
//	}

// Hook is one hook block.
type Hook struct {
	// Name is the block's label: unique, named in refusals, metrics and
	// the audit log.
	Name string
	// Plugin is the provider name of the plugin that serves it.
	Plugin string
	// On are the hook points it runs at (tool.HookPoint values), at least one.
	On []string
	// Match is the CEL expression over caller and item that selects the
	// requests it sees; "" for every one. It compiled when the file was read.
	Match string
	// Mode is "enforce" (default), "permissive" or "off".
	Mode string
	// OnError is "refuse" (default) or "pass".
	OnError string
	// Timeout bounds each question (default 200ms).
	Timeout time.Duration
}

// decodeHooks reads the hooks block.
func decodeHooks(body hcl.Body) ([]Hook, error) {
	return nil, errors.New("hooks { }: not built yet (issue 33, helper calls)")
}
