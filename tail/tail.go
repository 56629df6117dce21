// Package tail models a hop's time to success beyond its data: where a hop
// has too few successes for the order statistic a request-level target
// asks for (analyze/risk.go), its timeout comes from a fitted tail instead
// of "the slowest success × margin", whose out-of-sample risk is about
// 1/(n+1) per call whatever the margin. It is mathematics over durations
// (float64 ns): no span, hop or policy type enters it.
//
// The model, and why (validated on generated samples in tail_test.go and
// recommend/oos_test.go; docs/DESIGN.md §5):
//
//   - On log durations, a mixture of one to four normals fitted by EM, the
//     number of components chosen by BIC. Latencies are close to lognormal,
//     and a hop that sometimes takes a slow path (a cache miss, a cold
//     start) is two lognormals: the mixture follows the slow mode's own tail
//     instead of drawing a line across the gap between the modes, which is
//     what a single tail fit over the top decile does (it put timeouts 10×
//     too high on generated 90/10 hops).
//   - A mixture fitted to the whole sample is led by the body: where the
//     top of a hop decays exponentially on a linear scale (a queue, delays
//     in fixed steps; seen on real exports), it bends down too early and
//     puts the far quantile too low. So the quantile is never below an
//     exponential tail fitted to the excesses over the top tenth (peaks
//     over a threshold with shape 0). On lognormal hops that tail is the
//     lighter one and changes nothing.
//   - A mixture of lognormals cannot follow a power-law tail: on Pareto
//     samples it put the quantile 20× too low in probability. So the fit is
//     checked against the sample's own upper tail: the Hill estimate (mean
//     log-excess over the top tenth) against what one lognormal fitted to
//     the whole sample predicts over the same threshold (the mixture's
//     prediction when its top component is a slow mode set apart). When
//     the sample's tail is heavier by more than 1.5 standard errors, the
//     quantile is the larger of the mixture's and the Weissman (Pareto
//     tail) extrapolation, aimed at half the asked probability to pay for
//     the Hill estimate's noise.
//
// Exponential and generalized-Pareto peaks-over-threshold fits were tried
// and rejected: an exponential tail on durations is too light for lognormal
// and Pareto hops (unsafe), a GPD on the top tenth of 300 successes was too
// noisy, and a Pareto tail alone is too heavy for lognormal hops (timeouts
// far above need).
//
// What it costs. A fit is one hop's share of the work after the read, so
// it must stay far below the read's cost per span. It used to take 2–4 ms
// of wall time on two cores for 100 successes and 40 ms (70 ms of CPU) for
// 1,000 — EM on every point from about ten starts run to the end, on every
// core, then a 4,000-step integral, and an Exceed that bisected Quantile —
// and EM was 96% of the 41 s of CPU `tailscope analyze` took on a million
// spans over 1,000 hops. Now, BenchmarkFit (a fit with its Quantile
// and Exceed; before in brackets, on one core):
//
//	             100 points        300 points       1,000 points
//	lognormal    28 µs (7.3 ms)    37 µs (22 ms)     45 µs (72 ms)
//	bimodal      75 µs (3.2 ms)   110 µs (19 ms)    150 µs (67 ms)
//	Pareto      200 µs (6.2 ms)   240 µs (17 ms)    370 µs (52 ms)
//
// and that analysis takes 1 s of CPU (the fits 0.2 s of it; with 32 bins, below,
// a fit costs a half to a third of these). What does it:
//
//   - EM runs on the sample in tailBins bins of equal width in log
//     duration (count, mean and spread of each), not on the points: a bin
//     costs what a point did, and the M step keeps each bin's own spread.
//   - The number of components grows until a number of them does no
//     better than fewer (mixture), and EM gives up on a fit that can no
//     longer count (emGiveUp): together a quarter of the iterations of
//     trying every start to the end, and no higher losses on the
//     validation samples.
//   - The mixture's mean log-excess is in closed form (meanExcess), and
//     Exceed reads the parts' survivals at t instead of bisecting Quantile.
//   - A fit runs on the caller's goroutine: the recommendation already fits
//     its hops in parallel, and a fit is now too short to share.
//   - EM's E step runs in passes over the bins (the exponents, their
//     exponentials, the logarithms of their sums, then the sums the M step
//     takes), each value computed as before and every sum in bin order, so
//     the fit is the same to the bit; the exponentials and logarithms of a
//     pass do not wait on one another, and the logarithm is math.Log's
//     own steps without the call (logSum). On 100 samples of 880 points
//     (a third each lognormal, bimodal and Pareto), CPU time per fit went
//     from about 200 µs to 112 µs.
//
// On 2,160 generated samples (tail_test.go's families at 100, 300 and
// 1,000 points, 40 seeds each), 76 of the 4,320 quantiles at 1.25e-4 and
// 1e-3 moved by more than 5% against the old fit, 65 of them on Pareto
// samples, whose mean loss (300 and 1,000 points) went from 1.50 to 1.47
// times the asked probability at 1.25e-4 and from 0.84 to 0.82 at 1e-3;
// the other families' losses are the same to 0.03.
package tail

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/tailscope/tailscope/internal/fastlog"
)

