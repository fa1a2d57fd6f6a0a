package sandbox

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// machoCommand is one load command: a fixed part and a string padded to 8
// bytes, at the offset the fixed part gives.
func machoCommand(cmd uint32, fixed []uint32, s string) []byte {
	str := append([]byte(s), 0)
	for len(str)%8 != 0 {
		str = append(str, 0)
	}
	head := 8 + 4*len(fixed)
	b := binary.LittleEndian.AppendUint32(nil, cmd)
	b = binary.LittleEndian.AppendUint32(b, uint32(head+len(str)))
	for _, v := range fixed {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return append(b, str...)
}

// writeMachO writes a 64-bit arm64 Mach-O executable holding only load
// commands: a dylib for each of libs, an LC_RPATH for each of rpaths.
func writeMachO(t *testing.T, path string, libs, rpaths []string) {
	t.Helper()
	var cmds []byte
	n := 0
	for _, l := range libs {
		cmds = append(cmds, machoCommand(0xc, []uint32{24, 2, 0x10000, 0x10000}, l)...) // LC_LOAD_DYLIB: name offset, timestamp, versions
		n++
	}
	for _, r := range rpaths {
		cmds = append(cmds, machoCommand(0x8000001c, []uint32{12}, r)...) // LC_RPATH: path offset
		n++
	}
	var h []byte
	for _, v := range []uint32{0xfeedfacf, 0x0100000c, 0, 2, uint32(n), uint32(len(cmds)), 0, 0} {
		h = binary.LittleEndian.AppendUint32(h, v)
	}
	if err := os.WriteFile(path, append(h, cmds...), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestMachoLibraryDirs: a macOS interpreter's libraries outside the
// system's are granted by directory, @rpath, @executable_path and
// @loader_path resolved; the system's are not repeated; an ELF or a
// script gives nothing.
func TestMachoLibraryDirs(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "node")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	writeMachO(t, bin, []string{
		"/opt/homebrew/opt/icu4c/lib/libicuuc.74.dylib",
		"/usr/lib/libSystem.B.dylib",
		"/System/Library/Frameworks/CoreFoundation.framework/Versions/A/CoreFoundation",
		"@rpath/libnode.127.dylib",
		"@executable_path/../Frameworks/Python.framework/Versions/3.12/Python",
	}, []string{"@loader_path/../lib", "/opt/homebrew/opt/libuv/lib"})
	got := machoLibraryDirs(bin)
	want := []string{
		"/opt/homebrew/opt/icu4c/lib",
		filepath.Join(dir, "lib"),
		"/opt/homebrew/opt/libuv/lib",
		filepath.Join(dir, "Frameworks/Python.framework/Versions/3.12"),
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("machoLibraryDirs = %q\nwant %q", got, want)
	}
	self, _ := os.Executable() // an ELF here
	if d := machoLibraryDirs(self); d != nil {
		t.Errorf("an ELF file: %q, want nil", d)
	}
}
