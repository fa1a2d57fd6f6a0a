package sandbox

import (
	"fmt"
	"io"
	"runtime"
	"slices"
)

// Support is what `plughost sandbox probe` prints: what this machine offers
// and which layers a plugin with the default policy actually gets.
type Support struct {
	// Platform is GOOS/GOARCH.
	Platform string
	// Root says whether the host runs as uid 0 (plugins then run as 65534).
	Root bool
	// Namespaces is "" when the stage can be started in new namespaces,
	// otherwise why not.
	Namespaces string
	// LandlockABI is the kernel's Landlock ABI version (0: none).
	LandlockABI int
	// Cgroups lists the writable cgroup hierarchies used ("v1 memory", "v2" …).
	Cgroups []string
	// Default is the report of a real stage run with the default policy
	// (nil where there is no sandbox).
	Default *Report
	// Checks are what a probe child under that sandbox tried, and whether
	// it was confined (macOS: see judgeSeatbeltProbe); nil elsewhere.
	Checks []ProbeCheck `json:",omitempty"`
}

// Print writes s for people, one fact per line.
func (s *Support) Print(w io.Writer) {
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	fmt.Fprintf(w, "platform      %s (host runs as root: %s)\n", s.Platform, yes(s.Root))
	ns := "yes"
	if s.Namespaces != "" {
		ns = "no: " + s.Namespaces
	}
	fmt.Fprintf(w, "namespaces    %s\n", ns)
	fmt.Fprintf(w, "landlock      ABI %d\n", s.LandlockABI)
	cg := "none writable"
	if len(s.Cgroups) > 0 {
		cg = fmt.Sprint(s.Cgroups)
	}
	fmt.Fprintf(w, "cgroups       %s\n", cg)
	if s.Default == nil {
		fmt.Fprintln(w, "sandbox       none on this platform: plugins run with the host's rights (strict policies refuse to start)")
		return
	}
	fmt.Fprintf(w, "active        %s\n", s.Default)
	for _, k := range slices.Sorted(mapKeys(s.Default.Missing)) {
		fmt.Fprintf(w, "missing       %s: %s\n", k, s.Default.Missing[k])
	}
	for _, c := range s.Checks {
		fmt.Fprintf(w, "check         %s: %s\n", c.Check, c.Result)
	}
}

func platformName() string { return runtime.GOOS + "/" + runtime.GOARCH }

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
