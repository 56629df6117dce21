package quantile

import (
	"math"
	"slices"
	"sort"
	"sync"
)

// ExactLimit is the number of values a Digest keeps exactly (docs/DESIGN.md §4:
// percentiles are exact up to at least 100k samples per hop).
const ExactLimit = 100_000

// SketchAlpha is the relative accuracy of a Digest past ExactLimit: every
// percentile it reports lies within SketchAlpha (0.4%, under the 0.5% that
// docs/DESIGN.md §4 allows) of the exact one, relative to the exact value.
//
// Why it holds: values fall in logarithmic bins (γ^(i−1), γ^i] with
// γ = (1+α)/(1−α), and a bin reports 2γ^i/(γ+1), which is within α of
// every value in the bin. The value at any rank is therefore within α of
// the true value at that rank, and the contract's linear interpolation
// between two ranks, a convex combination, stays within α of the exact
// interpolated percentile. Min and max are kept exactly. The bins are
// counts, so two digests merge by adding them, in any order, with the same
// result: the structure is mergeable and its size depends only on the
// range of the values (about 5,500 bins from 1 ns to 292 years), never on
// their number.
const SketchAlpha = 0.004

var (
	sketchGamma   = (1 + SketchAlpha) / (1 - SketchAlpha)
	sketchLnGamma = math.Log(sketchGamma)
)

// Digest holds durations (ns, ≥ 0): exactly while there are at most
// ExactLimit of them (or until Sketch is called), as a relative-error
// sketch after that.
type Digest struct {
	// What Add reads and writes for every value comes first, in one or
	// two cache lines of a hop's state (analyze's hopAcc holds three
	// Digests and touches one per span among thousands of hops).
	exact  []int64
	n      int
	min    int64
	max    int64
	sorted bool
	sketch bool
	zero   int      // values below 1 ns (0)
	bins   []uint64 // bins[i] counts bin index lo+i
	lo     int
}

// Add records one value.
func (d *Digest) Add(x int64) {
	if d.n == 0 || x < d.min {
		d.min = x
	}
	if d.n == 0 || x > d.max {
		d.max = x
	}
	d.n++
	if !d.sketch {
		if len(d.exact) == cap(d.exact) && len(d.exact) >= exactGrowFrom {
			d.grow()
		}
		d.exact = append(d.exact, x)
		d.sorted = false
		if len(d.exact) > ExactLimit {
			d.Sketch()
		}
		return
	}
	d.addBin(x, 1)
}

// exactGrowFrom is the length from which the exact values grow four-fold
// (grow) instead of by append's rule. Past a few hundred values append
// grows a slice by about 1.25×, so a hop's values reaching ExactLimit were
// copied some twenty times into fresh memory: on the 10M-span Parquet
// benchmark that was 7% of the CPU (growslice under Add). Below this
// length append's rule stands, so that many small hops (the cardinality
// case: 200k hops of a few spans) hold no more than before.
const exactGrowFrom = 4096

// grow makes room for the exact values four-fold, up to the exact limit
// plus one (the value that turns the digest into a sketch): 4096 →
// 16384 → 65536 → ExactLimit+1, never more memory than append's rule
// reaches at ExactLimit.
func (d *Digest) grow() {
	n := min(4*cap(d.exact), ExactLimit+1)
	if n <= cap(d.exact) {
		return // past the limit (Merge appends there): append's rule
	}
	d.exact = append(make([]int64, 0, n), d.exact...)
}

// N is the number of values.
func (d *Digest) N() int { return d.n }

// Exact reports whether every value is kept.
func (d *Digest) Exact() bool { return !d.sketch }

// Sketch turns the digest into its bounded form (idempotent).
func (d *Digest) Sketch() {
	if d.sketch {
		return
	}
	d.sketch = true
	for _, x := range d.exact {
		d.addBin(x, 1)
	}
	d.exact, d.sorted = nil, false
}

// binOf is the bin of x ≥ 1: ceil(ln x / ln γ).
func binOf(x int64) int {
	if x >= 1 && x <= binFastMax {
		return binOfFast(x)
	}
	return binOfLog(x)
}

func binOfLog(x int64) int { return int(math.Ceil(math.Log(float64(x)) / sketchLnGamma)) }

