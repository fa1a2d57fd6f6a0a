package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// RunStageIfRequested runs the sandbox stage when plughost was started as
// one (os.Args[1] == StageArg), and never returns then; otherwise it returns
// at once. main calls it first: the stage must not print to stdout (the
// plugin's go-plugin handshake goes there).
func RunStageIfRequested() {
	if len(os.Args) < 2 || os.Args[1] != StageArg {
		return
	}
	runtime.LockOSThread() // capabilities, Landlock and seccomp are per thread up to execve
	if len(os.Args) > 2 && os.Args[2] == "nscheck" {
		os.Exit(0)
	}
	os.Exit(runStage())
}

// runStage confines this process in the order of the package doc and execs
// the plugin. It returns an exit code only on failure.
func runStage() int {
	specF, repF := os.NewFile(3, "spec"), os.NewFile(4, "report")
	if specF == nil || repF == nil {
		fmt.Fprintln(os.Stderr, "plughost: the sandbox stage is started by the plughost host only")
		return 2
	}
	unix.CloseOnExec(3)
	unix.CloseOnExec(4)
	var spec stageSpec
	if err := json.NewDecoder(specF).Decode(&spec); err != nil {
		fmt.Fprintln(os.Stderr, "plughost sandbox stage: reading the policy:", err)
		return 2
	}
	specF.Close()
	binFD, script, err := openExec(&spec)
	if err != nil {
		_ = json.NewEncoder(repF).Encode(&stageReport{Err: err.Error()})
		return 3
	}
	rep, err := confine(&spec)
	out := stageReport{Report: *rep}
	if err == nil && spec.Probe {
		_ = json.NewEncoder(repF).Encode(&out)
		return 0
	}
	if err != nil {
		out.Err = err.Error()
		_ = json.NewEncoder(repF).Encode(&out)
		fmt.Fprintln(os.Stderr, "plughost sandbox stage:", err)
		return 3
	}
	if err := json.NewEncoder(repF).Encode(&out); err != nil {
		return 3
	}
	if script {
		err = syscall.Exec(spec.Path, spec.Args, spec.Env)
	} else {
		// Through the descriptor's /proc link, not execveat(AT_EMPTY_PATH),
		// which the seccomp filter now refuses; /proc/self/fd needs no
		// search permission on the binary's directory. Without /proc, the
		// path, unless the host handed the file it hashed: that one runs
		// or nothing does.
		err = syscall.Exec(fmt.Sprintf("/proc/self/fd/%d", binFD), spec.Args, spec.Env)
		if errors.Is(err, syscall.ENOENT) && spec.ExecFD <= 0 {
			err = syscall.Exec(spec.Path, spec.Args, spec.Env)
		}
	}
	_ = json.NewEncoder(repF).Encode(&stageReport{Err: fmt.Sprintf("exec %s: %v", spec.Path, err)})
	return 3
}

// openExec returns the descriptor of the plugin file the stage executes,
// and whether it is a "#!" script (executed by path: its interpreter
// opens the path it is given). It is the file the host opened and
// hashed when the host handed it (spec.ExecFD): the file approved is the
// file that runs, whatever is renamed over its path meanwhile. Otherwise
// the path is opened now, while the stage may still be root: as root
// without a mount namespace its directory may be closed to uid 65534.
func openExec(spec *stageSpec) (fd int, script bool, err error) {
	if spec.ExecFD > 0 {
		fd = spec.ExecFD
		unix.CloseOnExec(fd)
	} else if fd, err = unix.Open(spec.Path, unix.O_PATH|unix.O_CLOEXEC, 0); err != nil {
		return -1, false, fmt.Errorf("open %s: %v", spec.Path, err)
	}
	head := make([]byte, 2)
	n := 0
	if spec.ExecFD > 0 {
		n, _ = unix.Pread(fd, head, 0)
	} else if f, err := os.Open(spec.Path); err == nil {
		n, _ = f.Read(head)
		f.Close()
	}
	script = n == 2 && string(head) == "#!"
	return fd, script, nil
}

