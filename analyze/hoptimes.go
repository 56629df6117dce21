package analyze

import (
	"math"
	"slices"
	"sync"

	"github.com/tailscope/tailscope/internal/par"
	"github.com/tailscope/tailscope/span"
)

// This file keeps, per hop, when each attempt started and how long it
// took: what the timeline's per-hop blocks are cut from (timeline.go).
//
// The blocks are over every span the reader saw, not over the trace
// sample. On large logs the trace sample keeps one trace in 8 or 16, and
// a block of a hop then holds a handful of calls: too few to tell an
// incident from noise or to measure drift (measured on a whole Online
// Boutique day: 6 of 9 injected delays named from the sample, 7 of 9 from
// every span; TrainTicket 10 of 14 and 13 of 14). The per-hop digests are
// already over every span; the blocks are too, within a bound: a hop
// keeps at most maxHopTimes attempts, and past that a deterministic
// sample of them (below).

// maxHopTimes bounds the attempts a hop keeps with their start time (16
// bytes each: 256 KB a hop at most). Past it, the hop keeps the attempts
// whose hash falls under a level halved each time the kept ones exceed
// the bound: a sample of a half, a quarter, … of the hop's attempts,
// spread over time as they are. 16,384 attempts over 48 blocks still
// leave 340 a block, enough for a p99 to mean something.
const maxHopTimes = 1 << 14

// hopTimes is one hop's attempts with their start, all of them or (level
// > 0) the 1 in 2^level whose hash passes keepTime. Which attempts are
// kept does not depend on the order they came in, nor on how the reader
// split them between Parts: the level ends as the least at which the
// attempts passing it fit the bound (a level only rises when the attempts
// passing it, a subset of those of the whole logs, exceed the bound), and
// the kept set is the attempts passing that level.
type hopTimes struct {
	at []int64 // start, unix ns
	// d is the duration in ns, or for a failed attempt −1 − its duration
	// (negative: a failed attempt of 0 ns is −1).
	d     []int64
	level uint8
	// ord is the kept attempts' indexes in the order each visits them
	// (byDuration), made by the first timeline that reads them.
	ord *timesOrder
}

// timesOrder is a permutation of the indexes of a hop's n kept attempts:
// the successes by ascending duration, then the failures.
type timesOrder struct {
	once sync.Once
	n    int
	idx  []uint16 // nil: in index order
}

// keepTime says whether the attempt (at, d) is kept at level.
func keepTime(at, d int64, level uint8) bool {
	if level == 0 {
		return true
	}
	return mix(uint64(at)^uint64(d)*0x9E3779B97F4A7C15)>>(64-level) == 0
}

// add records one attempt.
func (t *hopTimes) add(sp *span.Span) {
	d := sp.Duration
	if sp.Failed() {
		d = -1 - d
	}
	if !keepTime(sp.Start, d, t.level) {
		return
	}
	t.at = append(t.at, sp.Start)
	t.d = append(t.d, d)
	if len(t.at) > maxHopTimes {
		t.thin(t.level + 1)
	}
}

// thin keeps the attempts that pass level, and raises it further while
// they exceed the bound.
func (t *hopTimes) thin(level uint8) {
	for {
		t.level = level
		k := 0
		for i := range t.at {
			if keepTime(t.at[i], t.d[i], level) {
				t.at[k], t.d[k] = t.at[i], t.d[i]
				k++
			}
		}
		t.at, t.d = t.at[:k], t.d[:k]
		if k <= maxHopTimes || level >= 63 {
			return
		}
		level++
	}
}

// merge adds o's attempts to t (o is left as it was).
func (t *hopTimes) merge(o *hopTimes) {
	if len(o.at) == 0 {
		t.level = max(t.level, o.level)
		return
	}
	if o.level > t.level {
		t.thin(o.level)
	}
	// Room for all of o's at once: appending them one by one grew both
	// slices by doubling, copying t's attempts again at each step. When
	// there is not room already, the union's, or a quarter more than t
	// had when that is more (many merges into one hop, as partial
	// summaries do, still copy each attempt a bounded number of times):
	// slices.Grow rounds up by append's rule, and merging a reader's two
	// Parts (445 attempts in room for 512, and 445) made room for 1,232
	// where 890 are kept.
	if n := len(t.at) + len(o.at); n > cap(t.at) || n > cap(t.d) {
		n = max(n, cap(t.at)+cap(t.at)/4)
		t.at = append(make([]int64, 0, n), t.at...)
		t.d = append(make([]int64, 0, n), t.d...)
	}
	for i := range o.at {
		if keepTime(o.at[i], o.d[i], t.level) {
			t.at = append(t.at, o.at[i])
			t.d = append(t.d, o.d[i])
		}
	}
	if len(t.at) > maxHopTimes {
		t.thin(t.level + 1)
	}
}

