package tasks

// A task belongs to the caller that created it (issue 31). The protocol
// layer names that caller with a key of its own making (a digest of the
// token's issuer, subject and client id; of the local user on stdio) and
// asks about a task only as a Caller: a request from anyone else, or from
// a caller whose access rules no longer let it use the task's tool, is
// answered exactly as one naming a task that does not exist (ErrNotFound),
// so a task's id alone never shows that the task exists, on any replica.

// Caller is who asks about a task: tasks/get, tasks/update, tasks/cancel,
// or a listen's taskIds.
type Caller struct {
	// Key identifies the caller; the task records the creator's. It must
	// not be empty: a record without one (written before tasks had
	// owners) belongs to nobody and is found by no one.
	Key string
	// MayUse reports whether the caller's access rules let it use the
	// tool exposed as name, asked on every request; nil when the caller
	// has no rules (it may use every tool).
	MayUse func(name string) bool
}

// owns reports whether the task is who's and who may still use its tool.
func (who Caller) owns(t *Task) bool {
	return t.Caller != "" && t.Caller == who.Key && (who.MayUse == nil || who.MayUse(t.Tool))
}
