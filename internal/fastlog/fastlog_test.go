package fastlog

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Log10 gives math.Log10's bits on the latencies the histograms take (in
// ms, at least 1), powers of ten and their neighbours included.
func TestLog10(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	check := func(x float64) {
		if got, want := Log10(x), math.Log10(x); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("Log10(%v) = %v, math.Log10 gives %v", x, got, want)
		}
	}
	for e := 0; e <= 12; e++ {
		p := math.Pow(10, float64(e))
		check(p)
		check(math.Nextafter(p, 0))
		check(math.Nextafter(p, math.Inf(1)))
		for k := 1; k < 10; k++ {
			b := math.Round(math.Pow(10, float64(10*e+k)/10)*1000) / 1000 // a bucket edge
			check(b)
			check(math.Nextafter(b, 0))
		}
	}
	for range 1_000_000 {
		check(float64(1_000_000+r.Int64N(1<<40)) / 1e6) // a duration of at least 1 ms, in ms
		check(1 + r.ExpFloat64()*100)
	}
}

// logSum gives math.Log's bits on every value the E step takes (sums of
// one to maxComponents exponentials, the largest 1) and beyond.
func TestLog(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	check := func(x float64) {
		if got, want := Log(x), math.Log(x); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("Log(%v) = %v (%#x), math.Log gives %v (%#x)", x, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
	for _, x := range []float64{1, math.Nextafter(1, 2), 2, 3, 4, math.Sqrt2, 2 * math.Sqrt2,
		7.07106781186547524401e-01 * 2, 7.07106781186547524401e-01 * 4, math.Nextafter(math.Sqrt2, 0), math.Nextafter(math.Sqrt2, 2),
		0, -1, 0.5, math.Inf(1), math.NaN(), math.MaxFloat64, math.SmallestNonzeroFloat64, 1e300, 1e-300} {
		check(x)
	}
	for range 2_000_000 {
		check(1 + 3*r.Float64())
		check(1 + r.ExpFloat64())
		check(1 + math.Ldexp(r.Float64(), -r.IntN(60)))
	}
}
