package analyze

import (
	"fmt"
	"github.com/tailscope/tailscope/bound"
	"math"
	"math/bits"
	"slices"
	"sort"
	"time"

	"github.com/tailscope/tailscope/internal/par"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/span"
)

// This file cuts the logs into time blocks and measures, per hop, how its
// latency moves from one block to the next (docs/DESIGN.md §4, "Drift and
// incidents"). Two things come out of it, and they are kept apart because
// they call for different answers:
//
//   - drift: the ordinary way a hop's tail moves between quiet blocks
//     (load, noisy neighbours, a cache warming). A policy fitted on
//     today must carry it, so the recommendation multiplies each timeout
//     by a headroom learned here (recommend/drift.go);
//   - incidents: a block in which a hop's latency departs from every
//     other block (a change point, not a noisy block). A policy cannot be
//     sized for an incident it never saw on a hop that never had one; it
//     can say how often today's logs had one and what that would cost,
//     which enters the stated risk.
//
// Everything here reads the requests kept whole (the trace sample on large
// logs), so that the blocks, the incidents and the replays that validate
// the headroom speak of the same calls.

// DefaultBlock is the block length of logs that span at least
// MinBlocks × DefaultBlock: long enough for a block to hold a tail, short
// enough that an incident of a few minutes dominates its block.
const DefaultBlock = 10 * time.Minute

// MinBlocks is the fewest blocks a timeline is cut into: logs shorter than
// MinBlocks × DefaultBlock get blocks of a sixth of their span.
const MinBlocks = 6

// MaxBlocks is the most blocks: longer logs get longer blocks, so that the
// report's timeline stays readable and each block holds a tail.
const MaxBlocks = 48

// MinBlock is the shortest block: below it the blocks are the gaps between
// a handful of requests.
const MinBlock = time.Second

// minBlockRequests is the fewest requests a block needs to count towards
// a measured timeline; minMeasuredBlocks how many such blocks it needs.
const (
	minBlockRequests  = 10
	minMeasuredBlocks = 3
)

// minBlockCalls is the fewest successful calls of a hop in a block for the
// block to be compared with the rest; minRestCalls the fewest in the rest.
const (
	minBlockCalls = 10
	minRestCalls  = 30
)

// Incident detection: a block is an incident on a hop when at least
// incidentMinShare of its successful calls (and incidentMinCalls of them)
// took longer than the rest's p99, that many being significant at
// incidentAlpha over the number of hop-block pairs tested (Bonferroni), and
// its p99 is at least IncidentSlowdown × the rest's.
const (
	incidentMinShare = 0.05
	incidentMinCalls = 5
	incidentAlpha    = 1e-3
	// IncidentSlowdown is how much slower than its baseline a hop's p99
	// must be in a block for the block to be an incident on it.
	IncidentSlowdown = 1.5
)

// Timeline is the logs cut into time blocks (JSON `timeline`).
type Timeline struct {
	// Block is the blocks' length ("10m").
	Block   string  `json:"block"`
	BlockMs float64 `json:"block_ms"`
	// Blocks are the blocks that hold a request, in time order; every
	// hop's Blocks line up with them.
	Blocks []TimeBlock `json:"blocks"`
	// Measured is false when the logs are too short, or too sparse, for
	// drift between blocks to be measured (Note says why).
	Measured bool   `json:"measured"`
	Note     string `json:"note,omitempty"`
	// Headroom is what the timeouts carry for drift (see HeadroomOf).
	Headroom Headroom `json:"headroom"`

	size, origin int64
}

// TimeBlock is one block of the timeline: when, and the requests that
// started in it (their latency over those that succeeded).
type TimeBlock struct {
	From     string   `json:"from"`
	Until    string   `json:"until"`
	Requests int      `json:"requests"`
	Failed   int      `json:"failed"`
	P50Ms    *float64 `json:"p50_ms"`
	P99Ms    *float64 `json:"p99_ms"`
	MaxMs    *float64 `json:"max_ms"`

	start, end int64
	ok         []int64 // latencies of the requests that succeeded, ascending
}

// HopBlock is a hop's calls in one block: attempts, and its successful
// attempts' latency (JSON `hops[].blocks`, aligned with timeline.blocks).
type HopBlock struct {
	Attempts  int      `json:"attempts"`
	Successes int      `json:"successes"`
	P50Ms     *float64 `json:"p50_ms"`
	P99Ms     *float64 `json:"p99_ms"`
	MaxMs     *float64 `json:"max_ms"`
	// Incident marks a block detected as an incident on this hop.
	Incident bool `json:"incident,omitempty"`

	ok []int64 // successful attempts' durations, ascending
	// keys (in a hop's first block only) are the hop's successes as
	// sorted duration<<shift | block keys (see pooled).
	keys  []uint64
	shift uint
}

