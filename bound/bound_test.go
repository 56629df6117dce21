package bound

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// BetaUpper at m = 0 is 1 − (1 − level)^(1/n) (the rule of three: about
// 3/n at 95%); at m > 0 it is the level-quantile of Beta(m+1, n−m), which
// a simulation of uniform order statistics checks; and it grows with m.
func TestBetaUpper(t *testing.T) {
	for _, n := range []int{1, 10, 300, 3000, 30000} {
		want := 1 - math.Pow(0.05, 1/float64(n))
		if got := BetaUpper(0.95, 0, n); math.Abs(got-want) > 1e-12 {
			t.Errorf("BetaUpper(0.95, 0, %d) = %g, want %g", n, got, want)
		}
	}
	if got := BetaUpper(0.95, 0, 2995); math.Abs(got-0.001) > 1e-5 {
		t.Errorf("rule of three: BetaUpper(0.95, 0, 2995) = %g, want ~0.001", got)
	}
	for _, c := range []struct{ m, n int }{{0, 0}, {5, 5}, {7, 3}} {
		if got := BetaUpper(0.95, c.m, c.n); got != 1 {
			t.Errorf("BetaUpper(0.95, %d, %d) = %g, want 1", c.m, c.n, got)
		}
	}
	// The (m+1)-th largest of n uniforms is Beta(n−m, m+1); its
	// complement, the chance to exceed it, is Beta(m+1, n−m): the bound
	// must be above it in 95% of draws.
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ m, n int }{{1, 50}, {3, 200}, {10, 500}} {
		u := BetaUpper(0.95, c.m, c.n)
		below := 0
		const draws = 4000
		xs := make([]float64, c.n)
		for range draws {
			for i := range xs {
				xs[i] = r.Float64()
			}
			slices.Sort(xs)
			if 1-xs[c.n-1-c.m] <= u {
				below++
			}
		}
		if share := float64(below) / draws; share < 0.935 || share > 0.965 {
			t.Errorf("m=%d n=%d: the bound %g covered %.3f of draws, want 0.95", c.m, c.n, u, share)
		}
		if BetaUpper(0.95, c.m+1, c.n) <= u {
			t.Errorf("m=%d n=%d: BetaUpper does not grow with m", c.m, c.n)
		}
	}
}

// NeedSuccesses is the least n whose largest value certifies s.
func TestNeedSuccesses(t *testing.T) {
	for _, s := range []float64{0.01, 0.001, 1e-4, 9e-5} {
		n := NeedSuccesses(s, 0.95)
		if BetaUpper(0.95, 0, n) > s || BetaUpper(0.95, 0, n-1) <= s {
			t.Errorf("NeedSuccesses(%g) = %d: BetaUpper there %g, one fewer %g", s, n, BetaUpper(0.95, 0, n), BetaUpper(0.95, 0, n-1))
		}
	}
	if NeedSuccesses(0, 0.95) != 0 || NeedSuccesses(1, 0.95) != 0 {
		t.Error("NeedSuccesses of 0 or 1 is 0")
	}
}

// CertifyingRank is the largest rank within share, never past floorQ.
func TestCertifyingRank(t *testing.T) {
	for _, c := range []struct {
		n             int
		share, floorQ float64
		ok            bool
	}{{100, 0.001, 0.99, false}, {3000, 0.001, 0.99, true}, {100000, 0.001, 0.99, true}, {100000, 0.001, 0.9999, true}} {
		m, ok := CertifyingRank(c.n, c.share, c.floorQ, 0.95)
		if ok != c.ok {
			t.Fatalf("CertifyingRank(%d, %g): ok %v, want %v", c.n, c.share, ok, c.ok)
		}
		if !ok {
			continue
		}
		if BetaUpper(0.95, m, c.n) > c.share {
			t.Errorf("n=%d: rank %d does not certify %g", c.n, m, c.share)
		}
		if lim := int(math.Floor(float64(c.n)*(1-c.floorQ) + 1e-9)); m > lim || m < lim && BetaUpper(0.95, m+1, c.n) <= c.share {
			t.Errorf("n=%d floor %g: rank %d is not the largest within the share and the floor (%d)", c.n, c.floorQ, m, lim)
		}
	}
}