// binFastMax bounds the range where binOfFast answers: durations up to
// about 2.8 hours, every span a tracer records in practice.
const binFastMax = 1 << 43

// binOfFast is binOfLog without a logarithm per value: a table indexed by
// x's exponent and leading mantissa bits gives a bin at most one below
// x's, and the bins' integer boundaries, computed once with binOfLog
// itself, settle it. It is the same function wherever binOfLog is
// monotonic over the integers, which holds up to binFastMax with room to
// spare: consecutive integers there differ in ln x by at least 2^-43, over
// a hundred times the error of math.Log (under one ulp of a number below
// 31), so rounding cannot reorder them.
func binOfFast(x int64) int {
	binOnce.Do(initBins)
	g := binGuess[math.Float64bits(float64(x))>>(52-guessBits)-1023<<guessBits]
	c := int(g &^ guessSteps)
	// The guess is the bin of the least integer of x's slice, so never
	// above x's bin; past the smallest values one step settles it, taken
	// without a branch (which way it goes is a coin toss).
	if g&guessSteps == 0 {
		if x >= binLo[c+1] {
			c++
		}
		return c
	}
	for x >= binLo[c+1] {
		c++
	}
	return c
}

// guessSteps marks an entry of binGuess whose slice's integers span more
// than two bins, where binOfFast steps through the boundaries. With γ
// and guessBits as they are none does (initBins finds out, slice by
// slice): the mark keeps binOfFast exact should either change.
const guessSteps = 1 << 15

// guessBits is how many leading mantissa bits index binGuess: a slice of
// an octave is then at most 2^-7 of its start wide, under a bin's width
// (γ−1 = 0.008), so its integers span at most two bins and the guess is
// at most one off. The table is small (5,505 entries of two bytes, every
// exponent up to binFastMax's); the logarithm it replaces (a table of
// ln, a product and a division, then steps whose count varied) took
// twice as long per value.
const guessBits = 7

var (
	binOnce sync.Once
	// binLo[i] is the least integer x ≥ 1 with binOfLog(x) ≥ i.
	binLo []int64
	// binGuess[k] is the bin of the least integer x ≥ 1 whose float64
	// has k as its exponent (less the bias) and leading guessBits
	// mantissa bits.
	binGuess []uint16
)

func initBins() {
	n := binOfLog(binFastMax) + 2
	binLo = make([]int64, n+1)
	x := int64(1)
	for i := 0; i <= n; i++ {
		// From the previous boundary, jump close to γ^(i-1) and step to
		// the exact least x with binOfLog(x) ≥ i.
		if g := int64(math.Pow(sketchGamma, float64(i-1))) - 2; g > x {
			x = g
		}
		for binOfLog(x) < i {
			x++
		}
		binLo[i] = x
	}
	top := math.Float64bits(binFastMax)>>(52-guessBits) - 1023<<guessBits
	binGuess = make([]uint16, top+1)
	c := 0
	for k := range binGuess {
		// The slice's start: 2^e·(1 + m/2^guessBits), its least integer
		// the ceiling (at least 1).
		start := math.Float64frombits(uint64(k+1023<<guessBits) << (52 - guessBits))
		least := max(1, int64(math.Ceil(start)))
		for least >= binLo[c+1] {
			c++
		}
		binGuess[k] = uint16(c)
		// The slice's greatest integer: below the next slice's start.
		next := math.Float64frombits(uint64(k+1+1023<<guessBits) << (52 - guessBits))
		if greatest := int64(math.Ceil(next)) - 1; greatest >= binLo[c+2] {
			binGuess[k] |= guessSteps
		}
	}
}

func binValue(i int) float64 { return 2 * math.Pow(sketchGamma, float64(i)) / (sketchGamma + 1) }

func (d *Digest) addBin(x int64, c uint64) {
	if x < 1 {
		d.zero += int(c)
		return
	}
	i := binOf(x)
	d.ensure(i)
	d.bins[i-d.lo] += c
}

// ensure makes bin index i addressable.
func (d *Digest) ensure(i int) {
	switch {
	case len(d.bins) == 0:
		d.lo = i
		d.bins = make([]uint64, 1, 64)
	case i < d.lo:
		grow := d.lo - i
		nb := make([]uint64, len(d.bins)+grow, len(d.bins)+grow+64)
		copy(nb[grow:], d.bins)
		d.bins, d.lo = nb, i
	case i >= d.lo+len(d.bins):
		for i >= d.lo+len(d.bins) {
			d.bins = append(d.bins, 0)
		}
	}
}

