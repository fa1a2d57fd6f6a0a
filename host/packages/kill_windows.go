package packages

// killGroup does nothing on Windows, which has no process groups to kill:
// the step's job object, closed by Launch.Exited, kills its children (see
// package sandbox).
func killGroup(int) {}