// maxTailPoints bounds the points the tail model is fitted to: above it the
// model reads evenly spaced quantiles of the hop's time to success (the
// digest's own), which keeps EM's cost fixed on big hops.
const maxTailPoints = 1000

// minTopTail is the fewest values the exponential and Pareto tails are
// fitted to.
const minTopTail = 10

// heavySlack is how many standard errors the Hill estimate may exceed the
// mixture's mean log-excess before the tail is called heavier than it.
const heavySlack = 1.5

// Model is a fitted upper tail of a hop's time to success.
type Model struct {
	// Kind names the model in the basis ("lognormal", "two-lognormal
	// mixture", with "+ Pareto tail" when the sample's tail is heavier).
	Kind string
	// mix is the mixture fitted to log durations.
	mix    normals
	lo, hi float64 // log range searched for quantiles
	// Hill/Weissman tail, used when heavy.
	heavy    bool
	u, gamma float64 // threshold (ns) and Hill estimate
	k, n     int
	// Exponential tail over the top k: threshold and mean excess (ns).
	eu, beta float64
}

// Fit fits the model to ascending positive durations in ns (package
// recommend fits hops with at least its MinTailFit successes). It never
// fails: degenerate samples (all equal) give a
// model whose quantiles are that value.
func Fit(xs []float64) Model {
	n := len(xs)
	y := make([]float64, n)
	for i, x := range xs {
		y[i] = fastlog.Log(max(x, 1e3)) // 1 µs floor: a log of 0 is no duration (math.Log: x ≥ 1)
	}
	m := Model{n: n, lo: y[0] - 60, hi: y[n-1] + 60}
	mix, one := mixture(y)
	m.mix = mix
	m.Kind = mix.name()
	upper := mix.upper()
	// The tails are fitted over the top tenth, but never across the gap
	// below a slow mode: with two components, only over the values above
	// the upper one's median (a threshold in the fast mode would measure
	// the gap, not the tail, and put the quantile 10× too high).
	m.k = max(minTopTail, n/10)
	above := n - sort.SearchFloat64s(y, upper)
	m.k = min(m.k, above)
	if m.k < minTopTail || m.k >= n {
		m.k = 0
		return m
	}
	u := y[n-m.k-1]
	m.eu = xs[n-m.k-1]
	for _, x := range xs[n-m.k:] {
		m.beta += x - m.eu
	}
	m.beta /= float64(m.k)
	var g float64
	for _, v := range y[n-m.k:] {
		g += v - u
	}
	g /= float64(m.k)
	// The mixture's mean log-excess over u: ∫ S(t) dt / S(u) over t > u,
	// in closed form (meanExcess).
	// Against one lognormal fitted to the whole sample, not against a
	// mixture of overlapping components: such a mixture of four can bend to follow a power law over the
	// data and then fall away beyond it, hiding the very tail the test is
	// for (measured: Pareto hops lost 20× their share).
	// A slow mode set apart is the mixture's own business: there the top
	// tenth lies in that mode, and the mixture is the reference.
	body := mix
	if math.IsInf(upper, -1) {
		body = one
	}
	gm := body.meanExcess(u)
	if g > gm*(1+heavySlack/math.Sqrt(float64(m.k))) && g > 0 {
		m.heavy, m.u, m.gamma = true, math.Exp(u), g
	}
	return m
}

// Quantile is the duration (ns) a new success exceeds with probability p.
func (m Model) Quantile(p float64) float64 {
	v, _ := m.QuantileBy(p)
	return v
}

