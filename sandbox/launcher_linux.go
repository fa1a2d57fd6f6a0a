package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/plughost/plughost/internal/lane"
)

// sandboxUID is the uid and gid plugins run as when the host is root.
const sandboxUID = 65534

// hiddenDirs are covered by an empty read-only tmpfs in the plugin's mount
// namespace; allowed paths beneath them are put back. /dev is rebuilt with
// null, zero, full, random and urandom only.
var hiddenDirs = []string{"/tmp", "/var", "/run", "/home", "/root", "/mnt", "/media", "/srv", "/dev"}

// devices are put back into the rebuilt /dev.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

// platform is what this machine offers, probed once per Launcher.
type platform struct {
	root       bool   // the host runs as uid 0
	namespaces bool   // the stage can be started in new namespaces
	nsErr      string // why not
	cgroups    cgroupRoots
}

func probePlatform(o *Options) platform {
	p := platform{root: os.Geteuid() == 0, cgroups: findCgroups()}
	if o.NoNamespaces {
		p.nsErr = "disabled by Options.NoNamespaces"
		return p
	}
	cmd := exec.Command(o.Self, StageArg, "nscheck")
	cmd.SysProcAttr = nsAttr(p.root, true)
	if err := cmd.Run(); err != nil {
		p.nsErr = "the kernel refused to create namespaces: " + err.Error()
		return p
	}
	p.namespaces = true
	return p
}

// nsAttr is the SysProcAttr that starts the stage in new namespaces: unless
// the host is root, a user namespace too, in which the host user keeps its
// own uid and gid (1000 outside is 1000 inside), so that the plugin is not
// uid 0 even there.
//
// The stage needs capabilities in that namespace for its mounts and to
// drop the bounding set: a process that creates a user namespace has them
// all, but loses them at execve unless it is uid 0 there. Go raises them as
// ambient capabilities in the child before it execs the stage
// (SysProcAttr.AmbientCaps; measured: the stage then mounts as uid 1000),
// and the stage clears them with the rest before it execs the plugin. An
// ordinary user may write only one line to uid_map, mapping its own uid,
// so the other way, a stage at uid 0 entering a nested user namespace
// that maps a non-zero uid onto it, costs a second namespace and a second
// exec for the same result.
func nsAttr(root, netns bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{
		Setsid:     true,
		Pdeathsig:  syscall.SIGKILL,
		Cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWNS,
	}
	if netns {
		a.Cloneflags |= unix.CLONE_NEWNET
	}
	if !root {
		a.Cloneflags |= unix.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
		a.GidMappingsEnableSetgroups = false
		a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
	}
	return a
}

// stageSpec is what the host tells the stage, over the sync pipe, once the
// stage's process is in its cgroups.
type stageSpec struct {
	Path string `json:"path"`
	// ExecFD, when positive, is the stage's descriptor of the plugin file
	// as the host opened and hashed it (the prepared command's extra
	// file): the stage executes it, and never opens Path.
	ExecFD int      `json:"exec_fd,omitempty"`
	Args   []string `json:"args"`
	Env    []string `json:"env"`

	Probe      bool       `json:"probe,omitempty"` // report, then exit 0 instead of exec
	Need       []Layer    `json:"need,omitempty"`  // strict: refuse unless all are active
	Namespaces bool       `json:"namespaces"`      // the stage is in new namespaces
	PidNS      bool       `json:"pidns"`
	DropUID    int        `json:"drop_uid"` // -1: keep (user namespace); else setres[ug]id to it
	Hide       []string   `json:"hide,omitempty"`
	Read       []string   `json:"read,omitempty"`
	Write      []string   `json:"write,omitempty"`
	Devices    []string   `json:"devices,omitempty"`
	Net        NetMode    `json:"net"`
	Ports      []uint16   `json:"ports,omitempty"`
	Binds      []fileBind `json:"binds,omitempty"` // mounted read-only over their targets (allow_net's names)
	Data       uint64     `json:"rlimit_data"`
	Nproc      uint64     `json:"rlimit_nproc"` // 0: not set
	Nofile     uint64     `json:"rlimit_nofile"`
	JIT        bool       `json:"jit,omitempty"` // writable and executable mappings allowed

	// The places the plugin writes (see writtenMounts): its tmp, mounted
	// as a tmpfs of TmpSize bytes, its data directory and go-plugin's
	// socket directory; all three noexec, and without Landlock's execute right, unless
	// ExecWritten.
	Tmp         string `json:"tmp,omitempty"`
	TmpSize     uint64 `json:"tmp_size,omitempty"`
	DataDir     string `json:"data_dir,omitempty"`
	SockDir     string `json:"sock_dir,omitempty"`
	ExecWritten bool   `json:"exec_written,omitempty"`
	// NoShared refuses the memory RLIMIT_DATA does not count (shared
	// anonymous mappings, memfds, System V segments): set by Started
	// when no memory cgroup bounds the plugin (see noSharedMemory).
	NoShared bool `json:"no_shared,omitempty"`
}