// confine applies the layers after the namespaces: unprivileged uid,
// private mounts, sealed memfds (as root), rlimits, NO_NEW_PRIVS, Landlock,
// capabilities, seccomp.
// An error means the plugin must not run (a step that must not fail failed,
// or a strict policy misses a layer).
func confine(spec *stageSpec) (*Report, error) {
	rep := &Report{Missing: map[Layer]string{}}
	ok := func(l Layer) { rep.Active = append(rep.Active, l) }
	miss := func(l Layer, err error) { rep.Missing[l] = err.Error() }

	// The uid: in a user namespace the stage has the host user's uid there
	// too (nsAttr), and the capabilities it needs for what follows as
	// ambient ones; without namespaces it is that user already. As root it
	// drops to 65534 below, after the steps that need root.
	if spec.DropUID < 0 {
		if os.Getuid() != 0 {
			ok(LayerUID)
		} else {
			miss(LayerUID, errors.New("uid 0 in the plugin's user namespace"))
		}
	}

	if spec.Namespaces {
		if len(spec.Binds) > 0 { // first: their sources are in directories privateMounts hides
			if err := bindFiles(spec.Binds); err != nil {
				miss(LayerNetNames, err)
			} else {
				ok(LayerNetNames)
			}
		}
		err := privateMounts(spec)
		if err == nil {
			err = writtenMounts(spec)
		}
		// The fresh /proc even when a put-back failed: Landlock's
		// all-threads calls (psx) list this process's threads in
		// /proc/PID/task, and the host's /proc there is another process.
		if perr := mountProc(spec); perr != nil && err == nil {
			err = perr
		}
		if err != nil {
			miss(LayerMounts, err)
		} else {
			ok(LayerMounts)
		}
	}
	sealed := spec.PidNS && setMemfdNoExec()

	if err := setRlimits(spec); err != nil {
		miss(LayerRlimits, err)
	} else {
		ok(LayerRlimits)
	}

	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		miss(LayerNoNewPrivs, err)
	} else {
		ok(LayerNoNewPrivs)
	}

	abi, llNet, err := 0, false, procIsOwn()
	if err == nil {
		abi, llNet, err = applyLandlock(spec)
	}
	switch {
	case err != nil:
		miss(LayerLandlock, err)
	case abi == 0:
		miss(LayerLandlock, errors.New("the kernel has no Landlock"))
	default:
		ok(LayerLandlock)
		if spec.Net != NetAll {
			if llNet {
				ok(LayerLandlockNet)
			} else {
				miss(LayerLandlockNet, fmt.Errorf("Landlock ABI %d has no TCP rules (4 or later needed)", abi))
			}
		}
	}

	if err := dropCaps(spec.DropUID); err != nil {
		miss(LayerCaps, err)
	} else {
		if spec.DropUID >= 0 {
			ok(LayerUID)
		}
		ok(LayerCaps)
	}

	if err := installSeccomp(filterOpts{net: spec.Net, memfd: !sealed, jit: spec.JIT, noShared: spec.NoShared}); err != nil {
		miss(LayerSeccomp, err)
		miss(LayerMemfdNoExec, err)
		if !spec.JIT {
			miss(LayerWriteXorExec, err)
		}
		if spec.NoShared {
			miss(LayerNoSharedMemory, err)
		}
	} else {
		ok(LayerSeccomp)
		ok(LayerMemfdNoExec)
		if !spec.JIT {
			ok(LayerWriteXorExec)
		}
		if spec.NoShared {
			ok(LayerNoSharedMemory)
		}
	}

	for _, need := range spec.Need {
		if !slices.Contains(rep.Active, need) {
			why := rep.Missing[need]
			if why == "" {
				why = "not applied"
			}
			return rep, fmt.Errorf("strict policy: layer %s is missing (%s): %w", need, why, ErrUnavailable)
		}
	}
	if spec.DropUID >= 0 && !slices.Contains(rep.Active, LayerUID) {
		return rep, fmt.Errorf("cannot drop root to uid %d: %s", spec.DropUID, rep.Missing[LayerCaps])
	}
	return rep, nil
}

// setMemfdNoExec sets vm.memfd_noexec to 2 in this process's pid
// namespace, which must be a new one (the value is per pid namespace, and
// inherited by those created inside it): memfd_create then seals every
// memfd against execution (MFD_NOEXEC_SEAL) and refuses MFD_EXEC with
// EACCES. Measured on Linux 6.18: the host's value is untouched. Only root
// may write it (an ordinary user's namespace may not), so elsewhere the
// seccomp filter refuses memfd_create without MFD_NOEXEC_SEAL instead,
// which is stricter: a program asking for a plain memfd gets EPERM rather
// than a sealed one. Kernels before 6.3 have neither the value nor the
// flag, and so no memfd for plugins at all.
func setMemfdNoExec() bool {
	if os.Geteuid() != 0 {
		return false
	}
	return os.WriteFile("/proc/sys/vm/memfd_noexec", []byte("2"), 0) == nil
}