// Drift is how far a hop's tail moved between quiet blocks (JSON
// `hops[].drift`): the largest ratio of a block's high quantile to the
// same quantile of the other quiet blocks.
type Drift struct {
	// Ratio is the largest block-to-rest ratio (≥ 0; below 1 when every
	// block was faster than the rest at its level).
	Ratio float64 `json:"ratio"`
	// Blocks is how many blocks were compared; Level the quantile (in
	// percent) compared in the block that gave Ratio.
	Blocks int     `json:"blocks"`
	Level  float64 `json:"level"`
	// From is the start of the block that gave Ratio (RFC 3339).
	From string `json:"from"`
}

// Incident is a block (or a run of adjacent blocks) in which a hop's
// latency departed from its other blocks (JSON `incidents`, contract:
// hop, from, until, p99_ms, baseline_p99_ms).
type Incident struct {
	Hop           string  `json:"hop"`
	From          string  `json:"from"`
	Until         string  `json:"until"`
	P99Ms         float64 `json:"p99_ms"`
	BaselineP99Ms float64 `json:"baseline_p99_ms"`
	// Slowdown is P99Ms / BaselineP99Ms.
	Slowdown float64 `json:"slowdown"`
	// Calls is the hop's successful calls in the incident, Above how many
	// of them took longer than the baseline p99.
	Calls int `json:"calls"`
	Above int `json:"above_baseline"`

	// Start and End bound the incident, ns.
	Start, End int64 `json:"-"`
}

// Covers says whether an incident's window holds instant t (ns).
func (in *Incident) Covers(t int64) bool { return t >= in.Start && t < in.End }

// BlockSize is the block length for logs whose requests start over span
// ns: DefaultBlock when that makes at least MinBlocks blocks (longer when
// it would make more than MaxBlocks), else a sixth of the span, rounded
// down to a whole second; 0 when even MinBlock is too long.
func BlockSize(spanNs int64) time.Duration {
	s := time.Duration(spanNs)
	if s >= MinBlocks*DefaultBlock {
		b := DefaultBlock
		for s/b >= MaxBlocks {
			b += DefaultBlock
		}
		return b
	}
	b := (s / MinBlocks).Truncate(time.Second)
	if b < MinBlock {
		return 0
	}
	return b
}

