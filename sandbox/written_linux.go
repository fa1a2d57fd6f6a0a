package sandbox

import (
	"fmt"
	"slices"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// What the stage does to the places a plugin writes (its tmp, its data
// directory, go-plugin's socket directory), and to the memory no rlimit
// counts.
//
// Its tmp is a tmpfs of Policy.TmpSize in the plugin's mount namespace:
// the kernel refuses a write past it with ENOSPC, as root and in an
// ordinary user's namespace alike (measured on Linux 6.18: a user
// namespace owns its mount namespace, and tmpfs may be mounted there).
//
// Unless Policy.AllowExecWritten, the three places are noexec mounts and
// Landlock's rule for them lacks the execute right: execve of a file
// there fails with EACCES (mount or Landlock, whichever comes first), and
// mapping one executable (a shared library, a native module) with EPERM
// (the mount). Either holds without the other: the mount where Landlock
// is missing, Landlock where there is no mount namespace.

// rwNoExec is read and write without execute: Landlock's rule for the
// places the plugin writes, when it may not execute what it wrote.
const rwNoExec = landlock.AccessFSSet(ll.AccessFSReadFile | ll.AccessFSReadDir | ll.AccessFSWriteFile |
	ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir | ll.AccessFSMakeReg |
	ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSTruncate |
	ll.AccessFSRefer)

// writtenMounts mounts the plugin's tmp as a tmpfs of spec.TmpSize bytes,
// owned by the uid the plugin will run as, and, unless spec.ExecWritten,
// its data and socket directories again noexec over themselves. It runs in
// the plugin's mount namespace after privateMounts, which put them back.
func writtenMounts(spec *stageSpec) error {
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV}
	if !spec.ExecWritten {
		flags |= unix.MS_NOEXEC
		attr.Attr_set |= unix.MOUNT_ATTR_NOEXEC
	}
	if spec.Tmp != "" {
		opts := fmt.Sprintf("size=%d,mode=0700", spec.TmpSize)
		if spec.DropUID >= 0 {
			opts += fmt.Sprintf(",uid=%d,gid=%d", spec.DropUID, spec.DropUID)
		}
		if err := unix.Mount("tmpfs", spec.Tmp, "tmpfs", flags, opts); err != nil {
			return fmt.Errorf("mounting a tmpfs of %d bytes over the tmp directory %s: %w", spec.TmpSize, spec.Tmp, err)
		}
	}
	if spec.ExecWritten {
		return nil
	}
	for _, p := range []string{spec.DataDir, spec.SockDir} {
		if p == "" {
			continue
		}
		fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			return fmt.Errorf("cloning %s: %w", p, err)
		}
		err = unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr)
		if err == nil {
			err = unix.MoveMount(fd, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH)
		}
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("mounting %s noexec: %w", p, err)
		}
	}
	return nil
}

// writtenRules are Landlock's rules for the write paths: the places the
// plugin writes without the execute right (unless spec.ExecWritten), the
// operator's allow_write paths with every right.
func writtenRules(spec *stageSpec, add func([]string, func(...string) landlock.FSRule, func(...string) landlock.FSRule)) {
	written := []string{spec.Tmp, spec.DataDir, spec.SockDir}
	var granted, own []string
	for _, p := range spec.Write {
		if !spec.ExecWritten && slices.Contains(written, p) {
			own = append(own, p)
		} else {
			granted = append(granted, p)
		}
	}
	add(granted, func(p ...string) landlock.FSRule { return landlock.RWDirs(p...).WithRefer() }, landlock.RWFiles)
	add(own, func(p ...string) landlock.FSRule { return landlock.PathAccess(rwNoExec, p...) }, landlock.RWFiles)
}