// bindFiles mounts each bind's source read-only over its target, in this
// process's mount namespace, made private first so that nothing reaches the
// host's.
func bindFiles(binds []fileBind) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / private: %w", err)
	}
	for _, b := range binds {
		fd, err := unix.OpenTree(unix.AT_FDCWD, b.Source, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			return fmt.Errorf("cloning %s: %w", b.Source, err)
		}
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC}
		_ = unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr) // Landlock grants it read-only anyway
		err = unix.MoveMount(fd, "", unix.AT_FDCWD, b.Target, unix.MOVE_MOUNT_F_EMPTY_PATH)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("mounting %s over %s: %w", b.Source, b.Target, err)
		}
	}
	return nil
}

// procIsOwn returns an error unless /proc is the proc of this process's
// pid namespace: go-landlock applies Landlock to every thread through psx,
// which finds the threads in /proc/<getpid()>/task and waits until each
// has answered its signal. In a new pid namespace getpid() is 1, and in
// the host's /proc that is another process, whose threads never answer:
// the stage would spin there forever instead of reporting.
func procIsOwn() error {
	self, err := os.Readlink("/proc/self")
	if err != nil {
		return fmt.Errorf("no /proc: %w", err)
	}
	if self != strconv.Itoa(os.Getpid()) {
		return fmt.Errorf("/proc is not this pid namespace's (/proc/self is %s, the stage is pid %d): not applied to every thread", self, os.Getpid())
	}
	return nil
}

// mountProc mounts a fresh /proc for the stage's new pid namespace.
func mountProc(spec *stageSpec) error {
	if !spec.PidNS {
		return nil
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting a fresh /proc: %w", err)
	}
	return nil
}

// privateMounts hides hiddenDirs under empty read-only tmpfs and puts the
// allowed paths beneath them back (read-only for Read).
//
// A path inside another one put back comes back with it (the clones are
// recursive), so it is put back only when it needs a mount of its own: a
// writable path inside a read-only one. Outer paths go first, so that the
// inner one's mount point is there, in the outer clone, and is mounted
// over rather than created: a file inside a read-only directory cannot be
// (EROFS), which failed the whole step.
func privateMounts(spec *stageSpec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / private: %w", err)
	}
	type back struct {
		fd   int
		path string
		dir  bool
		rw   bool
	}
	var backs []back
	defer func() {
		for _, b := range backs {
			unix.Close(b.fd)
		}
	}()
	under := func(p string) bool {
		return slices.ContainsFunc(spec.Hide, func(h string) bool { return within(p, h) })
	}
	clone := func(p string, ro bool) error {
		if !under(p) {
			return nil
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil // gone since the host looked
		}
		fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return fmt.Errorf("cloning %s: %w", p, err)
		}
		if ro {
			attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
			_ = unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr)
		}
		backs = append(backs, back{fd, p, fi.IsDir(), !ro})
		return nil
	}
	for _, p := range spec.Read {
		if err := clone(p, true); err != nil {
			return err
		}
	}
	for _, p := range append(slices.Clone(spec.Write), spec.Devices...) {
		if err := clone(p, false); err != nil {
			return err
		}
	}
	// A directory sorts before what it holds; the same path read-only
	// before writable (the clones' order, kept by the stable sort).
	slices.SortStableFunc(backs, func(a, b back) int { return strings.Compare(a.path, b.path) })
	for _, h := range spec.Hide {
		if fi, err := os.Lstat(h); err != nil || !fi.IsDir() {
			continue // absent, or a symlink (/var/run → /run) into a hidden dir
		}
		if err := unix.Mount("tmpfs", h, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
			return fmt.Errorf("hiding %s: %w", h, err)
		}
	}
	var placed []back
	for _, b := range backs {
		if slices.ContainsFunc(placed, func(o back) bool { return within(b.path, o.path) && (o.rw || !b.rw) }) {
			continue // back already, with the rights it needs
		}
		placed = append(placed, b)
		if _, err := os.Lstat(b.path); err == nil {
			// Inside a path put back (a writable one inside a read-only
			// one): its mount point is there.
		} else if b.dir {
			if err := os.MkdirAll(b.path, 0o755); err != nil {
				return fmt.Errorf("putting back %s: %w", b.path, err)
			}
		} else {
			if err := os.MkdirAll(filepath.Dir(b.path), 0o755); err != nil {
				return fmt.Errorf("putting back %s: %w", b.path, err)
			}
			f, err := os.OpenFile(b.path, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return fmt.Errorf("putting back %s: %w", b.path, err)
			}
			f.Close()
		}
		if err := unix.MoveMount(b.fd, "", unix.AT_FDCWD, b.path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("putting back %s: %w", b.path, err)
		}
	}
	for _, h := range spec.Hide {
		if fi, err := os.Lstat(h); err != nil || !fi.IsDir() {
			continue
		}
		if err := unix.Mount("", h, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("making %s read-only: %w", h, err)
		}
	}
	return nil
}

