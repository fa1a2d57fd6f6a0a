package sandbox

import (
	"cmp"
	"fmt"
)

// The layers a Windows job object gives (see jobLimitsOf).
const (
	LayerJobMemory    Layer = "job-memory"    // the job object caps the memory its processes commit, together
	LayerJobProcesses Layer = "job-processes" // the job object caps how many processes it holds at once
)

// jobLimits is what a plugin's Windows job object is given from its
// policy. The logic lives here, portable and tested on Linux; the calls
// that apply it are in launcher_windows.go.
type jobLimits struct {
	// memory is JOBOBJECT_EXTENDED_LIMIT_INFORMATION.JobMemoryLimit: the
	// commit charge (private bytes) of every process in the job together,
	// as the memory cgroup bounds a plugin's whole tree on Linux (not the
	// per-process limit, which a plugin could multiply by forking).
	memory uint64
	// processes is ActiveProcessLimit. Policy.Pids counts threads too on
	// Linux (the pids cgroup); a job counts processes only, so on Windows
	// a plugin's threads are not capped.
	processes uint32
}

// jobLimitsOf returns the job limits of pol, its defaults filled in.
func jobLimitsOf(pol *Policy) jobLimits {
	return jobLimits{
		memory:    uint64(cmp.Or(pol.Memory, DefaultMemory)),
		processes: uint32(cmp.Or(pol.Pids, DefaultPids)),
	}
}

// jobReport is what a plugin confined by a job object gets on Windows, and
// what it does not: the rest of the Linux layers have no counterpart the
// host sets up there.
func jobReport(pol *Policy) *Report {
	r := &Report{
		Active: []Layer{LayerJobMemory, LayerJobProcesses},
		Missing: map[Layer]string{
			"filesystem": "no filesystem confinement on Windows: the plugin reads and writes whatever the host's user may",
			"network":    "allow_net is not enforced on Windows: the plugin has the host's network",
			"uid":        "the plugin runs as the host's user, with its rights",
			"syscalls":   "no system call filter on Windows",
			"threads":    "the job caps processes, not threads (pids counts both on Linux)",
		},
	}
	if pol.CPU > 0 {
		r.Missing[LayerCgroupCPU] = "cpu is not enforced on Windows"
	}
	return r
}

// jobExitReason explains a plugin's exit by its job's memory limit: the
// job's peak commit reached the limit (Windows then fails the allocation,
// which a plugin usually dies of). "" when it did not.
func jobExitReason(peak, limit uint64) string {
	if limit == 0 || peak < limit {
		return ""
	}
	return fmt.Sprintf("the job object's memory limit of %s was reached", mib(int64(limit)))
}
