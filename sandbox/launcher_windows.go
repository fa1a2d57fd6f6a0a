package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// RunStageIfRequested returns at once: there is no sandbox stage on
// Windows.
func RunStageIfRequested() {}

type platform struct{}

func probePlatform(*Options) platform { return platform{} }

// wrap runs the plugin in a job object with the policy's memory and
// process limits (jobLimitsOf), and nothing else: a strict policy, which
// needs the filesystem and network layers Windows lacks here, is refused.
// The job is made and the process assigned in Started, right after the
// process starts (see host/manager's procGroup for the window that
// leaves); the job nests in the manager's own, which kills the plugin
// with the host.
func (l *Launcher) wrap(plugin string, pol *Policy, cmd *exec.Cmd, _ bool) (*Launch, error) {
	if pol.Strict {
		return nil, fmt.Errorf("strict policy: no filesystem or network sandbox on %s for %s: %w", platformName(), plugin, ErrUnavailable)
	}
	rep := jobReport(pol)
	l.log.Warn("NO FILESYSTEM OR NETWORK SANDBOX on Windows: the plugin runs with the host's rights, in a job object that caps its memory and processes",
		"plugin", plugin, "missing", slices.Sorted(mapKeys(rep.Missing)))
	limits := jobLimitsOf(pol)
	var mu sync.Mutex
	var job windows.Handle
	return &Launch{
		Cmd: cmd,
		Started: func(pid int) (*Report, error) {
			h, err := limitedJob(pid, limits)
			if err != nil {
				l.log.Warn("no job object: the plugin's memory and processes are not capped", "plugin", plugin, "error", err)
				return &Report{Missing: map[Layer]string{LayerJobMemory: err.Error(), LayerJobProcesses: err.Error()}}, nil
			}
			mu.Lock()
			job = h
			mu.Unlock()
			return rep, nil
		},
		Exited: func() string {
			mu.Lock()
			defer mu.Unlock()
			if job == 0 {
				return ""
			}
			var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
			why := ""
			if windows.QueryInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
				uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil) == nil {
				why = jobExitReason(uint64(info.PeakJobMemoryUsed), limits.memory)
			}
			windows.CloseHandle(job) // KILL_ON_JOB_CLOSE: whatever is left dies
			job = 0
			return why
		},
	}, nil
}

// limitedJob makes a job object with limits and KILL_ON_JOB_CLOSE, and
// puts the process pid in it.
func limitedJob(pid int, limits jobLimits) (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, fmt.Errorf("CreateJobObject: %w", err)
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE |
		windows.JOB_OBJECT_LIMIT_JOB_MEMORY | windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS
	info.JobMemoryLimit = uintptr(limits.memory)
	info.BasicLimitInformation.ActiveProcessLimit = limits.processes
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, fmt.Errorf("SetInformationJobObject: %w", err)
	}
	proc, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		windows.CloseHandle(job)
		return 0, fmt.Errorf("OpenProcess: %w", err)
	}
	defer windows.CloseHandle(proc)
	if err := windows.AssignProcessToJobObject(job, proc); err != nil {
		windows.CloseHandle(job)
		return 0, fmt.Errorf("AssignProcessToJobObject: %w", err)
	}
	return job, nil
}

// Probe reports what a plugin gets on Windows: a job object's limits,
// and the layers missing.
func Probe(opts *Options) (*Support, error) {
	if _, err := New(opts); err != nil {
		return nil, err
	}
	return &Support{Platform: platformName(), Namespaces: "not Linux", Default: jobReport(&Policy{})}, nil
}

// PluginOwner returns the host's own uid and gid (-1 on Windows): plugins
// run as the host does.
func PluginOwner() (uid, gid int) { return os.Getuid(), os.Getgid() }
