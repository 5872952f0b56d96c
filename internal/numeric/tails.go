package numeric

import (
	"math"

	"gonum.org/v1/gonum/mathext"
)

// NormalUpper is P(Z > z) for a standard normal Z.
func NormalUpper(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }

// StudentTUpper is P(T > t) for Student's t with df degrees of freedom, from the regularised
// incomplete beta function: P(|T| > |t|) = I_{df/(df+t²)}(df/2, 1/2), halved for one tail.
// The tail is computed directly rather than as 1 − CDF, so p-values far below 1e-16 keep
// their digits. Above 10⁶ degrees of freedom the normal tail is used (the two differ by
// less than 10⁻⁶ there, and the beta function's continued fraction converges slowly). NaN t
// or df ≤ 0 give 1 (no evidence).
func StudentTUpper(t, df float64) float64 {
	switch {
	case math.IsNaN(t) || !(df > 0):
		return 1
	case math.IsInf(t, 1):
		return 0
	case math.IsInf(t, -1):
		return 1
	case df > 1e6:
		return NormalUpper(t)
	}
	x := df / (df + t*t)
	p := 0.5 * mathext.RegIncBeta(df/2, 0.5, x)
	if t > 0 {
		return p
	}
	return 1 - p
}