// stageReport is the stage's answer on the report pipe: one line with the
// layers, then (only when exec failed) a line with the error.
type stageReport struct {
	Report
	Err string `json:"error,omitempty"`
}

func (l *Launcher) wrap(plugin string, pol *Policy, cmd *exec.Cmd, probe bool) (*Launch, error) {
	p := *l.platform()
	netns := pol.net() == NetNone
	hostActive := []Layer{}
	hostMissing := map[Layer]string{}
	if p.namespaces {
		if !p.root {
			hostActive = append(hostActive, LayerUserNS)
		}
		hostActive = append(hostActive, LayerPidNS)
		if netns {
			hostActive = append(hostActive, LayerNetNS)
		}
		hostActive = append(hostActive, LayerIPCNS, LayerUTSNS, LayerMountNS)
	} else {
		for _, ly := range []Layer{LayerUserNS, LayerPidNS, LayerNetNS, LayerIPCNS, LayerUTSNS, LayerMountNS, LayerMounts} {
			if (ly == LayerUserNS && p.root) || (ly == LayerNetNS && !netns) {
				continue
			}
			hostMissing[ly] = p.nsErr
		}
		if pol.Strict {
			return nil, fmt.Errorf("strict policy: no namespaces for %s (%s): %w", plugin, p.nsErr, ErrUnavailable)
		}
	}

	jit, why := pol.JIT(cmd.Path)
	if jit {
		hostMissing[LayerWriteXorExec] = "writable and executable memory allowed for a JIT compiler: " + why
	}

	grants, err := RuntimeGrants(pol.Runtime, cmd.Path)
	if err != nil {
		return nil, fmt.Errorf("sandbox policy of %s: %w", plugin, err)
	}

	// allow_net as a list: only its names resolve (see NetworkGrants),
	// through a private /etc/hosts the stage mounts, which takes a mount
	// namespace.
	var hostsFile, nsswitchFile []byte
	if pol.net() == NetList {
		if p.namespaces {
			if hostsFile, nsswitchFile, err = confinedNames(l.context(), l.opts.Resolver, pol.NetAllow, resolveTimeout); err != nil {
				return nil, fmt.Errorf("sandbox policy of %s: %w", plugin, err)
			}
		} else {
			hostMissing[LayerNetNames] = "no mount namespace for a private /etc/hosts (" + p.nsErr + "): names are not confined to allow_net's list"
		}
	}

	data, tmp, err := l.pluginDirs(plugin, pol, probe)
	if err != nil {
		return nil, err
	}
	_ = os.Chmod(filepath.Dir(data), 0o711)
	cleanup := []string{tmp}
	var binds []fileBind
	if hostsFile != nil {
		// Beside tmp, not in it: the plugin may write its tmp, and these
		// are the host's; the stage mounts them before it hides both.
		names := tmp + "-names"
		cleanup = append(cleanup, names)
		if binds, err = writeNameFiles(names, hostsFile, nsswitchFile); err != nil {
			removeAll(cleanup)
			return nil, fmt.Errorf("sandbox: allow_net's names: %w", err)
		}
		if len(binds) == 0 {
			hostMissing[LayerNetNames] = "this machine has no /etc/hosts to mount the private one over: names are not confined to allow_net's list"
		}
		l.log.Debug("allow_net: only these names resolve", "plugin", plugin, "hosts", string(hostsFile))
	}
	sockDir := envValue(cmd.Env, "PLUGIN_UNIX_SOCKET_DIR")
	dropUID := -1
	if p.root {
		dropUID = sandboxUID
		for _, d := range []string{data, tmp, sockDir} {
			if d == "" {
				continue
			}
			if err := os.Chown(d, sandboxUID, sandboxUID); err != nil {
				removeAll(cleanup)
				return nil, fmt.Errorf("sandbox: giving %s to uid %d: %w", d, sandboxUID, err)
			}
		}
	}

	read := append([]string{cmd.Path}, DefaultReadPaths...)
	read = append(read, interpreters(cmd.Path)...)
	read = append(read, grants...)
	read = append(read, pol.AllowRead...)
	write := append([]string{data, tmp}, pol.AllowWrite...)
	if sockDir != "" {
		write = append(write, sockDir)
	}
	write = canonical(write)
	written := canonical([]string{tmp, data, sockDir}) // in that order; sockDir may be ""
	canon := canonical(read)
	read = append(canon, hiddenLinks(read, slices.Concat(canon, write))...)
	var hide []string
	if p.namespaces {
		for _, h := range hiddenDirs {
			if !slices.ContainsFunc(append(slices.Clone(read), write...), func(a string) bool { return within(h, a) }) {
				hide = append(hide, h)
			}
		}
	}
	var ports []uint16
	for _, hp := range pol.NetAllow {
		port, _ := netPort(hp) // checked by Policy.Check
		ports = append(ports, port)
	}

	env := scrubEnv(cmd.Env, append(slices.Clone(l.opts.PassEnv), pol.Env...))
	env = append(env, "HOME="+data, "TMPDIR="+tmp, "PATH="+PluginPATH)

	// The stage execs the file itself, not a symbolic link to it: a link
	// in a hidden directory (the plugin directory under /tmp, say) is gone
	// in the plugin's mount namespace, where only its target is put back;
	// a "#!" script's interpreter opens the path it is given.
	path := cmd.Path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		path = r
	}
	spec := stageSpec{
		Path: path, Args: cmd.Args, Env: env, Probe: probe,
		Namespaces: p.namespaces, PidNS: p.namespaces,
		DropUID: dropUID, Hide: hide, Read: read, Write: write, Devices: devices,
		Net: pol.net(), Ports: ports, Binds: binds,
		Data: uint64(pol.memory()), Nofile: uint64(pol.files()), JIT: jit,
		Tmp: written[0], TmpSize: uint64(pol.tmpSize()), DataDir: written[1], ExecWritten: pol.AllowExecWritten,
	}
	if len(written) > 2 {
		spec.SockDir = written[2]
	}
	if p.root || p.namespaces {
		// RLIMIT_NPROC counts every process of the uid: in a user namespace
		// (or as uid 65534) that is the plugin's own; without one it would
		// be the host user's, so the pids cgroup alone bounds the plugin.
		spec.Nproc = uint64(pol.pids())
	}
	if pol.Strict {
		spec.Need = []Layer{LayerUID, LayerRlimits, LayerNoNewPrivs, LayerLandlock, LayerCaps, LayerSeccomp, LayerMemfdNoExec}
		if !jit {
			spec.Need = append(spec.Need, LayerWriteXorExec)
		}
		if p.namespaces {
			spec.Need = append(spec.Need, LayerMounts)
		}
		if pol.net() == NetList {
			spec.Need = append(spec.Need, LayerLandlockNet)
			if p.namespaces {
				spec.Need = append(spec.Need, LayerNetNames)
			}
		}
	}
	return l.stage(plugin, pol, cmd, spec, hostActive, hostMissing, netns, cleanup)
}