// Duration is Quantile as a time.Duration, held below 2^62 ns (146
// years). A heavy tail's quantile far past the data can exceed what an
// int64 of nanoseconds holds, and converting such a float is not defined
// in Go: on amd64 it came out as the most negative duration, which made
// an extrapolated timeout fall back to its floor instead of its cap.
func (m Model) Duration(p float64) time.Duration {
	const most = float64(1 << 62)
	q := m.Quantile(p)
	if !(q < most) { // NaN too
		return time.Duration(1 << 62)
	}
	return time.Duration(q)
}

// QuantileBy is Quantile and the part of the model that set it.
func (m Model) QuantileBy(p float64) (float64, string) {
	lo, hi := m.lo, m.hi
	for i := 0; i < 200 && hi-lo > 1e-9; i++ {
		mid := (lo + hi) / 2
		if m.mix.surv(mid) > p {
			lo = mid
		} else {
			hi = mid
		}
	}
	q, by := math.Exp(hi), m.Kind
	if m.k > 0 && m.beta > 0 {
		if e := m.eu + m.beta*math.Log(float64(m.k)/(float64(m.n)*p)); e > q {
			q, by = e, "an exponential tail over the top tenth"
		}
	}
	if m.heavy {
		if w := m.u * math.Pow(float64(m.k)/(float64(m.n)*p/2), m.gamma); w > q {
			q, by = w, "a Pareto tail over the top tenth"
		}
	}
	return q, by
}

// Exceed is the model's probability that a new success takes longer than
// t ns: the inverse of Quantile. Quantile is the largest of three
// decreasing functions of p (the mixture's, the exponential tail's and
// the Pareto tail's quantile), so Quantile(p) > t exactly when p is below
// one of their survivals at t, and Exceed is the largest of those, each
// in closed form (within [1e-15, 1], the range the bisection it replaces
// searched).
func (m Model) Exceed(t float64) float64 {
	p := 0.0
	if t > 0 {
		p = m.mix.surv(math.Log(t))
	} else {
		p = 1
	}
	kn := float64(m.k) / float64(m.n)
	if m.k > 0 && m.beta > 0 {
		p = max(p, kn*math.Exp(-(t-m.eu)/m.beta))
	}
	if m.heavy && t > 0 {
		p = max(p, 2*kn*math.Pow(t/m.u, -1/m.gamma))
	}
	return min(max(p, 1e-15), 1)
}

// mixture fits one to four normals to y (ascending log durations) by EM
// and returns the one BIC prefers, and the one normal fitted to the whole
// sample. The fits run on the sample binned (binLogs). For each number of
// components k, fits start at evenly spread quantiles, split at the widest
// gaps of the sample (where separated modes show), and with the top k−2
// components at the gaps and the body split in two: a slow mode of a few
// percent is found from the gap, a broad body from the quantiles. Starts
// that cut the sample alike are fitted once.
//
// A fit with more components is taken when its BIC beats the best so far
// by bicMargin, in this order (k, then the starts in the order above). The
// search stops at the first k none of whose fits beats, in BIC, the best
// fit with fewer components; and EM gives up on a fit once it can no
// longer reach the BIC that would make it count (emGiveUp). Measured on
// the validation samples (tail_test.go) against trying every start to
// the end: a quarter of the EM iterations; 37 of the 4,320 quantiles moved
// by more than 5%, 32 of them on Pareto samples (three or two components
// instead of four), whose mean loss at 1.25e-4 (300 and 1,000 points)
// went from 1.65 to 1.47 times the asked probability; the other families'
// losses the same to 0.02.
func mixture(y []float64) (best, one normals) {
	b := binLogs(y, tailBins)
	gaps := widestGaps(y)
	logn := math.Log(b.n)
	bic := func(f normals) float64 { return 2*f.ll - float64(3*len(f.w)-1)*logn }
	one = fitNormals(b, y, []int{0, len(y)}, math.Inf(-1))
	best = one
	bestBIC := bic(one)
	top := bestBIC // the best BIC with fewer components than k
	for k := 2; k <= maxComponents; k++ {
		var tried [][]int
		levelTop := math.Inf(-1)
		for _, cuts := range [][]int{quantileCuts(len(y), k), gapCuts(gaps, len(y), k), bodyGapCuts(gaps, len(y), k)} {
			if cuts == nil || slices.ContainsFunc(tried, func(c []int) bool { return slices.Equal(c, cuts) }) {
				continue
			}
			tried = append(tried, cuts)
			// The fit counts only if its BIC passes top (then k+1 is
			// tried) or, once one of k's fits did, the best by bicMargin
			// (then it is taken); top is never above the best + bicMargin.
			bar := top
			if levelTop > top {
				bar = bestBIC + bicMargin
			}
			f := fitNormals(b, y, cuts, (bar+float64(3*k-1)*logn)/2)
			if f.collapsed {
				continue
			}
			v := bic(f)
			if v > bestBIC+bicMargin {
				best, bestBIC = f, v
			}
			levelTop = max(levelTop, v)
		}
		if levelTop <= top {
			break
		}
		top = levelTop
	}
	return best, one
}