func setRlimits(spec *stageSpec) error {
	limits := []struct {
		res int
		v   uint64
	}{{unix.RLIMIT_DATA, spec.Data}, {unix.RLIMIT_NOFILE, spec.Nofile}, {unix.RLIMIT_CORE, 0}}
	if spec.Nproc > 0 {
		limits = append(limits, struct {
			res int
			v   uint64
		}{unix.RLIMIT_NPROC, spec.Nproc})
	}
	for _, l := range limits {
		if err := unix.Setrlimit(l.res, &unix.Rlimit{Cur: l.v, Max: l.v}); err != nil {
			return fmt.Errorf("setrlimit %d: %w", l.res, err)
		}
	}
	return nil
}

// landlockABI returns the kernel's Landlock ABI version, 0 if none.
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// applyLandlock restricts the filesystem to Read (read, execute) and Write
// (everything), TCP to Ports (unless the network is all), and scopes signals
// and abstract unix sockets to the plugin's own domain.
func applyLandlock(spec *stageSpec) (abi int, netRules bool, err error) {
	abi = landlockABI()
	if abi == 0 {
		return 0, false, nil
	}
	var rules []landlock.Rule
	add := func(paths []string, dirRule, fileRule func(...string) landlock.FSRule) {
		for _, p := range paths {
			fi, err := os.Stat(p)
			if err != nil {
				continue
			}
			if fi.IsDir() {
				rules = append(rules, dirRule(p))
			} else {
				rules = append(rules, fileRule(p))
			}
		}
	}
	add(spec.Read, landlock.RODirs, landlock.ROFiles)
	writtenRules(spec, add)
	// /dev/zero read-only: a shared mapping of it opened for writing is
	// anonymous shared memory, which RLIMIT_DATA does not count.
	add([]string{"/dev/null", "/dev/full"}, landlock.RWDirs, landlock.RWFiles)
	add([]string{"/dev/zero", "/dev/random", "/dev/urandom"}, landlock.RODirs, landlock.ROFiles)
	cfg := landlock.V11.BestEffort()
	if spec.Net == NetAll {
		if err := cfg.RestrictPaths(rules...); err != nil {
			return abi, false, err
		}
		return abi, false, cfg.RestrictScoped()
	}
	for _, port := range spec.Ports {
		rules = append(rules, landlock.ConnectTCP(port))
	}
	return abi, abi >= 4, cfg.Restrict(rules...)
}

// dropCaps empties the bounding and ambient sets, locks the securebits so
// that uid 0 gains nothing through execve, drops to dropUID when it is not
// negative, and clears the remaining capabilities of this thread.
func dropCaps(dropUID int) error {
	for c := 0; c < 64; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) {
				break // past the last capability
			}
			return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clearing ambient capabilities: %w", err)
	}
	const bits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 // NOROOT, NOROOT_LOCKED, NO_SETUID_FIXUP(_LOCKED), KEEP_CAPS_LOCKED
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0); err != nil {
		return fmt.Errorf("locking securebits: %w", err)
	}
	if dropUID >= 0 {
		if err := syscall.Setgroups(nil); err != nil {
			return fmt.Errorf("setgroups: %w", err)
		}
		if err := syscall.Setresgid(dropUID, dropUID, dropUID); err != nil {
			return fmt.Errorf("setresgid %d: %w", dropUID, err)
		}
		if err := syscall.Setresuid(dropUID, dropUID, dropUID); err != nil {
			return fmt.Errorf("setresuid %d: %w", dropUID, err)
		}
		_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0) // cleared by the uid change
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}
