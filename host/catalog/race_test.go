//go:build race

package catalog

// raceEnabled: the race detector slows the code 5 to 10 times, so timing
// bounds are not checked under it.
const raceEnabled = true