// tailBins is how many bins of equal width (in log duration, between the
// sample's extremes) EM runs on: a bin costs it what a point did. Within a
// bin every point is given the bin mean's responsibilities, which blurs
// where components overlap, and the blur enters the log-likelihoods BIC
// compares: 32 bins put about two in each σ of a mode of σ 0.3 in a
// sample with modes at 8 and 90 ms. It was 64 (four a σ): 32 fit the
// validation samples (tail_test.go) with the same losses to 0.03 (Pareto
// 0.82/1.58 times the asked probability against 0.83/1.61, the others
// equal), the real days' split replays (recommend/day_test.go) lose the
// same or fewer requests, and BenchmarkFit runs 1.6–1.8× faster on
// lognormal samples and 2.5–3.5× on bimodal and Pareto ones (EM also
// settles in fewer iterations on the coarser grid); on a million spans
// over 1,000 hops that was about 5% of the whole analysis' CPU. 128 bins
// fit no better at 1.3–1.6× the cost of 64.
const tailBins = 32

// emTol is the gain in log-likelihood per point below which EM has
// converged, and emMaxIter the most iterations it runs. The old 1e-7 and
// 300 gave the same fits (74 against 76 of the 4,320 validation quantiles
// more than 5% from the old fit's, the same losses) at about the same
// cost, once emGiveUp stops the fits that crawl; the cap bounds one that
// crawls and counts.
const (
	emTol     = 1e-5
	emMaxIter = 100
)

// emGiveUpAfter is how many iterations EM runs before emGiveUp may stop
// it (the first ones find the way, with gains that may grow), and
// emGiveUpSlack the log-likelihood it keeps in hand against its estimate
// of what a fit may still gain.
const (
	emGiveUpAfter = 5
	emGiveUpSlack = 2.0
)

// normals is a fitted mixture, components by ascending mean.
type normals struct {
	w, m, sd  []float64
	ll        float64
	collapsed bool // a component lost its weight (the fit has fewer), or EM gave up on it
}

// name is the mixture's name in the basis.
func (f normals) name() string {
	if c := len(f.w); c > 1 {
		return []string{"", "", "two", "three", "four"}[c] + "-lognormal mixture"
	}
	return "lognormal"
}

// upper is the mean of the mixture's top component when it is a slow
// mode set apart from the rest (its mean more than two standard
// deviations of each beyond the next one's), else −Inf: only such a mode
// has a gap below it for the top tails to stay out of; overlapping
// components are one broad tail, Pareto-like ones included.
func (f normals) upper() float64 {
	c := len(f.w)
	if c > 1 && f.m[c-1]-f.m[c-2] > 2*(f.sd[c-1]+f.sd[c-2]) {
		return f.m[c-1]
	}
	return math.Inf(-1)
}

// surv is P(Y > t) under the mixture.
func (f normals) surv(t float64) float64 {
	s := 0.0
	for i := range f.w {
		s += f.w[i] * normSurv((t-f.m[i])/f.sd[i])
	}
	return s
}

// meanExcess is the mixture's mean excess over u, E[Y − u | Y > u]:
// ∫_u^∞ S(t) dt / S(u), where for a normal part (m, σ) the integral is
// σ (φ(a) − a S(a)), a = (u − m)/σ. It replaces a 4,000-step midpoint
// rule over 20× the data's range above u (TestMeanExcessClosedForm). 0
// when S(u) is 0.
func (f normals) meanExcess(u float64) float64 {
	var num, den float64
	for i := range f.w {
		a := (u - f.m[i]) / f.sd[i]
		s := normSurv(a)
		num += f.w[i] * f.sd[i] * normUpperPartial(a, s)
		den += f.w[i] * s
	}
	if den <= 0 {
		return 0
	}
	return num / den
}