// measureTimeline cuts the logs into blocks: reqs (by start, ascending)
// for the request-level blocks, and each hop's attempt times (rep.times:
// over every span when the report comes from an Accum, hoptimes.go) for
// its Blocks; then fills each hop's Drift and the report's incidents.
func measureTimeline(rep *Report, reqs []*span.Request, opt Options) {
	if len(reqs) == 0 {
		return
	}
	// The hops that get blocks, and their attempts. Only hops with
	// minBlockCalls attempts: a hop seen a handful of times has no tail
	// per block to show, and logs whose hop names carry ids hold 100k such
	// hops (48 blocks each would be gigabytes of state and of JSON). A
	// root hop is the request itself: the request blocks show it.
	type hopT struct {
		i int
		t *hopTimes
	}
	var hts []hopT
	first, last := reqs[0].Start, reqs[len(reqs)-1].Start
	until := rep.times.until
	for i := range rep.Hops {
		h := &rep.Hops[i]
		if h.Role == RoleRoot || h.Attempts < minBlockCalls || rep.times.of == nil {
			continue
		}
		t := rep.times.of(h.Hop)
		if t == nil {
			continue
		}
		hts = append(hts, hopT{i, t})
		for _, at := range t.at {
			if at != 0 && at < until {
				first, last = min(first, at), max(last, at)
			}
		}
	}
	size := opt.Block
	if size <= 0 {
		size = BlockSize(last - first)
	}
	tl := &Timeline{Blocks: []TimeBlock{}, Headroom: Headroom{Pooled: DefaultHeadroom, Source: "default"}}
	rep.Timeline = tl
	if size <= 0 {
		tl.Note = fmt.Sprintf("the requests start within %s: too short to cut into blocks", units.Duration(time.Duration(last-first)))
		return
	}
	tl.Block, tl.BlockMs, tl.size = blockText(size), units.Round(units.Ms(int64(size)), 4), int64(size)
	// Blocks start at whole multiples of the block length (UTC), so that
	// two runs over overlapping logs cut them alike.
	tl.origin = first - first%int64(size)
	if first < 0 && first%int64(size) != 0 {
		tl.origin -= int64(size)
	}
	// The blocks are those that hold a request or a hop's attempt, in time
	// order.
	idx := newBlockIndex((last-tl.origin)/tl.size + 1)
	for _, r := range reqs {
		idx.mark((r.Start - tl.origin) / tl.size)
	}
	for _, ht := range hts {
		for _, at := range ht.t.at {
			if at != 0 && at < until {
				idx.mark((at - tl.origin) / tl.size)
			}
		}
	}
	for _, k := range idx.number() {
		st := tl.origin + k*tl.size
		tl.Blocks = append(tl.Blocks, TimeBlock{start: st, end: st + tl.size, From: rfc3339(st), Until: rfc3339(st + tl.size)})
	}
	for _, r := range reqs {
		tb := &tl.Blocks[idx.of((r.Start-tl.origin)/tl.size)]
		tb.Requests++
		if r.Failed {
			tb.Failed++
		} else {
			tb.ok = append(tb.ok, r.Latency())
		}
	}
	measured := 0
	for i := range tl.Blocks {
		tb := &tl.Blocks[i]
		slices.Sort(tb.ok)
		tb.P50Ms, tb.P99Ms, tb.MaxMs = msQ(tb.ok, 0.5), msQ(tb.ok, 0.99), msQ(tb.ok, 1)
		if tb.Requests >= minBlockRequests {
			measured++
		}
	}
	tl.Measured = measured >= minMeasuredBlocks
	tl.Headroom = Headroom{Pooled: DefaultHeadroom, Source: "default"}
	if !tl.Measured {
		tl.Note = fmt.Sprintf("%s of %s %s at least %d requests: too few to measure drift between blocks (needs %d)",
			units.Count(measured, "block", "blocks"), tl.Block, units.Plural(measured, "holds", "hold"), minBlockRequests, minMeasuredBlocks)
	}
	shift := uint(bits.Len(uint(len(tl.Blocks))))
	// Each hop's blocks read that hop alone: all hops at once.
	par.Each(len(hts), func(x int) {
		ht := hts[x]
		h, t := &rep.Hops[ht.i], ht.t
		bl := make([]HopBlock, len(tl.Blocks))
		var failed []int
		// The successes as one sorted list of (duration, block) keys: the
		// blocks then fill in ascending order, and any union of blocks
		// (pooled) is a filter of the list, not another sort.
		keys := make([]uint64, 0, len(t.at))
		t.each(func(at, d int64, f bool) {
			if at == 0 || at >= until {
				return
			}
			b := idx.of((at - tl.origin) / tl.size)
			if f {
				if failed == nil {
					failed = make([]int, len(bl))
				}
				failed[b]++
				return
			}
			keys = append(keys, uint64(min(d, maxKeyed(shift)))<<shift|uint64(b))
		})
		slices.Sort(keys)
		mask := uint64(1)<<shift - 1
		counts := make([]int, len(bl))
		for _, k := range keys {
			counts[k&mask]++
		}
		for j := range bl {
			bl[j].ok = make([]int64, 0, counts[j])
		}
		for _, k := range keys {
			b := k & mask
			bl[b].ok = append(bl[b].ok, int64(k>>shift))
		}
		if len(bl) > 0 {
			bl[0].keys, bl[0].shift = keys, shift
		}
		// Attempts and successes are the hop's, estimated from the kept
		// sample when the hop had more than maxHopTimes (Sampled says so);
		// the statistics read the kept calls themselves.
		sc := t.scale()
		for j := range bl {
			hb := &bl[j]
			n := len(hb.ok)
			if failed != nil {
				n += failed[j]
			}
			hb.Attempts, hb.Successes = int(math.Round(float64(n)*sc)), int(math.Round(float64(len(hb.ok))*sc))
			hb.P50Ms, hb.P99Ms, hb.MaxMs = msQ(hb.ok, 0.5), msQ(hb.ok, 0.99), msQ(hb.ok, 1)
		}
		if t.level > 0 {
			h.BlockSample = units.Round(1/sc, 6)
		}
		h.Blocks = bl
	})
	if !tl.Measured {
		return
	}
	rep.Incidents = detectIncidents(rep, tl)
	par.Each(len(rep.Hops), func(i int) {
		if h := &rep.Hops[i]; h.Blocks != nil {
			h.Drift = measureDrift(h.Blocks, tl)
		}
	})
	measureHeadroom(rep)
}

