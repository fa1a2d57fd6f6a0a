package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter is classic BPF assembled in Go (no libseccomp, no cgo).
// It kills the process on a foreign architecture (and on x32 syscalls), and
// fails with EPERM: ptrace, mount and the new mount API, bpf, io_uring,
// kernel modules and kexec, keyrings, perf, userfaultfd, setns, unshare,
// clone with namespace flags, open_by_handle_at, process_vm_*, TIOCSTI and
// TIOCLINUX ioctls, MPTCP sockets, and with Net none every socket that is not
// a unix socket (with Net list: UDP and raw ones). clone3 fails with ENOSYS so
// that libc and Go fall back to clone, whose flags the filter can read.

const (
	seccompData = 0 // offsets in struct seccomp_data
	offArch     = 4
	offArg0     = 16

	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retNOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)

	nsFlags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
		unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME
)

// deniedSyscalls fail with EPERM whatever their arguments.
var deniedSyscalls = []uintptr{
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_KCMP,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
	unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT,
	unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	unix.SYS_BPF, unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE, unix.SYS_KEXEC_LOAD,
	unix.SYS_KEXEC_FILE_LOAD, unix.SYS_REBOOT, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_PERF_EVENT_OPEN,
	unix.SYS_USERFAULTFD, unix.SYS_SETNS, unix.SYS_UNSHARE, unix.SYS_OPEN_BY_HANDLE_AT,
	unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_PERSONALITY,
}

// auditArch is the AUDIT_ARCH_* value of the architecture plughost was built for.
func auditArch() (uint32, bool) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, true
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, true
	}
	return 0, false
}

// seccompFilter assembles the filter for a network mode.
func seccompFilter(net NetMode) ([]bpf.RawInstruction, error) {
	arch, ok := auditArch()
	if !ok {
		return nil, fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	var p []bpf.Instruction
	loadNR := bpf.LoadAbsolute{Off: seccompData, Size: 4}
	// A block that runs only when the syscall number is nr: if not, skip it.
	when := func(nr uintptr, body ...bpf.Instruction) {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(nr), SkipTrue: uint8(len(body))})
		p = append(p, body...)
	}
	arg := func(i int) bpf.Instruction { return bpf.LoadAbsolute{Off: uint32(offArg0 + 8*i), Size: 4} }

	p = append(p,
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: arch, SkipTrue: 1},
		bpf.RetConstant{Val: retKill},
		loadNR,
	)
	if runtime.GOARCH == "amd64" {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: 0x40000000, SkipFalse: 1}, bpf.RetConstant{Val: retKill})
	}
	for _, nr := range deniedSyscalls {
		when(nr, bpf.RetConstant{Val: retEPERM})
	}
	when(unix.SYS_CLONE3, bpf.RetConstant{Val: retNOSYS})
	when(unix.SYS_CLONE,
		arg(0),
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: nsFlags, SkipFalse: 1},
		bpf.RetConstant{Val: retEPERM},
		loadNR,
	)
	when(unix.SYS_IOCTL,
		arg(1),
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.TIOCSTI, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.TIOCLINUX, SkipFalse: 1},
		bpf.RetConstant{Val: retEPERM},
		loadNR,
	)
	var sock []bpf.Instruction
	switch net {
	case NetNone: // unix sockets only
		sock = []bpf.Instruction{
			arg(0),
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipFalse: 1},
			bpf.RetConstant{Val: retAllow},
			bpf.RetConstant{Val: retEPERM},
		}
	case NetList: // unix sockets, and TCP (only) over IPv4/IPv6
		sock = []bpf.Instruction{
			arg(0),
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipFalse: 1},
			bpf.RetConstant{Val: retAllow},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_INET, SkipTrue: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_INET6, SkipFalse: 7}, // → deny
			arg(1),
			bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0xf},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SOCK_STREAM, SkipFalse: 4}, // → deny
			// Only TCP (protocol 0 or IPPROTO_TCP): Landlock's port rules
			// see nothing else (MPTCP, SCTP).
			arg(2),
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipTrue: 1},                 // → allow
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.IPPROTO_TCP, SkipFalse: 1}, // → deny
			bpf.RetConstant{Val: retAllow},
			bpf.RetConstant{Val: retEPERM},
		}
	default: // all: everything but MPTCP, which Landlock cannot see
		sock = []bpf.Instruction{
			arg(2),
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.IPPROTO_MPTCP, SkipFalse: 1},
			bpf.RetConstant{Val: retEPERM},
			loadNR,
		}
	}
	when(unix.SYS_SOCKET, sock...)
	p = append(p, bpf.RetConstant{Val: retAllow})
	return bpf.Assemble(p)
}

// installSeccomp loads the filter into this thread (NO_NEW_PRIVS is set).
func installSeccomp(net NetMode) error {
	raw, err := seccompFilter(net)
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("loading the seccomp filter: %w", err)
	}
	return nil
}
