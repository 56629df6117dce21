package fastlog

import "math"

// Log is math.Log(x) for x ≥ 1 (the sums of the E step, 1 ≤ x ≤
// maxComponents; a latency in ms at least 1): the steps math.Log takes on
// amd64 (math/log_amd64.s, the algorithm of its Go log), each operation
// as it does them and rounded as it rounds them (the conversions keep the
// compiler from fusing a product and a sum where it may), so the same
// bits, without the call and the tests for values x ≥ 1 never is; any
// other x goes to math.Log. A call per bin and iteration, it was a third
// of EM's time (TestLogSum). Elsewhere math.Log is not this assembly, and
// Log is math.Log (fastlog_other.go).
func Log(x float64) float64 {
	if !(x >= 1 && x < math.MaxFloat64) {
		return math.Log(x)
	}
	const (
		hSqrt2 = 7.07106781186547524401e-01
		ln2Hi  = 6.93147180369123816490e-01
		ln2Lo  = 1.90821492927058770002e-10
		l1     = 6.666666666666735130e-01
		l2     = 3.999999999940941908e-01
		l3     = 2.857142874366239149e-01
		l4     = 2.222219843214978396e-01
		l5     = 1.818357216161805012e-01
		l6     = 1.531383769920937332e-01
		l7     = 1.479819860511658591e-01
	)
	b := math.Float64bits(x)
	f1 := math.Float64frombits(b&(1<<52-1) | 0x3FE0000000000000) // x = f1 × 2^k, f1 in [0.5, 1)
	k := float64(int((b>>52)&0x7FF) - 0x3FE)
	if !(hSqrt2 < f1) { // the assembly's compare: "not less than"
		k--
		f1 *= 2
	}
	f := f1 - 1
	s := f / (2 + f)
	s2 := float64(s * s)
	s4 := float64(s2 * s2)
	t1 := float64(s2 * float64(l1+float64(s4*float64(l3+float64(s4*float64(l5+float64(s4*l7)))))))
	t2 := float64(s4 * float64(l2+float64(s4*float64(l4+float64(s4*l6)))))
	r := t1 + t2
	hfsq := float64(float64(0.5*f) * f)
	return float64(k*ln2Hi) - ((hfsq - (float64(s*(hfsq+r)) + float64(k*ln2Lo))) - f)
}

// Log10 is math.Log10(x) for x ≥ 1: on amd64 math.Log10 is math.Log(x)
// × (1/Ln10) (math/Log10.go), so Log gives its bits without the calls.
func Log10(x float64) float64 { return Log(x) * (1 / math.Ln10) }
