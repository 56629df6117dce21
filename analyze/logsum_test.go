package analyze

import (
	"math"
	"math/rand/v2"
	"testing"
)

// log10 gives math.Log10's bits on the latencies the histograms take (in
// ms, at least 1), powers of ten and their neighbours included.
func TestLog10(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	check := func(x float64) {
		if got, want := log10(x), math.Log10(x); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("log10(%v) = %v, math.Log10 gives %v", x, got, want)
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
