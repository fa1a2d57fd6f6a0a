package lane

import (
	"strconv"
	"strings"
)

// Env is the environment entry telling a plugin its lane is descriptor fd.
func Env(fd int) string { return EnvFD + "=" + strconv.Itoa(fd) }

// Index is the index in a command's ExtraFiles (fd 3 is index 0) of the
// lane its environment names, or -1 when it names none among files of
// them. A launcher that moves the lane's file to another descriptor
// replaces the entry (Env) in the environment the plugin gets.
func Index(env []string, files int) int {
	i := -1
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, EnvFD+"="); ok {
			i = -1
			if fd, err := strconv.Atoi(v); err == nil && fd >= 3 && fd-3 < files {
				i = fd - 3
			}
		}
	}
	return i
}
