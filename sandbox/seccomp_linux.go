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
//
// Nothing executed from memory (layer memfd-noexec): execveat with
// AT_EMPTY_PATH (executing an open file descriptor, which may be a memfd:
// glibc's fexecve) fails with EPERM, and so, unless vm.memfd_noexec is 2 in
// the plugin's pid namespace (see setMemfdNoExec), does memfd_create
// without MFD_NOEXEC_SEAL: a sealed memfd can never be made executable, so
// neither execveat nor execve("/proc/self/fd/N") runs it. Landlock's
// execute right does not cover such anonymous files; this rule does.
//
// Without a memory cgroup (as an ordinary user), RLIMIT_DATA is all that
// bounds a plugin's memory, and it counts private writable mappings only:
// shared memory is page cache of an anonymous file, and a plugin could hold
// gigabytes of it (measured: 3 GB mapped MAP_SHARED|MAP_ANONYMOUS against
// a 512 MiB limit). So then (layer no-shared-memory) what creates such
// memory fails with EPERM: mmap with MAP_SHARED (or MAP_SHARED_VALIDATE)
// and MAP_ANONYMOUS, memfd_create, and shmget (the plugin's System V
// segments, in its own IPC namespace, whose shmall an ordinary user's
// namespace may not lower). /dev/zero, whose shared mappings are the same
// anonymous memory, is read-only to Landlock (a read-only shared mapping
// reads the zero page and allocates nothing: measured), and /dev/shm is
// not in a plugin's /dev. Shared memory a plugin needs goes through a file
// in its tmp, which the tmpfs's size bounds. RLIMIT_AS would count it all,
// but Go reserves 1.2 GB of address space at start (a hello world fails
// under 512 MiB) and node needs more than 4 GB (its WebAssembly guard
// regions): it cannot be the bound.
//
// Write xor execute (layer write-xor-exec, unless the policy allows a JIT):
// mmap, mprotect and pkey_mprotect asking for PROT_WRITE and PROT_EXEC
// together, and shmat with SHM_EXEC, fail with EPERM. A filter sees one
// call's arguments, never the history of a mapping: mapping memory
// writable, filling it, then mprotect-ing it to read and execute (RW then
// RX) cannot be told from what the dynamic loader does, and is not refused;
// nor is mapping PROT_EXEC a file the plugin wrote (a file in its tmp
// directory, a sealed memfd): the loader maps libraries that way. What the
// rule refuses is memory that is writable and executable at the same
// moment, which JIT compilers use and shellcode needs. glibc asks for it
// only to give a library that demands an executable stack one (dlopen then
// fails); Go, python and ordinary C programs never do. Writing to its own
// code through /proc/self/mem, which ignores page protections, is
// Landlock's to refuse: /proc is not among a plugin's paths.

const (
	seccompData = 0 // offsets in struct seccomp_data
	offArch     = 4
	offArg0     = 16

	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retNOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)

	shmExec = 0o100000 // SHM_EXEC, which x/sys/unix does not define
	wx      = unix.PROT_WRITE | unix.PROT_EXEC

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

// filterOpts choose the rules of a plugin's filter that depend on its
// policy and on what the stage could do without the filter.
type filterOpts struct {
	net NetMode
	// memfd refuses memfd_create without MFD_NOEXEC_SEAL: vm.memfd_noexec
	// could not be set to 2 in the plugin's pid namespace.
	memfd bool
	// jit allows writable and executable mappings (Policy.AllowJIT).
	jit bool
	// noShared refuses the memory RLIMIT_DATA does not count: no memory
	// cgroup bounds the plugin (see noSharedMemory).
	noShared bool
}

// seccompFilter assembles the filter.
func seccompFilter(o filterOpts) ([]bpf.RawInstruction, error) {
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
	when(unix.SYS_EXECVEAT,
		arg(4),
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.AT_EMPTY_PATH, SkipFalse: 1},
		bpf.RetConstant{Val: retEPERM},
		loadNR,
	)
	if o.memfd {
		when(unix.SYS_MEMFD_CREATE,
			arg(1),
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.MFD_NOEXEC_SEAL, SkipTrue: 1},
			bpf.RetConstant{Val: retEPERM},
			loadNR,
		)
	}
	if !o.jit {
		wxBody := []bpf.Instruction{
			arg(2), // prot
			bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: wx},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: wx, SkipFalse: 1},
			bpf.RetConstant{Val: retEPERM},
			loadNR,
		}
		for _, nr := range []uintptr{unix.SYS_MMAP, unix.SYS_MPROTECT, unix.SYS_PKEY_MPROTECT} {
			when(nr, wxBody...)
		}
		when(unix.SYS_SHMAT,
			arg(2), // shmflg
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: shmExec, SkipFalse: 1},
			bpf.RetConstant{Val: retEPERM},
			loadNR,
		)
	}
	if o.noShared {
		noSharedMemory(when, arg, loadNR)
	}
	var sock []bpf.Instruction
	switch o.net {
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
func installSeccomp(o filterOpts) error {
	raw, err := seccompFilter(o)
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

// noSharedMemory adds the rules of layer no-shared-memory (see above) to a
// filter through its when, arg and loadNR.
func noSharedMemory(when func(uintptr, ...bpf.Instruction), arg func(int) bpf.Instruction, loadNR bpf.Instruction) {
	const sharedAnon = unix.MAP_SHARED | unix.MAP_ANONYMOUS // MAP_SHARED_VALIDATE has MAP_SHARED's bit
	when(unix.SYS_MMAP,
		arg(3), // flags
		bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sharedAnon},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: sharedAnon, SkipFalse: 1},
		bpf.RetConstant{Val: retEPERM},
		loadNR,
	)
	when(unix.SYS_MEMFD_CREATE, bpf.RetConstant{Val: retEPERM})
	when(unix.SYS_SHMGET, bpf.RetConstant{Val: retEPERM})
}
