package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroupRoots are the writable cgroup hierarchies of this machine: cgroup v1
// memory, pids and cpu controllers, and the cgroup v2 hierarchy (all of them
// where mounted; a hybrid machine has both).
type cgroupRoots struct {
	memory, pids, cpu string // v1 mount points; "" if absent or not writable
	v2                string // v2 mount point; "" if absent or not writable
}

// findCgroups reads the mount table for cgroup hierarchies plughost may
// create groups in (under <hierarchy>/plughost).
func findCgroups() cgroupRoots {
	var r cgroupRoots
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return r
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent maj:min root mountpoint opts ... - fstype source superopts
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, pfields := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(pfields) < 3 {
			continue
		}
		mnt := fields[4]
		switch pfields[0] {
		case "cgroup2":
			if r.v2 == "" {
				r.v2 = mnt
			}
		case "cgroup":
			for _, o := range strings.Split(pfields[2], ",") {
				switch o {
				case "memory":
					r.memory = mnt
				case "pids":
					r.pids = mnt
				case "cpu":
					r.cpu = mnt
				}
			}
		}
	}
	for _, p := range []*string{&r.memory, &r.pids, &r.cpu, &r.v2} {
		if *p == "" {
			continue
		}
		base := filepath.Join(*p, "plughost")
		if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			*p = ""
			continue
		}
		*p = base
		sweep(base)
	}
	if r.v2 != "" {
		// Delegate what this hierarchy offers to plughost's groups; on a
		// hybrid machine v1 owns the controllers and this writes nothing.
		if ctl, err := os.ReadFile(filepath.Join(filepath.Dir(r.v2), "cgroup.subtree_control")); err == nil {
			var enable []string
			for _, c := range strings.Fields(string(ctl)) {
				if c == "memory" || c == "pids" || c == "cpu" {
					enable = append(enable, "+"+c)
				}
			}
			if len(enable) > 0 {
				_ = os.WriteFile(filepath.Join(r.v2, "cgroup.subtree_control"), []byte(strings.Join(enable, " ")), 0)
			}
		}
	}
	return r
}

// cgroup is the set of groups one plugin process was put in.
type cgroup struct {
	dirs   []string
	memory int64
}

// place creates the plugin's groups, sets its limits and moves pid into
// them. Layers it could not apply are recorded in missing.
func (r cgroupRoots) place(plugin string, pid int, pol *Policy, missing map[Layer]string) (*cgroup, []Layer) {
	cg := &cgroup{memory: pol.memory()}
	name := fmt.Sprintf("%s-%d", plugin, pid)
	mem, pids, cpu := false, false, false
	period := 100000
	quota := int(pol.CPU * float64(period))
	join := func(base string, settings [][2]string) bool {
		if base == "" {
			return false
		}
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return false
		}
		cg.dirs = append(cg.dirs, dir)
		applied := false
		for _, s := range settings {
			if err := os.WriteFile(filepath.Join(dir, s[0]), []byte(s[1]), 0); err == nil {
				applied = true
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return false
		}
		return applied
	}
	memLimit := strconv.FormatInt(pol.memory(), 10)
	pidLimit := strconv.Itoa(pol.pids())
	mem = join(r.memory, [][2]string{{"memory.limit_in_bytes", memLimit}, {"memory.memsw.limit_in_bytes", memLimit}})
	pids = join(r.pids, [][2]string{{"pids.max", pidLimit}})
	if pol.CPU > 0 {
		cpu = join(r.cpu, [][2]string{{"cpu.cfs_period_us", strconv.Itoa(period)}, {"cpu.cfs_quota_us", strconv.Itoa(quota)}})
	}
	v2 := [][2]string{{"memory.max", memLimit}, {"memory.swap.max", "0"}, {"pids.max", pidLimit}}
	if pol.CPU > 0 {
		v2 = append(v2, [2]string{"cpu.max", fmt.Sprintf("%d %d", quota, period)})
	}
	if join(r.v2, v2) {
		dir := cg.dirs[len(cg.dirs)-1]
		mem = mem || exists(filepath.Join(dir, "memory.max"))
		pids = pids || exists(filepath.Join(dir, "pids.max"))
		cpu = cpu || (pol.CPU > 0 && exists(filepath.Join(dir, "cpu.max")))
	}
	var active []Layer
	why := "no writable memory cgroup (v1 or v2) on this machine"
	if os.Geteuid() != 0 {
		why = "cgroups are not writable by this user"
	}
	for _, c := range []struct {
		ok    bool
		layer Layer
		want  bool
	}{{mem, LayerCgroupMemory, true}, {pids, LayerCgroupPids, true}, {cpu, LayerCgroupCPU, pol.CPU > 0}} {
		switch {
		case c.ok:
			active = append(active, c.layer)
		case c.want:
			missing[c.layer] = why
		}
	}
	return cg, active
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// remove deletes the groups once the process is gone, and says whether the
// memory cgroup killed it.
func (cg *cgroup) remove() string {
	if cg == nil {
		return ""
	}
	why := ""
	for _, dir := range cg.dirs {
		for _, f := range []string{"memory.oom_control", "memory.events"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(b), "\n") {
				if k, v, ok := strings.Cut(line, " "); ok && k == "oom_kill" && v != "0" {
					why = fmt.Sprintf("killed by the memory cgroup: the limit of %d MiB was reached", cg.memory>>20)
				}
			}
		}
		// The group empties once the kernel has finished tearing down
		// the plugin's pid namespace, which can trail its reaping a little.
		for i := 0; i < 50; i++ {
			if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return why
}

// sweep removes the empty groups a host killed with SIGKILL left behind
// (rmdir fails on a group that still has processes).
func sweep(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(base, e.Name())
		if procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs")); err == nil && len(strings.TrimSpace(string(procs))) == 0 {
			_ = os.Remove(dir)
		}
	}
}
