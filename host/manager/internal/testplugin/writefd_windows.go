package main

import "errors"

// writeFD fails: there is no frame lane on Windows.
func writeFD(int, []byte) error { return errors.New("no frame lane on Windows") }