// detectIncidents finds, per hop, the blocks whose calls departed from its
// quiet blocks (see the constants above). The baseline is the hop's
// quieter half of blocks (by their p90), pooled: a fault often spans
// adjacent blocks, and on a day with a fault every few minutes a hop may
// be slow in a third of its blocks, which a baseline of "every other
// block" would take for its normal tail (measured: TrainTicket's three
// consecutive ts-basic-service delays hid each other). Detection over a
// half of the blocks stands as long as at most half of them are
// incidents on the hop.
func detectIncidents(rep *Report, tl *Timeline) []Incident {
	tests := 0
	for i := range rep.Hops {
		for _, hb := range rep.Hops[i].Blocks {
			if len(hb.ok) >= minBlockCalls {
				tests++
			}
		}
	}
	if tests == 0 {
		return []Incident{}
	}
	alpha := incidentAlpha / float64(tests)
	// Each hop's incidents read and mark that hop alone: all hops at once,
	// then in the report's order.
	byHop := make([][]Incident, len(rep.Hops))
	par.Each(len(rep.Hops), func(i int) {
		h := &rep.Hops[i]
		if h.Blocks == nil {
			return
		}
		inc := make([]bool, len(h.Blocks))
		base := make([]float64, len(h.Blocks))
		quiet := quietHalf(h.Blocks)
		rest := pooled(h.Blocks, func(j int) bool { return quiet[j] })
		if len(rest) >= minRestCalls {
			b99 := quantile.Int64(rest, 0.99)
			for b := range h.Blocks {
				hb := &h.Blocks[b]
				if len(hb.ok) < minBlockCalls {
					continue
				}
				above := len(hb.ok) - sort.Search(len(hb.ok), func(k int) bool { return float64(hb.ok[k]) > b99 })
				p99 := quantile.Int64(hb.ok, 0.99)
				inc[b] = above >= incidentMinCalls && float64(above) >= incidentMinShare*float64(len(hb.ok)) &&
					p99 >= IncidentSlowdown*b99 && bound.BinomialTail(above, len(hb.ok), 0.01) < alpha
				base[b] = b99
			}
		}
		// Adjacent incident blocks are one incident.
		for b := 0; b < len(h.Blocks); b++ {
			if !inc[b] {
				continue
			}
			e := b
			for e+1 < len(h.Blocks) && inc[e+1] && tl.Blocks[e+1].start == tl.Blocks[e].end {
				e++
			}
			var ok []int64
			var b99 float64
			for j := b; j <= e; j++ {
				h.Blocks[j].Incident = true
				ok = append(ok, h.Blocks[j].ok...)
				b99 = max(b99, base[j])
			}
			slices.Sort(ok)
			p99 := quantile.Int64(ok, 0.99)
			above := len(ok) - sort.Search(len(ok), func(k int) bool { return float64(ok[k]) > b99 })
			byHop[i] = append(byHop[i], Incident{Hop: h.Hop, From: tl.Blocks[b].From, Until: tl.Blocks[e].Until,
				P99Ms: units.Round(units.MsOf(p99), 4), BaselineP99Ms: units.Round(units.MsOf(b99), 4), Slowdown: units.Round(p99/b99, 2),
				Calls: len(ok), Above: above, Start: tl.Blocks[b].start, End: tl.Blocks[e].end})
			b = e
		}
	})
	out := []Incident{}
	for _, in := range byHop {
		out = append(out, in...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Start != out[j].Start {
			return out[i].Start < out[j].Start
		}
		return out[i].Hop < out[j].Hop
	})
	return out
}

// blockIndex numbers the blocks that hold something: mark each block
// number (from 0, below n) that does, then number them in order, then look
// each one's index up. Every attempt of every hop is marked and looked up:
// a slice over the numbers when there are not too many (the default
// blocks number at most MaxBlocks; --block 1s over a month is 2.6M), a
// map beyond.
type blockIndex struct {
	dense  []int32
	sparse map[int64]int
}

// maxDenseBlocks is the most block numbers blockIndex keeps in a slice.
const maxDenseBlocks = 1 << 22

func newBlockIndex(n int64) *blockIndex {
	if n <= maxDenseBlocks {
		return &blockIndex{dense: make([]int32, n)}
	}
	return &blockIndex{sparse: map[int64]int{}}
}

func (x *blockIndex) mark(k int64) {
	if x.dense != nil {
		x.dense[k] = 1
	} else {
		x.sparse[k] = 0
	}
}

