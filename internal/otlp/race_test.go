//go:build race

package otlp

// raceDetector reports whether the tests run under the race detector, which makes timings
// meaningless.
const raceDetector = true