// scale is how many attempts each kept one stands for.
func (t *hopTimes) scale() float64 { return math.Ldexp(1, int(t.level)) }

// each calls f with every kept attempt: its start, its duration (ns) and
// whether it failed; the successes by ascending duration (byDuration).
func (t *hopTimes) each(f func(at, d int64, failed bool)) {
	if idx := t.byDuration(); idx != nil {
		for _, i := range idx {
			if at, d := t.at[i], t.d[i]; d >= 0 {
				f(at, d, false)
			} else {
				f(at, -1-d, true)
			}
		}
		return
	}
	for i, at := range t.at {
		if d := t.d[i]; d >= 0 {
			f(at, d, false)
		} else {
			f(at, -1-d, true)
		}
	}
}

// ordMu guards the creation of a hopTimes' ord: timelines may read one
// hop's times at once (each takes a hop per worker; one report's timeline
// and its held-out fit's run one after the other, but nothing forbids
// two reports at once).
var ordMu sync.Mutex

// byDuration is the order each visits the kept attempts in: the
// successes by ascending (duration, index), then the failures; nil for
// index order (more attempts than uint16 indexes, or a success too long
// to pack with its index). A timeline sorts each hop's successes by
// (duration, block) (timeline.go), and the held-out fit's timeline does
// it again over the attempts before its cut: visited in this order, both
// find their keys sorted, but for equal durations in other blocks, and
// the sort passes over them once instead of sorting them afresh. The
// order is sorted once per hop and kept: the timeline sorts what it is
// given whatever the order, so the order only makes it cheaper, and an
// order made for other contents of the same length is still a
// permutation of the indexes (each visits every attempt once).
func (t *hopTimes) byDuration() []uint16 {
	n := len(t.at)
	if n < 2 || n > 1<<16 {
		return nil
	}
	ordMu.Lock()
	o := t.ord
	if o == nil || o.n != n {
		o = &timesOrder{n: n}
		t.ord = o
	}
	ordMu.Unlock()
	o.once.Do(func() { o.idx = durationOrder(t.d) })
	return o.idx
}

