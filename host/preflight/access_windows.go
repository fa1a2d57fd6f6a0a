package preflight

import "os"

// canWrite reports why this process may not write the file at path: it
// opens it for appending, which neither creates nor truncates it (Windows
// has no access(2); its ACLs decide at open).
func canWrite(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// canCreateIn reports nothing on Windows: knowing whether a file may be
// created in dir without creating one would mean reading its ACL; serve's
// open names the cause when it cannot.
func canCreateIn(string) error { return nil }
