//go:build race

package fsm

// raceDetector is true under go test -race, where the longest randomized
// tests run fewer seeds: the detector makes them about ten times slower,
// and the plain run covers every seed.
const raceDetector = true
