package sandbox

import (
	"strings"
	"testing"
)

// A Windows job takes the policy's memory (the whole tree's commit, as the
// memory cgroup) and pids (as a process count), defaults filled in.
func TestJobLimitsOf(t *testing.T) {
	for name, tc := range map[string]struct {
		pol  Policy
		want jobLimits
	}{
		"defaults": {Policy{}, jobLimits{memory: DefaultMemory, processes: DefaultPids}},
		"set":      {Policy{Memory: 64 << 20, Pids: 3}, jobLimits{memory: 64 << 20, processes: 3}},
	} {
		if got := jobLimitsOf(&tc.pol); got != tc.want {
			t.Errorf("%s: jobLimitsOf = %+v, want %+v", name, got, tc.want)
		}
	}
}

// The report names the job's layers as active and every Linux layer
// Windows lacks as missing, cpu only when the policy sets it.
func TestJobReport(t *testing.T) {
	r := jobReport(&Policy{})
	if r.String() != "job-memory,job-processes" {
		t.Errorf("active = %s, want job-memory,job-processes", r)
	}
	for _, l := range []Layer{"filesystem", "network", "uid", "syscalls", "threads"} {
		if r.Missing[l] == "" {
			t.Errorf("missing layers %v do not name %s", r.Missing, l)
		}
	}
	if _, ok := r.Missing[LayerCgroupCPU]; ok {
		t.Errorf("cpu named missing without a cpu limit")
	}
	if r := jobReport(&Policy{CPU: 1}); r.Missing[LayerCgroupCPU] == "" {
		t.Errorf("cpu set but not named missing: %v", r.Missing)
	}
}

// A peak commit at the limit explains the exit; below it, or without a
// limit, nothing does.
func TestJobExitReason(t *testing.T) {
	if got := jobExitReason(512<<20, 512<<20); !strings.Contains(got, "memory limit of 512.0 MiB") {
		t.Errorf("at the limit: %q", got)
	}
	for _, c := range [][2]uint64{{100, 512 << 20}, {100, 0}} {
		if got := jobExitReason(c[0], c[1]); got != "" {
			t.Errorf("jobExitReason(%d, %d) = %q, want none", c[0], c[1], got)
		}
	}
}