// Merge adds the values of o.
func (d *Digest) Merge(o *Digest) {
	if o.n == 0 {
		return
	}
	if d.n == 0 || o.min < d.min {
		d.min = o.min
	}
	if d.n == 0 || o.max > d.max {
		d.max = o.max
	}
	if o.sketch {
		d.Sketch()
	}
	d.n += o.n
	if !d.sketch {
		if len(d.exact)+len(o.exact) > ExactLimit {
			d.exact = append(d.exact, o.exact...)
			d.Sketch()
			return
		}
		// Both sorted, then merged in one pass: a report merges a hop's
		// digests several ways (all attempts, time to success,
		// failures), and each part is then sorted once, not each union.
		d.exact, d.sorted = mergeSorted(d.Sorted(), o.Sorted()), true
		return
	}
	for _, x := range o.exact {
		d.addBin(x, 1)
	}
	d.zero += o.zero
	for i, c := range o.bins {
		if c > 0 {
			d.ensure(o.lo + i)
			d.bins[o.lo+i-d.lo] += c
		}
	}
}

// MergeUnsorted is Merge, but leaves the exact values unsorted when both
// are exact (o's appended to d's): for a digest whose values will be given
// sorted from elsewhere (SetSorted), so that neither part is sorted for
// nothing. What it leaves reads as Merge's (the values are sorted when
// read, by Sorted).
func (d *Digest) MergeUnsorted(o *Digest) {
	if o.n == 0 || d.sketch || o.sketch || len(d.exact)+len(o.exact) > ExactLimit {
		d.Merge(o)
		return
	}
	if d.n == 0 || o.min < d.min {
		d.min = o.min
	}
	if d.n == 0 || o.max > d.max {
		d.max = o.max
	}
	d.n += o.n
	// A new array of exactly the union's size, as Merge's merge makes:
	// appending would leave up to as much again unused.
	all := make([]int64, len(d.exact)+len(o.exact))
	copy(all[copy(all, d.exact):], o.exact)
	d.exact, d.sorted = all, false
}

// Grow makes room for n more exact values (in sketch form it does
// nothing), so that adding them copies none: a caller that knows how many
// come saves the copies of growing one at a time.
func (d *Digest) Grow(n int) {
	if d.sketch || n <= cap(d.exact)-len(d.exact) {
		return
	}
	d.exact = slices.Grow(d.exact, min(n, ExactLimit+1-len(d.exact)))
}

// FillSorted makes an empty digest hold the n values at(0) ≤ … ≤
// at(n−1), 2 ≤ n ≤ ExactLimit, exactly and sorted: the digest that adding
// them one by one and then Sorted leave, built in one pass. It reports
// whether it did, which it does only on an empty digest and ascending
// values (else the digest is left empty).
func (d *Digest) FillSorted(n int, at func(i int) int64) bool {
	if d.n != 0 || d.sketch || len(d.exact) != 0 || n < 2 || n > ExactLimit {
		return false
	}
	xs := make([]int64, n)
	prev := at(0)
	for i := range xs {
		x := at(i)
		if x < prev || x < 0 {
			return false
		}
		xs[i], prev = x, x
	}
	d.exact, d.n, d.min, d.max, d.sorted = xs, n, xs[0], xs[n-1], true
	return true
}

// SetSorted gives an exact digest whose values are not sorted yet its
// values in ascending order, the n values at(0), …, at(n−1), sorted
// elsewhere (the caller sorted the same values with more beside them):
// Sorted then returns them instead of sorting its own. It reports whether
// it took them, which it does only when they are ascending and hold what
// the digest holds by count, extremes, sum, sum of squares and exclusive
// or (so that a caller's mistake cannot change a percentile unnoticed).
// They are written over the digest's own values: no array is made.
func (d *Digest) SetSorted(n int, at func(i int) int64) bool {
	if d.sketch || d.sorted || n != len(d.exact) || n == 0 || at(0) != d.min || at(n-1) != d.max {
		return false
	}
	var s1, s2, x1, t1, t2, y1 uint64
	prev := at(0)
	for i, a := range d.exact {
		b := at(i)
		if b < prev {
			return false
		}
		prev = b
		s1, s2, x1 = s1+uint64(a), s2+uint64(a)*uint64(a), x1^uint64(a)
		t1, t2, y1 = t1+uint64(b), t2+uint64(b)*uint64(b), y1^uint64(b)
	}
	if s1 != t1 || s2 != t2 || x1 != y1 {
		return false
	}
	for i := range d.exact {
		d.exact[i] = at(i)
	}
	d.sorted = true
	return true
}