// fileBind is a file the stage mounts read-only over another in the
// plugin's mount namespace.
type fileBind struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// writeNameFiles writes the private hosts file and nsswitch.conf of a
// plugin with an allow_net list into dir, readable by all and writable by
// none, and returns the mounts that put them over the machine's (those
// that exist: where a link leads).
func writeNameFiles(dir string, hosts, nsswitch []byte) ([]fileBind, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	var binds []fileBind
	for _, f := range []struct {
		name, over string
		data       []byte
	}{{"hosts", "/etc/hosts", hosts}, {"nsswitch.conf", "/etc/nsswitch.conf", nsswitch}} {
		src := filepath.Join(dir, f.name)
		if err := os.WriteFile(src, f.data, 0o444); err != nil {
			return nil, err
		}
		target, err := filepath.EvalSymlinks(f.over)
		if err != nil {
			if f.name == "hosts" {
				return nil, nil
			}
			continue
		}
		binds = append(binds, fileBind{Source: src, Target: target})
	}
	return binds, nil
}

func removeAll(paths []string) {
	for _, p := range paths {
		os.RemoveAll(p)
	}
}

// stage builds the Launch that re-executes plughost as the stage.
// cleanup lists the directories removed once the process has exited.
func (l *Launcher) stage(plugin string, pol *Policy, cmd *exec.Cmd, spec stageSpec, hostActive []Layer, hostMissing map[Layer]string, netns bool, cleanup []string) (*Launch, error) {
	specR, specW, err := os.Pipe()
	if err != nil {
		removeAll(cleanup)
		return nil, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		specR.Close()
		specW.Close()
		removeAll(cleanup)
		return nil, err
	}
	stage := &exec.Cmd{
		Path:       l.opts.Self,
		Args:       []string{l.opts.Self, StageArg, plugin},
		Env:        spec.Env,
		Stdout:     cmd.Stdout,
		Stderr:     cmd.Stderr,
		ExtraFiles: []*os.File{specR, repW},
	}
	li := lane.Index(cmd.Env, len(cmd.ExtraFiles))
	if len(cmd.ExtraFiles) > 0 && li != 0 { // the plugin file the host hashed: the stage executes it
		stage.ExtraFiles = append(stage.ExtraFiles, cmd.ExtraFiles[0])
		spec.ExecFD = 5
	}
	if li >= 0 { // the frame lane: the stage keeps it open across its exec, at the descriptor spec.Env names
		stage.ExtraFiles = append(stage.ExtraFiles, cmd.ExtraFiles[li])
		spec.Env = append(spec.Env, lane.Env(2+len(stage.ExtraFiles)))
	}
	if spec.Namespaces {
		stage.SysProcAttr = nsAttr(l.platform().root, netns)
	} else {
		stage.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	}
	var (
		cgMu sync.Mutex // Started sets cg; Exited (the reaper's goroutine) reads it
		cg   *cgroup
	)
	closeAll := func() {
		specR.Close()
		specW.Close()
		repR.Close()
		repW.Close()
	}
	watch := newStorageWatch(spec.DataDir, spec.Tmp, pol.dataSize(), pol.tmpSize(), l.storageCheckInterval())
	launch := &Launch{Cmd: stage, Usage: watch.Usage}
	launch.Started = func(pid int) (*Report, error) {
		defer closeAll()
		specR.Close() // the stage has its copies
		repW.Close()
		rep := &Report{Active: slices.Clone(hostActive), Missing: map[Layer]string{}}
		for k, v := range hostMissing {
			rep.Missing[k] = v
		}
		cgMu.Lock()
		placed, cgActive := l.platform().cgroups.place(plugin, pid, pol, rep.Missing)
		cg = placed
		cgMu.Unlock()
		rep.Active = append(rep.Active, cgActive...)
		// RLIMIT_DATA does not count shared memory; the memory cgroup
		// does. Without it, the stage refuses shared memory.
		spec.NoShared = !slices.Contains(cgActive, LayerCgroupMemory)
		if l.platform().root && slices.Contains(cgActive, LayerCgroupPids) {
			// RLIMIT_NPROC counts every process of uid 65534, all
			// plugins together; the pids cgroup bounds this one.
			spec.Nproc = 0
		}
		// The stage confines itself in milliseconds; one that does not
		// report in StageTimeout never will (it spun in Landlock's
		// all-threads call once): its process group is killed, and the
		// start fails saying which step hung.
		limit := l.stageTimeout()
		deadline := time.Now().Add(limit)
		timedOut := func(err error) error {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				return nil
			}
			_ = syscall.Kill(-pid, syscall.SIGKILL) // the stage leads its group (Setsid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return fmt.Errorf("sandbox: the sandbox stage of %s did not report within %s (it confines the process before exec; its process group was killed; see the plugin's stderr): %w", plugin, limit, ErrStageTimeout)
		}
		_ = specW.SetWriteDeadline(deadline)
		if err := json.NewEncoder(specW).Encode(&spec); err != nil {
			if terr := timedOut(err); terr != nil {
				return nil, terr
			}
			return nil, fmt.Errorf("sandbox: sending the policy to the stage: %w", err)
		}
		specW.Close()
		_ = repR.SetReadDeadline(deadline)
		sc := bufio.NewScanner(repR)
		sc.Buffer(nil, 1<<20)
		var got stageReport
		if !sc.Scan() {
			if terr := timedOut(sc.Err()); terr != nil {
				return nil, terr
			}
			return nil, errors.New("sandbox: the stage exited before reporting (see the plugin's stderr)")
		}
		if err := json.Unmarshal(sc.Bytes(), &got); err != nil {
			return nil, fmt.Errorf("sandbox: bad report from the stage: %w", err)
		}
		rep.Active = append(rep.Active, got.Active...)
		for k, v := range got.Missing {
			rep.Missing[k] = v
		}
		if got.Err != "" {
			return rep, stageError(got.Err)
		}
		for sc.Scan() { // a second line only if exec failed; EOF once it succeeded
			var tail stageReport
			if json.Unmarshal(sc.Bytes(), &tail) == nil && tail.Err != "" {
				return rep, stageError(tail.Err)
			}
		}
		if terr := timedOut(sc.Err()); terr != nil {
			return nil, terr
		}
		if !spec.Probe {
			// The tmpfs is there when the private mounts are.
			watch.start(pid, slices.Contains(rep.Active, LayerMounts), func() {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			})
		}
		if len(rep.Missing) > 0 {
			args := []any{"plugin", plugin}
			for _, k := range slices.Sorted(mapKeys(rep.Missing)) {
				args = append(args, string(k), rep.Missing[k])
			}
			l.log.Warn("SANDBOX INCOMPLETE: plugin runs without some layers", args...)
		}
		return rep, nil
	}
	launch.Exited = func() string {
		closeAll()
		over := watch.end()
		removeAll(cleanup)
		cgMu.Lock()
		defer cgMu.Unlock()
		if why := cg.remove(); why != "" {
			return why
		}
		return over
	}
	return launch, nil
}