// number gives the marked blocks their indexes in order and returns their
// numbers.
func (x *blockIndex) number() []int64 {
	var ks []int64
	if x.dense != nil {
		for k, m := range x.dense {
			if m != 0 {
				x.dense[k] = int32(len(ks))
				ks = append(ks, int64(k))
			}
		}
		return ks
	}
	for k := range x.sparse {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	for i, k := range ks {
		x.sparse[k] = i
	}
	return ks
}

func (x *blockIndex) of(k int64) int {
	if x.dense != nil {
		return int(x.dense[k])
	}
	return x.sparse[k]
}

// measureDrift compares each quiet block of a hop with its other quiet
// blocks at the highest quantile the block measures with about ten calls
// above it (1 − 10/n, between p50 and p99: a block of 1,000 calls compares
// p99s, one of 100 p90s), and keeps the largest ratio; nil when fewer than
// two blocks can be compared.
//
// The block's side of the ratio is a 95% lower confidence bound of its
// quantile (the order statistic that the binomial count of values below
// the true quantile reaches with 95% probability), not the sample
// quantile: the largest of a dozen small blocks' p90s is well above the
// hop's p90 by chance alone (on generated hops with no drift at all, the
// plain ratio put the median hop at 1.6×), and a headroom learned from
// noise would only hold stuck calls longer.
func measureDrift(bl []HopBlock, tl *Timeline) *Drift {
	var d *Drift
	n := 0
	// Every quiet block pooled once; each block's "rest" is that less the
	// block itself (restQuantile), so a hop costs one sort, not one per
	// block.
	all := pooled(bl, func(j int) bool { return !bl[j].Incident })
	for b := range bl {
		hb := &bl[b]
		if hb.Incident || len(hb.ok) < minBlockCalls {
			continue
		}
		if len(all)-len(hb.ok) < minRestCalls {
			continue
		}
		q := min(0.99, max(0.5, 1-10/float64(len(hb.ok))))
		r := restQuantile(all, hb.ok, q)
		if r <= 0 {
			continue
		}
		ratio := float64(bound.LowerQuantile(hb.ok, q)) / r
		n++
		if d == nil || ratio > d.Ratio {
			d = &Drift{Ratio: ratio, Level: units.Round(100*q, 2), From: tl.Blocks[b].From}
		}
	}
	if d == nil || n < 2 {
		return nil
	}
	d.Blocks, d.Ratio = n, units.Round(d.Ratio, 3)
	return d
}

// quietHalf marks the blocks whose p90 is at or below the median block's
// (blocks with at least minBlockCalls successes; at least two).
func quietHalf(bl []HopBlock) []bool {
	var p90s []float64
	for _, hb := range bl {
		if len(hb.ok) >= minBlockCalls {
			p90s = append(p90s, quantile.Int64(hb.ok, 0.9))
		}
	}
	q := make([]bool, len(bl))
	if len(p90s) < 2 {
		return q
	}
	slices.Sort(p90s)
	med := p90s[(len(p90s)-1)/2]
	if len(p90s) == 2 {
		med = p90s[1]
	}
	for j, hb := range bl {
		q[j] = len(hb.ok) >= minBlockCalls && quantile.Int64(hb.ok, 0.9) <= med
	}
	return q
}

// restQuantile is the type-7 q-quantile of the multiset all − part (both
// ascending, part contained in all), without building it: the value of
// rank k of the difference is the smallest v in all with
// count_all(≤ v) − count_part(≤ v) > k.
func restQuantile(all, part []int64, q float64) float64 {
	n := len(all) - len(part)
	if n <= 0 {
		return math.NaN()
	}
	at := func(k int) float64 { // the k-th smallest (0-based) of the rest
		i := sort.Search(len(all), func(i int) bool {
			v := all[i]
			// The values of the rest at or below v: all's less part's
			// (monotone in v, so the search holds with ties).
			below := sort.Search(len(all), func(j int) bool { return all[j] > v }) -
				sort.Search(len(part), func(j int) bool { return part[j] > v })
			return below > k
		})
		return float64(all[min(i, len(all)-1)])
	}
	h := float64(n-1) * q
	lo := math.Floor(h)
	k := int(lo)
	v := at(k)
	if k+1 >= n || h == lo {
		return v
	}
	return v + (h-lo)*(at(k+1)-v)
}

// pooled is the ascending successful durations of the blocks keep
// selects: a filter of the hop's sorted keys when measureTimeline left
// them in its first block, else a sort.
func pooled(bl []HopBlock, keep func(int) bool) []int64 {
	var out []int64
	if len(bl) > 0 && bl[0].keys != nil {
		shift := bl[0].shift
		mask := uint64(1)<<shift - 1
		// keep is asked once per block, not once per key (a call each,
		// over every success of the hop).
		kept := make([]bool, len(bl))
		n, all := 0, true
		for j := range bl {
			if kept[j] = keep(j); kept[j] {
				n += len(bl[j].ok)
			} else {
				all = false
			}
		}
		out = make([]int64, 0, n)
		for _, k := range bl[0].keys {
			if all || kept[k&mask] {
				out = append(out, int64(k>>shift))
			}
		}
		return out
	}
	for j := range bl {
		if keep(j) {
			out = append(out, bl[j].ok...)
		}
	}
	slices.Sort(out)
	return out
}

// maxKeyed is the longest duration a (duration, block) key holds with
// shift bits of block: longer ones (over 2^(64−shift) ns, years) are
// taken as that.
func maxKeyed(shift uint) int64 { return int64(^uint64(0) >> shift >> 1) }

// RequestDrift is the drift of the requests' own latency (successes) over
// the timeline's quiet blocks, as measureDrift measures a hop's: what the
// budget carries. Blocks in which any hop had an incident are left out.
func (tl *Timeline) RequestDrift(incidents []Incident) *Drift {
	if tl == nil || !tl.Measured {
		return nil
	}
	bl := make([]HopBlock, len(tl.Blocks))
	for i, tb := range tl.Blocks {
		bl[i] = HopBlock{Successes: len(tb.ok), ok: tb.ok}
		for k := range incidents {
			if incidents[k].Start < tb.end && incidents[k].End > tb.start {
				bl[i].Incident = true
			}
		}
	}
	return measureDrift(bl, tl)
}

// msQ is the q-quantile of ascending ns values in ms, nil when empty.
func msQ(xs []int64, q float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	v := units.Round(units.MsOf(quantile.Int64(xs, q)), 4)
	return &v
}

func rfc3339(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339) }

