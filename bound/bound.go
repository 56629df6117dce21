// Package bound is the distribution-free bounds tailscope certifies
// timeouts with: from how many of n values exceeded a threshold, an upper
// bound on the chance that a new one does (the order statistic's Beta
// law), how many values a share needs, the rank that certifies it, and
// the binomial tail and quantile bound the timeline's tests read. No
// assumption on the distribution, and no tailscope type.
package bound

import (
	"math"
	"sync"
	"sync/atomic"
)

// BetaUpper is the level-quantile of Beta(m+1, n−m): an upper bound on
// the probability that a new value exceeds a threshold that m of n values
// exceeded (1 when m ≥ n, or n is 0).
func BetaUpper(level float64, m, n int) float64 {
	if n <= 0 || m >= n {
		return 1
	}
	if m < 0 {
		m = 0
	}
	if m == 0 {
		return 1 - math.Pow(1-level, 1/float64(n))
	}
	key := betaKey{level, m, n}
	if v, ok := betaMemo.Load(key); ok {
		return v.(float64)
	}
	v := betaUpper(level, m, n)
	if betaMemoN.Add(1) <= betaMemoMax {
		betaMemo.Store(key, v)
	}
	return v
}

// BetaUpper's answers are remembered (at most betaMemoMax of them): a
// report asks for the same rank of the same count again — the
// recommendation, the drift check and the prediction each certify a hop's
// timeout — and each answer is some sixty binomial sums of m+1 terms
// (a few percent of a 10M-span run's CPU).
type betaKey struct {
	level float64
	m, n  int
}

const betaMemoMax = 1 << 14

var (
	betaMemo  sync.Map
	betaMemoN atomic.Int64
)

// betaUpper is BetaUpper for 0 < m < n, computed.
func betaUpper(level float64, m, n int) float64 {
	// P(Beta(m+1, n−m) ≤ x) = P(Binomial(n, x) ≥ m+1); bisect x. The
	// binomial coefficients do not depend on x: computed once, not at
	// each of the 80 steps (two log-gammas a term: most of the cost).
	coef := binomLogCoefs(m, n)
	lo, hi := 0.0, 1.0
	for i := 0; i < 80; i++ {
		x := (lo + hi) / 2
		if x == lo || x == hi {
			// lo and hi are adjacent floats (after about 60 steps):
			// every later step would test lo or hi again and leave them.
			break
		}
		if 1-binomCDF(coef, n, x) < level {
			lo = x
		} else {
			hi = x
		}
	}
	return hi
}

// binomLogCoefs is log C(n, j) for j = 0..m.
func binomLogCoefs(m, n int) []float64 {
	ln, _ := math.Lgamma(float64(n) + 1)
	coef := make([]float64, m+1)
	for j := range coef {
		a, _ := math.Lgamma(float64(j) + 1)
		b, _ := math.Lgamma(float64(n-j) + 1)
		coef[j] = ln - a - b
	}
	return coef
}

// binomCDF is P(Binomial(n, x) ≤ m), summed in log space from the
// coefficients binomLogCoefs(m, n).
func binomCDF(coef []float64, n int, x float64) float64 {
	m := len(coef) - 1
	if x <= 0 {
		return 1
	}
	if x >= 1 {
		if m >= n {
			return 1
		}
		return 0
	}
	lx, l1x := math.Log(x), math.Log1p(-x)
	s := 0.0
	for j, c := range coef {
		// Far from the mode most terms are below the smallest float:
		// math.Exp gives +0 for them, and s + 0 is s, so they are not
		// taken to Exp, most of the cost. Only the terms within about
		// 38 standard deviations of the mode (exp(-38²/2) underflows)
		// are not +0: with m in the thousands, a minority of the m+1.
		// The sum is the same to the bit.
		if e := c + float64(j)*lx + float64(n-j)*l1x; e >= expZero {
			s += math.Exp(e)
		}
	}
	return min(s, 1)
}

// expZero is a bound below which math.Exp is +0: its underflow is at
// -745.13 (math.Exp(-745.14) == 0, the smallest denormal is exp(-744.44)).
const expZero = -746.0

// NeedSuccesses is how many values make a threshold above all of them
// bound a new value's chance of exceeding it by s at level (BetaUpper with
// m = 0): n with 1 − (1 − level)^(1/n) ≤ s.
func NeedSuccesses(s, level float64) int {
	if s <= 0 || s >= 1 {
		return 0
	}
	return int(math.Ceil(math.Log(1-level) / math.Log1p(-s)))
}

// CertifyingRank returns the largest m such that a threshold at or above
// the (n−m)-th smallest of n values bounds a new value's chance of
// exceeding it by share at level (BetaUpper), with m ≤ n × (1 − floorQ) so
// that the threshold is never below the floorQ-quantile; ok is false when
// even the largest value cannot certify share.
func CertifyingRank(n int, share, floorQ, level float64) (m int, ok bool) {
	if n <= 0 || BetaUpper(level, 0, n) > share {
		return 0, false
	}
	hi := int(math.Floor(float64(n)*(1-floorQ) + 1e-9))
	lo := 0
	for lo < hi { // BetaUpper grows with m: the last m within share
		mid := (lo + hi + 1) / 2
		if BetaUpper(level, mid, n) <= share {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo, true
}

// BinomialTail is P(X ≥ k) for X ~ Binomial(n, p), summed in log space from
// k up until the terms no longer matter.
func BinomialTail(k, n int, p float64) float64 {
	if k <= 0 {
		return 1
	}
	if k > n {
		return 0
	}
	lp, lq := math.Log(p), math.Log1p(-p)
	lgn, _ := math.Lgamma(float64(n + 1))
	var s float64
	for x := k; x <= n; x++ {
		a, _ := math.Lgamma(float64(x + 1))
		b, _ := math.Lgamma(float64(n - x + 1))
		t := math.Exp(lgn - a - b + float64(x)*lp + float64(n-x)*lq)
		s += t
		if x > k && t < s*1e-12 {
			break
		}
	}
	return min(1, s)
}

// LowerQuantile is a 95% lower confidence bound of the q-quantile of
// ascending xs: the k-th smallest, k the count of values below the true
// quantile (Binomial(n, q)) exceeds with 95% probability (normal
// approximation, 1.645 standard deviations below n·q).
func LowerQuantile(xs []int64, q float64) int64 {
	n := float64(len(xs))
	k := int(math.Floor(n*q - 1.645*math.Sqrt(n*q*(1-q))))
	return xs[min(max(k, 1), len(xs))-1]
}