// BinomialTail against the sum of the terms, and its edges.
func TestBinomialTail(t *testing.T) {
	for _, c := range []struct {
		k, n int
		p    float64
	}{{0, 10, 0.3}, {3, 10, 0.3}, {10, 10, 0.3}, {11, 10, 0.3}, {5, 200, 0.01}, {1, 1, 0.5}} {
		want := 0.0
		for x := c.k; x <= c.n; x++ {
			if x < 0 {
				continue
			}
			lc, _ := math.Lgamma(float64(c.n + 1))
			a, _ := math.Lgamma(float64(x + 1))
			b, _ := math.Lgamma(float64(c.n - x + 1))
			want += math.Exp(lc - a - b + float64(x)*math.Log(c.p) + float64(c.n-x)*math.Log1p(-c.p))
		}
		if c.k <= 0 {
			want = 1
		}
		if got := BinomialTail(c.k, c.n, c.p); math.Abs(got-min(1, want)) > 1e-9*max(want, 1e-300) && math.Abs(got-want) > 1e-15 {
			t.Errorf("BinomialTail(%d, %d, %g) = %g, want %g", c.k, c.n, c.p, got, want)
		}
	}
}

// LowerQuantile is below the true quantile in about 95% of samples.
func TestLowerQuantile(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, c := range []struct {
		n int
		q float64
	}{{100, 0.9}, {1000, 0.99}, {40, 0.5}} {
		below := 0
		const draws = 3000
		xs := make([]int64, c.n)
		for range draws {
			for i := range xs {
				xs[i] = r.Int64N(1_000_000)
			}
			slices.Sort(xs)
			if float64(LowerQuantile(xs, c.q)) <= c.q*1_000_000 {
				below++
			}
		}
		if share := float64(below) / draws; share < 0.93 {
			t.Errorf("n=%d q=%g: below the true quantile in %.3f of samples, want at least ~0.95", c.n, c.q, share)
		}
	}
}

// binomCDF leaves out of the sum the terms whose exponent is below
// expZero; it must give, to the bit, the sum of every term — over sums of
// every size down to the denormal range, where the smallest terms count —
// which holds only while math.Exp is +0 below expZero.
func TestBinomCDFSkipsNothing(t *testing.T) {
	for x := -2000.0; x < expZero; x += 0.001 {
		if e := math.Exp(x); e != 0 {
			t.Fatalf("math.Exp(%g) = %g, want 0 below expZero", x, e)
		}
	}
	every := func(coef []float64, n int, x float64) float64 {
		lx, l1x := math.Log(x), math.Log1p(-x)
		s := 0.0
		for j, c := range coef {
			s += math.Exp(c + float64(j)*lx + float64(n-j)*l1x)
		}
		return min(s, 1)
	}
	tiny := 0
	for _, c := range []struct{ m, n int }{{1, 10}, {3, 2000}, {40, 1000}, {700, 100_000}, {9000, 1_000_000}, {30000, 400_000}} {
		coef := binomLogCoefs(c.m, c.n)
		mode := float64(c.m) / float64(c.n)
		for f := 1e-6; mode*f < 1; f *= 1.07 {
			x := mode * f
			got, want := binomCDF(coef, c.n, x), every(coef, c.n, x)
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("binomCDF(m=%d, n=%d, x=%g) = %v, every term: %v", c.m, c.n, x, got, want)
			}
			if want > 0 && want < 1e-300 {
				tiny++
			}
		}
	}
	if tiny == 0 {
		t.Error("no sum in the range where the smallest terms count")
	}
}

// BetaUpper stops bisecting once lo and hi are adjacent floats; it must
// give, to the bit, what the 80 steps give — over levels, ranks and
// counts whose answers lie from 1e-7 to near 1.
func TestBetaUpperStopsAtAdjacent(t *testing.T) {
	steps80 := func(level float64, m, n int) float64 {
		coef := binomLogCoefs(m, n)
		lo, hi := 0.0, 1.0
		for i := 0; i < 80; i++ {
			x := (lo + hi) / 2
			if 1-binomCDF(coef, n, x) < level {
				lo = x
			} else {
				hi = x
			}
		}
		return hi
	}
	for _, level := range []float64{0.01, 0.05, 0.5, 0.9} {
		for _, c := range []struct{ m, n int }{{1, 2}, {1, 10}, {3, 2000}, {5, 400_000}, {40, 1000}, {700, 100_000}, {999, 1000}, {2000, 2100}} {
			if got, want := BetaUpper(level, c.m, c.n), steps80(level, c.m, c.n); math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("BetaUpper(%g, %d, %d) = %v, 80 steps give %v", level, c.m, c.n, got, want)
			}
		}
	}
}