// DefaultHeadroom is the drift headroom of logs too short or too sparse to
// measure drift in: on the two real days tailscope is validated on (Online
// Boutique and TrainTicket, 10-minute blocks) the median hop's tail moved
// 1.3–1.9× between quiet blocks, and fitted on one half of a day, timeouts
// ×2 brought the other half's losses outside incidents within the target.
const DefaultHeadroom = 2.0

// MaxHeadroom caps a hop's drift headroom: a hop whose tail moved more
// than this between quiet blocks moved by something a block cannot tell
// from an incident, and a timeout carries at most MaxExtrapolation × its
// slowest success anyway.
const MaxHeadroom = 4.0

// minDriftBlocks is the fewest blocks a hop's own drift is measured over
// before it counts for the hop; hops with fewer take the pooled headroom.
const minDriftBlocks = 3

// Headroom is how much a policy fitted on these logs must leave above each
// hop's tail for the drift between blocks (JSON `timeline.headroom`).
type Headroom struct {
	// Pooled is the median of the hops' own drift (each within 1 and
	// MaxHeadroom) over the call hops measured in at least
	// minDriftBlocks blocks, or DefaultHeadroom when none is: every
	// timeout carries at least it, since a hop quiet today may drift like
	// the others tomorrow.
	Pooled float64 `json:"pooled"`
	// Hops is how many hops the pooled value is the median of (0: the
	// default).
	Hops int `json:"hops"`
	// Source is "measured" or "default".
	Source string `json:"source"`
	// Records is how the extrapolated timeouts fared from one block to
	// the next (see Report.MeasureRecords); nil when no hop's could be
	// compared.
	Records *Records `json:"records,omitempty"`
}

// measureHeadroom sets the timeline's pooled headroom from the hops' drift.
func measureHeadroom(rep *Report) {
	tl := rep.Timeline
	var rs []float64
	for i := range rep.Hops {
		h := &rep.Hops[i]
		if h.Role == RoleCall && h.Drift != nil && h.Drift.Blocks >= minDriftBlocks {
			rs = append(rs, min(MaxHeadroom, max(1, h.Drift.Ratio)))
		}
	}
	if len(rs) == 0 {
		tl.Headroom = Headroom{Pooled: DefaultHeadroom, Source: "default"}
		return
	}
	slices.Sort(rs)
	med := rs[len(rs)/2]
	if len(rs)%2 == 0 {
		med = (rs[len(rs)/2-1] + rs[len(rs)/2]) / 2
	}
	tl.Headroom = Headroom{Pooled: units.Round(med, 3), Hops: len(rs), Source: "measured"}
}

