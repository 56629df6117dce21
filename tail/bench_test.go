package tail

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// tailSample is n ascending durations (ns) drawn from a lognormal (median
// 50 ms, σ 0.6); bimodal, from a fast mode (10 ms) and with weight 0.1 a
// slow one (120 ms), both σ 0.4; or pareto, 5 ms plus a Pareto tail (scale
// 10 ms, α 2.5), the costliest to fit (it takes three or four components).
func tailSample(n int, kind string, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 17))
	xs := make([]float64, n)
	for i := range xs {
		switch {
		case kind == "lognormal":
			xs[i] = 50e6 * math.Exp(0.6*r.NormFloat64())
		case kind == "pareto":
			xs[i] = 5e6 + 10e6*math.Pow(1-r.Float64(), -1/2.5)
		case r.Float64() < 0.1:
			xs[i] = 120e6 * math.Exp(0.4*r.NormFloat64())
		default:
			xs[i] = 10e6 * math.Exp(0.4*r.NormFloat64())
		}
	}
	slices.Sort(xs)
	return xs
}

// BenchmarkFit is one hop's tail fit, the quantile the recommendation
// reads from it and the exceedance the risk report reads.
func BenchmarkFit(b *testing.B) {
	for _, kind := range []string{"lognormal", "bimodal", "pareto"} {
		for _, n := range []int{100, 300, 1000} {
			xs := tailSample(n, kind, 1)
			b.Run(fmt.Sprintf("%s/%d", kind, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					m := Fit(xs)
					q := m.Quantile(1e-4)
					m.Exceed(q)
				}
			})
		}
	}
}
