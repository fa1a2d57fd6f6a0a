//go:build unix

package manager

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// noFollow makes opening the plugin file fail on a symbolic link (one
// swapped in after its target was resolved).
const noFollow = syscall.O_NOFOLLOW

// exposure says why someone other than the host's user and root may
// change what fi describes ("" when no one may): it is writable by its
// group or by others, or owned by another user. It names the mode bits
// and the owner.
func exposure(what string, fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	uid, mode := int(st.Uid), fi.Mode().Perm()
	switch {
	case uid != 0 && uid != os.Geteuid():
		return fmt.Sprintf("%s is owned by %s, not by the host's user (uid %d) or root (mode %s)", what, ownerName(uid), os.Geteuid(), mode)
	case mode&0o022 != 0:
		return fmt.Sprintf("%s is writable by others than its owner %s (mode %s)", what, ownerName(uid), mode)
	}
	return ""
}

// ownerName is "uid N (name)", or "uid N" when the user has no name.
func ownerName(uid int) string {
	owner := "uid " + strconv.Itoa(uid)
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		owner += " (" + u.Username + ")"
	}
	return owner
}