// HeadroomOf is the drift headroom of hop h: its own drift when measured
// over enough blocks and above the pooled value, else the pooled value,
// within 1 and MaxHeadroom; and the words for the basis.
func (rep *Report) HeadroomOf(h *Hop) (float64, string) {
	tl := rep.Timeline
	if tl == nil {
		return 1, ""
	}
	pooled := tl.Headroom.Pooled
	if pooled == 0 {
		pooled = DefaultHeadroom
	}
	if !tl.Measured {
		return pooled, fmt.Sprintf("%s; ×%s headroom, the default for drift that short logs cannot measure", tl.Note, units.Decimal(pooled, 2))
	}
	if d := h.Drift; d != nil && d.Blocks >= minDriftBlocks && d.Ratio > pooled {
		f := min(MaxHeadroom, d.Ratio)
		why := fmt.Sprintf("between %s blocks this hop's p%s moved up to %s× (block from %s, %d blocks compared)",
			tl.Block, units.Decimal(d.Level, 1), units.Decimal(d.Ratio, 2), clock(d.From), d.Blocks)
		if f < d.Ratio {
			why += fmt.Sprintf(", carried up to the ×%s cap", units.Decimal(MaxHeadroom, 0))
		} else {
			why += ": the timeout carries that"
		}
		return f, why
	}
	why := fmt.Sprintf("×%s headroom, the median drift of %s between %s blocks", units.Decimal(pooled, 2), units.Count(tl.Headroom.Hops, "hop", "hops"), tl.Block)
	if tl.Headroom.Source == "default" {
		why = fmt.Sprintf("×%s headroom, the default (no hop has enough calls per %s block to measure its drift)", units.Decimal(pooled, 2), tl.Block)
	} else if d := h.Drift; d != nil && d.Blocks >= minDriftBlocks {
		why += fmt.Sprintf(" (this hop's own: %s×)", units.Decimal(d.Ratio, 2))
	} else {
		why += " (this hop has too few calls per block to measure its own)"
	}
	return pooled, why
}

// clock is an RFC 3339 time's hh:mm (UTC), or the text unchanged.
func clock(rfc string) string {
	t, err := time.Parse(time.RFC3339, rfc)
	if err != nil {
		return rfc
	}
	return t.UTC().Format("15:04")
}

// IncidentRisk is what today's incidents would cost tomorrow on hops a
// policy was not fitted for (JSON
// `recommended_policy.safety.predicted_false_timeouts.incidents`).
type IncidentRisk struct {
	// Incidents, Hops and Blocks count today's incidents, the hops they
	// were on and the blocks they covered, of Timeline blocks in all.
	Incidents int `json:"incidents"`
	// Events is how many separate times the incidents came (those
	// overlapping in time are one).
	Events   int `json:"events"`
	Hops     int `json:"hops"`
	Blocks   int `json:"blocks"`
	OfBlocks int `json:"of_blocks"`
	// Slowdown is the median incident's p99 over its baseline.
	Slowdown float64 `json:"slowdown"`
	// Requests is how many requests that succeeded had a call, during an
	// incident on its hop, slower than the hop's slowest quiet success ×
	// the pooled headroom × (1 + margin): what a policy fitted on quiet
	// blocks would have cut. Share is that over the successful requests.
	// Moved is the share today's incidents would cost on the hop most
	// requests call (see incidentRisk); Upper the 95% upper bound of the
	// larger of the two.
	Requests int     `json:"requests"`
	Share    float64 `json:"share"`
	Moved    float64 `json:"moved"`
	Upper    float64 `json:"upper"`
}

