package rundir_test

import (
	"testing"

	"github.com/plughost/plughost/internal/rundir"
)

// On unix BaseFor prefers $XDG_RUNTIME_DIR, then the system tmp, then
// /tmp, passing over a directory whose sockets' paths would be too long;
// on Windows, %LOCALAPPDATA%\plughost\run, else the user's Temp, however
// long (go-plugin uses TCP there).
func TestBaseFor(t *testing.T) {
	long := "/var/folders/zz/zyxvpxvq6csfxvn_n0000000000000/T"
	winTemp := `C:\Users\a-rather-long-user-name-for-a-test\AppData\Local\Temp`
	for name, tc := range map[string]struct {
		goos      string
		env       map[string]string
		tmp, want string
	}{
		"runtime dir":               {"linux", map[string]string{"XDG_RUNTIME_DIR": "/run/user/1000"}, "/var/tmp", "/run/user/1000"},
		"no runtime dir":            {"linux", nil, "/var/tmp", "/var/tmp"},
		"long runtime dir":          {"linux", map[string]string{"XDG_RUNTIME_DIR": long}, "/var/tmp", "/var/tmp"},
		"long tmp (a macOS TMPDIR)": {"darwin", nil, long, "/tmp"},
		"windows local app data": {"windows", map[string]string{"LOCALAPPDATA": `C:\Users\ann\AppData\Local`, "XDG_RUNTIME_DIR": "/run/user/1000"},
			winTemp, `C:\Users\ann\AppData\Local\plughost\run`},
		"windows without local app data": {"windows", nil, winTemp, winTemp},
	} {
		t.Run(name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			if got := rundir.BaseFor(tc.goos, getenv, tc.tmp); got != tc.want {
				t.Errorf("BaseFor(%s) = %q, want %q", tc.goos, got, tc.want)
			}
		})
	}
}