// durationOrder is byDuration's order of the attempts with durations d
// (at most 2^16 of them), nil when a success is too long to pack.
func durationOrder(d []int64) []uint16 {
	const idxBits = 16
	var lo, hi int64 = math.MaxInt64, 0
	m := 0
	for _, v := range d {
		if v >= 0 {
			if v >= 1<<(63-idxBits) {
				return nil // over 2^47 ns (39 hours)
			}
			lo, hi = min(lo, v), max(hi, v)
			m++
		}
	}
	idx := make([]uint16, 0, len(d))
	if m >= radixOrderFrom {
		for i, v := range d {
			if v >= 0 {
				idx = append(idx, uint16(i))
			}
		}
		radixByDuration(idx, d, lo, hi)
	} else {
		keys := make([]uint64, 0, m)
		for i, v := range d {
			if v >= 0 {
				keys = append(keys, uint64(v)<<idxBits|uint64(i))
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			idx = append(idx, uint16(k))
		}
	}
	for i, v := range d {
		if v < 0 {
			idx = append(idx, uint16(i))
		}
	}
	return idx
}

// radixOrderFrom is the count of successes from which durationOrder sorts
// by radix: below it the comparison sort of packed keys is quicker
// (measured: about even at 300-500 successes, a third quicker by radix at
// 880, three times at 5,000).
const radixOrderFrom = 512

// radixByDuration sorts idx, indexes of successes in ascending order, by
// their durations d[i] in [lo, hi]: a stable LSD radix sort on the
// duration less lo, a byte a pass over only the bytes that vary. Stable,
// so equal durations keep their indexes ascending: the order of sorting
// (duration, index) keys.
func radixByDuration(idx []uint16, d []int64, lo, hi int64) {
	span := uint64(hi - lo)
	if span == 0 {
		return
	}
	buf := make([]uint16, len(idx))
	src, dst := idx, buf
	var count [256]int
	passes := 0
	for shift := uint(0); shift < 64 && span>>shift > 0; shift += 8 {
		clear(count[:])
		for _, i := range src {
			count[uint64(d[i]-lo)>>shift&255]++
		}
		sum := 0
		for k, c := range count {
			count[k] = sum
			sum += c
		}
		for _, i := range src {
			b := uint64(d[i]-lo) >> shift & 255
			dst[count[b]] = i
			count[b]++
		}
		src, dst = dst, src
		passes++
	}
	if passes%2 == 1 {
		copy(idx, src)
	}
}

// timesSource gives a hop's attempt times (nil: none kept), each attempt
// starting before until.
type timesSource struct {
	of    func(hop string) *hopTimes
	until int64 // math.MaxInt64: every attempt
}

// timesOfSpans keeps every attempt of spans, by hop: the source when the
// spans are all there is (no Accum, or a fit over some requests).
func timesOfSpans(spans []*span.Span) timesSource {
	m := map[string]*hopTimes{}
	for _, s := range spans {
		t := m[s.Hop]
		if t == nil {
			t = &hopTimes{}
			m[s.Hop] = t
		}
		t.add(s)
	}
	return timesSource{of: func(h string) *hopTimes { return m[h] }, until: math.MaxInt64}
}

// TimesBefore is the report's per-hop attempt times (over every span when
// it was measured from an Accum) up to instant t (ns): what a fit on the
// requests before t (MeasureFit) cuts its blocks from.
func (rep *Report) TimesBefore(t int64) *TimesSource {
	if rep.times.of == nil {
		return nil
	}
	return &TimesSource{timesSource{of: rep.times.of, until: t}}
}

// TimesSource is a report's per-hop attempt times, for MeasureFit.
type TimesSource struct{ s timesSource }

// timesSource is the Accum's per-hop attempt times, over every span added
// (nil for a hop merged from a summary, which keeps no times: measure
// then takes that hop's from the trace sample).
func (a *Accum) timesSource() timesSource {
	return timesSource{of: func(name string) *hopTimes {
		if h := a.hops[name]; h != nil && len(h.times.at) > 0 {
			return &h.times
		}
		return nil
	}, until: math.MaxInt64}
}

// withSpanTimes is src, with the hops it does not know taken from spans
// (every span's, built only when some hop needs them).
func withSpanTimes(src timesSource, spans []*span.Span) timesSource {
	var (
		once      sync.Once
		fromSpans timesSource
	)
	get := func(name string) *hopTimes {
		if src.of != nil {
			if t := src.of(name); t != nil {
				return t
			}
		}
		once.Do(func() { fromSpans = timesOfSpans(spans) })
		return fromSpans.of(name)
	}
	until := src.until
	if src.of == nil {
		until = math.MaxInt64
	}
	return timesSource{of: get, until: until}
}

// sortSuccesses settles every hop (hopAcc.settle) and gives each hop's
// success digest its values sorted from its attempt times' order
// (byDuration), where the times hold every attempt (level 0) and the
// digest is exact: the per-hop statistics read the successes sorted and
// the timeline the times in that order, and one sort serves both instead
// of two of the same durations. A hop whose successes all wait in its
// times (the read deferred them) has its digest filled from that order
// at once (FillSorted), never built unsorted first; one whose digest
// holds values already has them overwritten in that order when they are
// the same (SetSorted checks), and otherwise sorts its own when read.
func (a *Accum) sortSuccesses() {
	hs := make([]*hopAcc, 0, len(a.hops))
	for _, h := range a.hops {
		if h.times.level == 0 && h.succ.Exact() && len(h.times.d) >= 2 {
			hs = append(hs, h)
		} else {
			h.settle()
		}
	}
	par.Each(len(hs), func(i int) {
		h := hs[i]
		idx := h.times.byDuration()
		if idx == nil {
			h.settle()
			return
		}
		// The successes come first in idx, then the failures.
		n := 0
		for n < len(idx) && h.times.d[idx[n]] >= 0 {
			n++
		}
		at := func(i int) int64 { return h.times.d[idx[i]] }
		if h.settled == 0 && h.succ.N() == 0 && h.succ.FillSorted(n, at) {
			h.settled = len(h.times.d)
			return
		}
		h.settle()
		if h.succ.N() >= 2 {
			h.succ.SetSorted(n, at)
		}
	})
}
