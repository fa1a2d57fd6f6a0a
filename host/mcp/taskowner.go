package mcp

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"

	"github.com/plughost/plughost/host/tasks"
)

// Whose a task is, and whose a requestState (issue 31). A task records
// the key of the caller that created it, and tasks/get, tasks/update,
// tasks/cancel and a listen's taskIds from any other caller are answered
// as for a task nobody knows (-32602): the extension has no code for a
// denial, and an id that answers differently would tell that the task
// exists. The caller's access rules are asked again on every such
// request: one that no longer lets it use the task's tool gets the same
// answer. A requestState is sealed for its caller too (inputstate.go):
// another caller's retry with it does not open.
//
// A caller is its token's issuer, subject and client id (scopes and
// other claims may change from one token to the next: the same user with
// a refreshed token still owns its tasks); on stdio the local user; with
// the static token, or with no authentication at all, the caller with
// none of them, which every holder of the static token is.

// callerKey is the key naming the caller: a digest of its identity, so
// that a record in a shared store holds no user's name.
func callerKey(c *Caller) string {
	h := sha256.New()
	h.Write([]byte("plughost/task-caller/v1"))
	local := "remote"
	if c.Local {
		local = "local"
	}
	for _, f := range []string{c.Issuer, c.Subject, c.ClientID, local} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f))) // length-prefixed: fields cannot run together
		h.Write(n[:])
		h.Write([]byte(f))
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// taskCaller is the session's caller as the task service asks about it:
// its key, and whether its access rules let it use a tool now (nil
// without rules for it).
func (s *Session) taskCaller() tasks.Caller {
	who := tasks.Caller{Key: callerKey(&s.conn.Peer.Caller)}
	if g := s.view.guard(); g != nil {
		srv := s.srv
		who.MayUse = func(name string) bool {
			// A task of the host's own call_tool ran the tool its
			// arguments named, checked when called; its name is all
			// the task records.
			return name == CallToolName || srv.guarded.Sees(g, name)
		}
	}
	return who
}