// Sorted returns the exact values in ascending order, or nil in sketch
// form.
func (d *Digest) Sorted() []int64 {
	if d.sketch {
		return nil
	}
	if !d.sorted {
		sortInt64(d.exact)
		d.sorted = true
	}
	return d.exact
}

// mergeSorted returns the ascending union of two ascending slices, in a
// new slice.
func mergeSorted(a, b []int64) []int64 {
	out := make([]int64, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if b[0] < a[0] {
			out = append(out, b[0])
			b = b[1:]
		} else {
			out = append(out, a[0])
			a = a[1:]
		}
	}
	out = append(out, a...)
	return append(out, b...)
}

// Min is the smallest value (0 when empty); exact in both forms.
func (d *Digest) Min() int64 { return d.min }

// Max is the largest value (0 when empty); exact in both forms.
func (d *Digest) Max() int64 { return d.max }

// At returns the value of 0-based rank r: exact within the exact range,
// within SketchAlpha past it.
func (d *Digest) At(r int) float64 { return d.at(r) }

// at returns the value of 0-based rank r.
func (d *Digest) at(r int) float64 {
	if !d.sketch {
		return float64(d.Sorted()[r])
	}
	if r <= 0 {
		return float64(d.min)
	}
	if r >= d.n-1 {
		return float64(d.max)
	}
	if r < d.zero {
		return 0
	}
	c := d.zero
	for i, b := range d.bins {
		c += int(b)
		if r < c {
			v := binValue(d.lo + i)
			return math.Min(math.Max(v, float64(d.min)), float64(d.max))
		}
	}
	return float64(d.max)
}

// Quantile is the q-quantile by the contract's definition (linear
// interpolation between closest ranks), exact or within SketchAlpha.
func (d *Digest) Quantile(q float64) float64 {
	if d.n == 0 {
		return math.NaN()
	}
	if !d.sketch {
		return Int64(d.Sorted(), q)
	}
	if q <= 0 {
		return float64(d.min)
	}
	if q >= 1 {
		return float64(d.max)
	}
	h := float64(d.n-1) * q
	lo := math.Floor(h)
	i := int(lo)
	a := d.at(i)
	if i+1 >= d.n {
		return a
	}
	return a + (h-lo)*(d.at(i+1)-a)
}

// Below counts the values certainly below x. In sketch form the bin that
// holds x is not counted: its values may lie on either side.
func (d *Digest) Below(x int64) int {
	if !d.sketch {
		s := d.Sorted()
		return sort.Search(len(s), func(i int) bool { return s[i] >= x })
	}
	if x <= 0 {
		return 0
	}
	c := d.zero
	if x < 1 {
		return c
	}
	bx := binOf(x)
	for i, b := range d.bins {
		if d.lo+i >= bx {
			break
		}
		c += int(b)
	}
	return c
}

// Within counts the values in [lo, hi] (in sketch form, those whose bin
// value lies there).
func (d *Digest) Within(lo, hi int64) int {
	n := 0
	d.Each(func(v int64, c int) {
		if v >= lo && v <= hi {
			n += c
		}
	})
	return n
}

// Each calls f with each distinct value (in sketch form, each bin's
// value, clamped to [min, max]) and its count, in ascending order.
func (d *Digest) Each(f func(v int64, c int)) {
	if !d.sketch {
		s := d.Sorted()
		for i := 0; i < len(s); {
			j := i + 1
			for j < len(s) && s[j] == s[i] {
				j++
			}
			f(s[i], j-i)
			i = j
		}
		return
	}
	if d.zero > 0 {
		f(0, d.zero)
	}
	for i, b := range d.bins {
		if b > 0 {
			v := math.Min(math.Max(binValue(d.lo+i), float64(d.min)), float64(d.max))
			f(int64(math.Round(v)), int(b))
		}
	}
}
