package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Server CPU and memory come from /proc, read while the server runs: the
// CPU time of the server process and of every process below it (a host's
// plugins) just before and after a phase, and their VmHWM (peak resident
// set) just before shutdown. clockTick is USER_HZ, 100 on Linux.
const clockTick = 10 * time.Millisecond

// procCPU is the CPU time a live process has used: the sum of its threads'
// run time from /proc/<pid>/task/*/schedstat (nanoseconds; Go runtimes
// rarely end threads), or utime+stime from /proc/<pid>/stat (10 ms ticks)
// where schedstat is missing.
func procCPU(pid int) (time.Duration, error) {
	if tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid)); len(tasks) > 0 {
		var sum time.Duration
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue // the thread ended
			}
			f := strings.Fields(string(b))
			if len(f) == 0 {
				continue
			}
			ns, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				continue
			}
			sum += time.Duration(ns)
		}
		if sum > 0 {
			return sum, nil
		}
	}
	return procStatCPU(pid)
}

// procStatCPU is utime+stime from /proc/<pid>/stat.
func procStatCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad utime/stime", pid)
	}
	return time.Duration(ut+st) * clockTick, nil
}

// ppid returns a process's parent pid.
func ppid(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	return strconv.Atoi(f[1])
}

// descendants returns every live process below pid.
func descendants(pid int) []int {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	children := map[int][]int{}
	for _, d := range dirs {
		p, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if pp, err := ppid(p); err == nil {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// cpuSample is the CPU used so far by a server process and its descendants.
type cpuSample struct {
	host, tree time.Duration
	perPID     map[int]time.Duration
}

func sampleCPU(pid int) cpuSample {
	s := cpuSample{perPID: map[int]time.Duration{}}
	s.host, _ = procCPU(pid)
	s.perPID[pid] = s.host
	s.tree = s.host
	for _, d := range descendants(pid) {
		if c, err := procCPU(d); err == nil {
			s.perPID[d] = c
			s.tree += c
		}
	}
	return s
}

// since returns the CPU used between two samples: by the host process, and
// by it and its descendants (a process that appeared in between counts from
// zero; one that vanished is lost, which is why samples are taken while the
// server runs).
func (s cpuSample) since(before cpuSample) (host, tree time.Duration) {
	host = s.host - before.host
	for pid, c := range s.perPID {
		tree += c - before.perPID[pid]
	}
	return host, tree
}

// statusKB reads a "VmXXX:" line of /proc/<pid>/status, in bytes.
func statusKB(pid int, key string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, key)
}

// memSample is peak and current resident memory of a server.
type memSample struct {
	HostPeak, TreePeak int64 // VmHWM: the host alone; host plus descendants
	HostRSS            int64 // VmRSS of the host now
}

func sampleMem(pid int) memSample {
	var m memSample
	m.HostPeak, _ = statusKB(pid, "VmHWM")
	m.HostRSS, _ = statusKB(pid, "VmRSS")
	m.TreePeak = m.HostPeak
	for _, d := range descendants(pid) {
		if v, err := statusKB(d, "VmHWM"); err == nil {
			m.TreePeak += v
		}
	}
	return m
}

// selfCPU is this process's CPU time so far (getrusage RUSAGE_SELF).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAvg returns the first three fields of /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// cpuModel returns the CPU's model name.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