// normUpperPartial is ∫_a^∞ S(z) dz = φ(a) − a S(a) for the standard
// normal, s being S(a). Far in the upper tail the two terms nearly cancel,
// but both are exact to a few ulps (S from Erfc), so the difference keeps
// about a²·1e-16 of relative error until φ underflows (a ≈ 38), where
// the caller's S(u) is 0 as well.
func normUpperPartial(a, s float64) float64 {
	return max(normPDF(a)-a*s, 0)
}

func normPDF(z float64) float64 { return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) }

// bicMargin is how much better (in BIC) a mixture with more components
// must fit to be taken: 10 is "very strong" evidence on Kass and Raftery's
// scale. Plain BIC let a fourth component fit noise at the top of 300
// lognormal successes, and the narrower upper components put the far
// quantiles too low (median loss 0.26% against a 0.1% target on the
// generated chain, 0.10% with the margin).
const bicMargin = 10

// maxComponents is the most normals a mixture has: a broad body may take
// two, and up to two slow modes above it (a slow path, and a rarer
// slower one) each one more.
const maxComponents = 4

// binned is a sample of log durations in bins of equal width: each
// non-empty bin's count, mean and sum of squared deviations from that
// mean. EM on the bins costs a bin what it cost a point, and keeps the
// sample's spread: the M step adds each bin's own sum of squares.
type binned struct {
	c, y, q []float64
	n       float64
}

// binLogs bins ascending y into at most bins bins of equal width between
// its smallest and largest value.
func binLogs(y []float64, bins int) binned {
	n := len(y)
	b := binned{n: float64(n)}
	lo, w := y[0], (y[n-1]-y[0])/float64(bins)
	start := 0
	for start < n {
		// y is ascending: a bin is a run of it.
		end := n
		if w > 0 {
			i := min(int((y[start]-lo)/w), bins-1)
			if i < bins-1 {
				edge := lo + float64(i+1)*w
				end = start + sort.SearchFloat64s(y[start:], edge)
				end = max(end, start+1)
			}
		}
		var s float64
		for _, t := range y[start:end] {
			s += t
		}
		c := float64(end - start)
		mu := s / c
		var q float64
		for _, t := range y[start:end] {
			q += (t - mu) * (t - mu)
		}
		b.c, b.y, b.q = append(b.c, c), append(b.y, mu), append(b.q, q)
		start = end
	}
	return b
}

// gap is the space between y[at−1] and y[at].
type gap struct {
	at int
	w  float64
}

// maxGapCandidates is how many of the widest gaps gapCuts may need: it
// takes at most three, and each one taken rules out the four positions
// within 2 of it.
const maxGapCandidates = 12

// widestGaps is the widest gaps between neighbouring values of ascending
// y that leave at least 3 values on each side, widest first (the one
// further down first among equal ones).
func widestGaps(y []float64) []gap {
	n := len(y)
	top := make([]gap, 0, maxGapCandidates)
	for i := 3; i <= n-3; i++ {
		g := gap{i, y[i] - y[i-1]}
		if len(top) == maxGapCandidates && g.w <= top[len(top)-1].w {
			continue
		}
		j := len(top)
		if j < maxGapCandidates {
			top = append(top, g)
		} else {
			j--
		}
		for j > 0 && top[j-1].w < g.w {
			top[j] = top[j-1]
			j--
		}
		top[j] = g
	}
	return top
}

// bodyGapCuts starts the top k−2 components at the widest gaps and the
// body below them as two halves: a body that is not normal (uniform,
// skewed) then does not steal a component from a slow mode.
func bodyGapCuts(gaps []gap, n, k int) []int {
	if k < 3 {
		return nil
	}
	cuts := gapCuts(gaps, n, k-1)
	if cuts == nil || cuts[1] < 6 {
		return nil
	}
	return append([]int{0, cuts[1] / 2}, cuts[1:]...)
}

// quantileCuts starts k components on k equal slices of the sample.
func quantileCuts(n, k int) []int {
	cuts := make([]int, k+1)
	for i := range cuts {
		cuts[i] = n * i / k
	}
	return cuts
}

