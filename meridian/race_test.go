//go:build race

package meridian

// raceEnabled shrinks the evaluation harness under the race detector (about 10× slower); the
// targets are still checked on every request it evaluates.
const raceEnabled = true