func stageError(msg string) error {
	if strings.Contains(msg, ErrUnavailable.Error()) {
		return fmt.Errorf("sandbox: %s: %w", strings.TrimSuffix(strings.TrimSuffix(msg, ErrUnavailable.Error()), ": "), ErrUnavailable)
	}
	return fmt.Errorf("sandbox: %s", msg)
}

// canonical resolves symbolic links and drops paths that do not exist and
// duplicates.
func canonical(paths []string) []string {
	var out []string
	for _, p := range paths {
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// hiddenLinks returns the symbolic links among paths (and those a chain of
// links starting at one passes through) that lie in a hidden directory:
// canonical keeps only where they lead, but a program opens the path it
// was given (SSL_CERT_FILE=/home/me/ca.pem, a link), which is gone in the
// plugin's mount namespace unless it is put back too. The stage puts each
// back as the file or directory it leads to. A link inside a directory
// put back (one of back) comes back with it, and is left alone: mounting
// over the link would cover it.
func hiddenLinks(paths, back []string) []string {
	var out []string
	for _, p := range paths {
		chain := linkChain(p)
		for _, q := range chain[:max(len(chain)-1, 0)] { // the last is no link
			inside := slices.ContainsFunc(back, func(b string) bool { return q != b && within(q, b) })
			if !inside && slices.ContainsFunc(hiddenDirs, func(h string) bool { return within(q, h) }) && !slices.Contains(out, q) {
				out = append(out, q)
			}
		}
	}
	return out
}

// PluginOwner returns the uid and gid sandboxed plugins run as on the host:
// 65534 when the host runs as root, the host's own ids otherwise (in their
// user namespace too: never uid 0 there). A directory granted through
// allow_write must be writable by them.
func PluginOwner() (uid, gid int) {
	if os.Geteuid() == 0 {
		return sandboxUID, sandboxUID
	}
	return os.Getuid(), os.Getgid()
}