// gapCuts starts k components split at the k−1 widest gaps between
// neighbouring values (gaps, from widestGaps), each side keeping at least
// 3 values; nil when there is no such split.
func gapCuts(gaps []gap, n, k int) []int {
	cuts := []int{0, n}
	for _, g := range gaps {
		if len(cuts) == k+1 {
			break
		}
		ok := true
		for _, c := range cuts {
			if abs(g.at-c) < 3 {
				ok = false
			}
		}
		if ok {
			cuts = append(cuts, g.at)
		}
	}
	if len(cuts) != k+1 {
		return nil
	}
	sort.Ints(cuts)
	return cuts
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// fitNormals runs EM on the binned sample b from components started on
// the slices y[cuts[i]:cuts[i+1]] of the sample itself. It stops when an
// iteration gains less than emTol × n in log-likelihood, after emMaxIter
// iterations, or, marked collapsed, when a component loses its weight or
// the log-likelihood cannot reach need (emGiveUp).
func fitNormals(b binned, y []float64, cuts []int, need float64) normals {
	n := b.n
	k := len(cuts) - 1
	var all float64
	for i, t := range b.y {
		all += b.c[i] * t
	}
	mean := all / n
	var v float64
	for i, t := range b.y {
		v += b.c[i]*(t-mean)*(t-mean) + b.q[i]
	}
	v = max(v/n, 1e-12)
	floor := 1e-4 * v // keeps a component from collapsing onto one value
	f := normals{w: make([]float64, k), m: make([]float64, k), sd: make([]float64, k)}
	vars := make([]float64, k)
	for i := 0; i < k; i++ {
		part := y[cuts[i]:cuts[i+1]]
		var s, q float64
		for _, t := range part {
			s += t
		}
		mu := s / float64(len(part))
		for _, t := range part {
			q += (t - mu) * (t - mu)
		}
		f.w[i], f.m[i], vars[i] = float64(len(part))/n, mu, max(q/float64(len(part)), floor)
	}
	if k == 1 {
		// One normal: the sample's own mean and variance, which is what EM
		// converges to at once; its log-likelihood exactly.
		f.m[0], vars[0] = mean, v
		f.ll = -0.5 * n * (math.Log(2*math.Pi*v) + 1)
		f.sd[0] = math.Sqrt(v)
		return f
	}
	// Per component, arrays of the most components (no allocation, and no
	// bounds check the compiler cannot drop): the log of weight and
	// normalization, 1/(2 variance), and the M step's sums.
	var a, inv2v, mu, sw, s1, s2, sq [maxComponents]float64
	// Per bin (binLogs makes at most tailBins): the components' exponents,
	// then their exponentials; the largest exponent, then the bin's log
	// density; the sum of the exponentials.
	var ex [tailBins * maxComponents]float64
	var tops, sums [tailBins]float64
	prev, step := math.Inf(-1), math.Inf(1)
	for it := 0; it < emMaxIter; it++ {
		f.ll = 0
		for j := range k {
			a[j] = math.Log(f.w[j]) - 0.5*math.Log(2*math.Pi*vars[j])
			inv2v[j] = 0.5 / vars[j]
			mu[j] = f.m[j]
			sw[j], s1[j], s2[j], sq[j] = 0, 0, 0, 0
		}
		// The E step in passes over the bins, each value computed as one
		// pass per bin would compute it and the sums taken in bin order
		// (the same bits): a pass's exponentials, and its logarithms, are
		// independent of one another, so the core runs them side by side
		// instead of waiting out each one's latency in turn.
		nb := len(b.y)
		for i, t := range b.y {
			top := math.Inf(-1)
			x := ex[i*maxComponents : i*maxComponents+k]
			for j := range x {
				d := t - mu[j]
				x[j] = a[j] - d*d*inv2v[j]
				top = max(top, x[j])
			}
			tops[i] = top
		}
		for i := range nb {
			top, sum := tops[i], 0.0
			x := ex[i*maxComponents : i*maxComponents+k]
			for j := range x {
				// exp(0) is 1 and exp below its underflow is 0, exactly:
				// the top component and the far ones need no call.
				switch v := x[j] - top; {
				case v == 0:
					x[j] = 1
				case v < expNegligible:
					x[j] = 0
				default:
					x[j] = math.Exp(v)
				}
				sum += x[j]
			}
			sums[i] = sum
		}
		for i, sum := range sums[:nb] {
			if sum != 1 { // every other component underflowed: log(1) is 0
				tops[i] += fastlog.Log(sum)
			}
		}
		var ll float64
		for i, t := range b.y {
			// The bin's log-likelihood: its count at its mean, less the
			// quadratic term of its spread about the mean.
			c, q := b.c[i], b.q[i]
			ll += c * tops[i]
			inv := 1 / sums[i]
			x := ex[i*maxComponents : i*maxComponents+k]
			for j := range x {
				r := x[j] * inv
				rc := r * c
				d := t - mu[j]
				sw[j] += rc
				s1[j] += rc * d
				s2[j] += rc * d * d
				sq[j] += r * q
			}
		}
		for j := range k {
			ll -= sq[j] * inv2v[j]
			s2[j] += sq[j]
		}
		f.ll = ll
		for j := 0; j < k; j++ {
			if sw[j]/n < 1e-3 {
				f.collapsed = true
				return f
			}
			dm := s1[j] / sw[j]
			f.w[j], f.m[j], vars[j] = sw[j]/n, mu[j]+dm, max(s2[j]/sw[j]-dm*dm, floor)
		}
		d := f.ll - prev
		if d < emTol*n {
			break
		}
		if it >= emGiveUpAfter && d > 0 && emGiveUp(f.ll, d, step, emMaxIter-it-1, need) {
			f.collapsed = true
			return f
		}
		prev, step = f.ll, d
	}
	for j := range vars {
		f.sd[j] = math.Sqrt(vars[j])
	}
	// Components by ascending mean (EM keeps them apart, not ordered).
	for i := 1; i < k; i++ {
		for j := i; j > 0 && f.m[j] < f.m[j-1]; j-- {
			f.w[j], f.w[j-1] = f.w[j-1], f.w[j]
			f.m[j], f.m[j-1] = f.m[j-1], f.m[j]
			f.sd[j], f.sd[j-1] = f.sd[j-1], f.sd[j]
		}
	}
	return f
}

// emGiveUp says whether a fit at log-likelihood ll, whose last iteration
// gained d after one that gained prevD, can no longer reach need with
// left iterations to go. What it may still gain is taken as the rest of a
// geometric series at the square root of the ratio of the last two gains,
// and never more than d for every iteration left, with emGiveUpSlack to
// spare. EM's gains shrink more slowly than their early ratio says: at
// the ratio itself it gave up on fits that went on to count (a third
// component on generated trimodal samples, whose quantiles then went 100×
// too high); at its square root, 37 of the validation samples' 4,320
// quantiles moved by more than 5% against trying every fit to the end,
// and no family's loss rose. Trusting only that no gain exceeds the last
// (no geometric series) moved 5, at half as many iterations again.
func emGiveUp(ll, d, prevD float64, left int, need float64) bool {
	gain := d * float64(left)
	if c := math.Sqrt(d / prevD); c < 1 {
		gain = min(gain, d*c/(1-c))
	}
	return ll+gain+emGiveUpSlack < need
}

// expNegligible is the exponent below which the E step takes a
// component's exponential as 0 (its top component's is 1): e^−40 is
// 4e−18, below half the spacing of doubles at 1, so the bin's sum of
// exponentials is bit for bit what it was, and the responsibility it
// drops is under 1e−17 of the bin's count. About a third of the calls of
// a fit with three or four components, and the costliest part of EM.
const expNegligible = -40.0

func normSurv(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }

// Points reads a hop's time to success for the model: every success
// when there are at most maxTailPoints, else evenly spaced quantiles.
// ttsAt is the hop's quantile function (type 7: at i/(n−1) it is the i-th
// smallest exactly).
func Points(at func(q float64) float64, n int) []float64 {
	if n < 2 {
		return nil
	}
	k := min(n, maxTailPoints)
	xs := make([]float64, k)
	for i := range xs {
		if k == n {
			xs[i] = at(float64(i) / float64(n-1))
		} else {
			xs[i] = at((float64(i) + 0.5) / float64(k))
		}
	}
	return xs
}

// Describe is the basis's words for a model's quantile at p, fitted to
// the points Points read from a hop's successes. The count named is the
// successes', not the points': past maxTailPoints a model of 1,000
// quantiles stands for every success, and "the tail of the 1000
// successes" beside a hop of 14,400 read as if most were left out.
func Describe(m Model, p float64, successes int) string {
	_, by := m.QuantileBy(p)
	s := fmt.Sprintf("the tail of the %d successes (%s", max(successes, m.n), m.Kind)
	if successes > m.n {
		s += fmt.Sprintf(" fitted to %d of their quantiles", m.n)
	}
	if m.heavy {
		s += ", heavier than it at the top"
	}
	if by != m.Kind {
		s += "; set by " + by
	}
	return s + ")"
}