// incidentRisk measures IncidentRisk on reqs; nil without incidents.
func incidentRisk(rep *Report, reqs []*span.Request, share float64) *IncidentRisk {
	if len(rep.Incidents) == 0 || rep.Timeline == nil {
		return nil
	}
	tl := rep.Timeline
	pooled := tl.Headroom.Pooled
	if pooled == 0 {
		pooled = DefaultHeadroom
	}
	margin := rep.opt.Margin
	// A hop quiet today gets a timeout of about its slowest success × the
	// pooled headroom × (1 + margin), × the factor the records add to an
	// extrapolated timeout (Records.Factor, at a call's share of the
	// target): an incident like today's on such a hop is cut past that.
	factor := pooled * (1 + margin)
	if f, _ := tl.Headroom.Records.Factor(share); f > 1 {
		factor *= f
	}
	ceiling := map[string]float64{}
	byHop := map[string][]*Incident{}
	blocks := map[int64]bool{}
	var slow []float64
	for k := range rep.Incidents {
		in := &rep.Incidents[k]
		byHop[in.Hop] = append(byHop[in.Hop], in)
		slow = append(slow, in.Slowdown)
		for t := in.Start; t < in.End; t += tl.size {
			blocks[t] = true
		}
	}
	for i := range rep.Hops {
		h := &rep.Hops[i]
		if byHop[h.Hop] == nil {
			continue
		}
		var quiet int64
		for _, hb := range h.Blocks {
			if !hb.Incident && len(hb.ok) > 0 {
				quiet = max(quiet, hb.ok[len(hb.ok)-1])
			}
		}
		ceiling[h.Hop] = float64(quiet) * factor
	}
	ir := &IncidentRisk{Incidents: len(rep.Incidents), Hops: len(byHop), Blocks: len(blocks), OfBlocks: len(tl.Blocks)}
	slices.Sort(slow)
	ir.Slowdown = slow[len(slow)/2]
	// Per incident: its hop's calls in the window and how many of them a
	// policy fitted on quiet blocks would have cut; per hop, how many
	// successful requests call it (its reach).
	type tally struct{ calls, cut int }
	per := make([]tally, len(rep.Incidents))
	idx := map[*Incident]int{}
	for k := range rep.Incidents {
		idx[&rep.Incidents[k]] = k
	}
	reach := map[string]int{}
	inWindow := make([]int, len(rep.Incidents))
	ok := 0
	for _, r := range reqs {
		if r.Failed {
			continue
		}
		ok++
		for k := range rep.Incidents {
			if rep.Incidents[k].Covers(r.Start) {
				inWindow[k]++
			}
		}
		hit := false
		seen := map[string]bool{}
		EachCall(r.Calls, func(c *span.Call) {
			if c.Role != span.RoleCall {
				return
			}
			if !seen[c.Hop] {
				seen[c.Hop] = true
				reach[c.Hop]++
			}
			lim, known := ceiling[c.Hop]
			for _, in := range byHop[c.Hop] {
				if !in.Covers(r.Start) {
					continue
				}
				k := idx[in]
				for _, a := range c.Attempts {
					if a.Span.Failed() {
						continue
					}
					per[k].calls++
					if !known || lim > 0 && float64(a.Span.Duration) > lim {
						per[k].cut++
						hit = true
					}
				}
			}
		})
		if hit {
			ir.Requests++
		}
	}
	if ok == 0 {
		return nil
	}
	// "Incidents like today's on other hops": each of today's incidents
	// (those that overlap in time taken as one event, at its worst hop's
	// cut share) moved to the hop that most requests call. Its cost is
	// the share of requests in its window × the share of the hop's calls
	// it slowed past a quiet fit × that hop's reach. Today's hops are one
	// placement of today's incidents; the bound takes the worse of the two.
	maxReach := 0
	for _, n := range reach {
		maxReach = max(maxReach, n)
	}
	order := make([]int, len(rep.Incidents))
	for k := range order {
		order[k] = k
	}
	sort.Slice(order, func(i, j int) bool { return rep.Incidents[order[i]].Start < rep.Incidents[order[j]].Start })
	moved, events := 0.0, 0
	for i := 0; i < len(order); {
		events++
		end, worst, window := rep.Incidents[order[i]].End, 0.0, 0
		j := i
		for ; j < len(order) && rep.Incidents[order[j]].Start < end; j++ {
			k := order[j]
			end = max(end, rep.Incidents[k].End)
			if per[k].calls > 0 {
				worst = max(worst, float64(per[k].cut)/float64(per[k].calls))
			}
			window = max(window, inWindow[k])
		}
		moved += float64(window) / float64(ok) * worst * float64(maxReach) / float64(ok)
		i = j
	}
	ir.Events = events
	ir.Moved = units.Round(moved, 6)
	count := max(ir.Requests, int(math.Round(moved*float64(ok))))
	ir.Share = units.Round(float64(ir.Requests)/float64(ok), 6)
	ir.Upper = units.Round(bound.BetaUpper(RiskLevel, count, ok), 6)
	return ir
}

// blockText is a block length as a person writes it: "10m", "1h30m",
// "45s".
func blockText(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0 && d > time.Hour:
		return fmt.Sprintf("%dh%dm", d/time.Hour, d%time.Hour/time.Minute)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return units.Duration(d)
}
