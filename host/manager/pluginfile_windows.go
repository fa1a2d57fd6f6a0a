package manager

import "os"

// noFollow is nothing on Windows, whose open has no such flag: the link
// was resolved just before (filepath.EvalSymlinks), so only a link swapped
// in between is followed.
const noFollow = 0

// exposure reports nothing on Windows: who may change a file there is its
// ACL, which the host does not read (a plugin directory under the user's
// profile admits only the user, SYSTEM and Administrators by default).
func exposure(string, os.FileInfo) string { return "" }
