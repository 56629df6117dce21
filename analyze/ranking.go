package analyze

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/span"
)

// Worst first: which hops explain the slow and the failed requests.
//
// The tail is the requests at or above the request p99 and the failed
// ones; the others are ordinary. Each request's critical path is split by
// hop (see critpath.go), so a hop is charged only the time the request
// actually waited on it, not the time of the calls below it. A hop's score
// is the time it holds on the tail requests' critical paths beyond what it
// holds on an ordinary request's on average:
//
//	score(h) = Σ_{r in tail} path_r(h) − |tail| × mean_{r ordinary} path_r(h)
//	         + Σ_{r in tail, failed} max(0, p99 − latency_r) if r failed in h
//
// The second term counts a failed request as at least as bad as a request
// at the p99, charged to the hop its failure came from (the deepest failed
// call down the chain of failed calls): a hop that fails fast still ranks.
// Scores are in ms; hops with a score of zero or less are not listed; share
// is the score over the sum of the listed scores. The ranking orders the
// hop table (Report.SortHops).

// DominantShare is the share of the ranking at which its first hop
// dominates it. A hop that is always slow (a real Online Boutique frontend
// call was first in 14 of 17 minutes, a minute without any fault among
// them) ranks first whether or not anything broke, so the reports then say
// so and point to --compare and --compare-window, which rank what changed.
const DominantShare = 0.5

// TailExamples is how many example trace ids a ranked hop carries.
const TailExamples = 3

// TailRankMax is the most hops the ranking lists (shares are of the total
// over every hop with a positive score).
const TailRankMax = 100

// TailEntry is one hop of the worst-first ranking.
type TailEntry struct {
	Hop string `json:"hop"`
	// Score is the tail requests' critical-path time the hop accounts for
	// beyond its usual, plus its failures, ms (see above).
	Score float64 `json:"score"`
	// Share is Score over the sum of the ranking's scores.
	Share  float64 `json:"share"`
	Reason string  `json:"reason"`
	// Examples are trace ids of the tail requests where the hop held the
	// most critical-path time, most first.
	Examples []string `json:"examples"`
	// TailPathMs and UsualPathMs are the hop's mean time on the critical
	// path of a tail request and of an ordinary request.
	TailPathMs  float64 `json:"tail_path_ms"`
	UsualPathMs float64 `json:"usual_path_ms"`
	// Failures counts the failed tail requests whose failure came from
	// the hop.
	Failures int `json:"failures"`
}

// TailRequests describes the requests the ranking explains.
type TailRequests struct {
	// Count is the number of tail requests: Slow successful ones at or
	// above AboveMs (the request p99) and Failed ones.
	Count   int      `json:"count"`
	Slow    int      `json:"slow"`
	Failed  int      `json:"failed"`
	AboveMs *float64 `json:"above_ms"`
	// Examples are the slowest tail requests' trace ids.
	Examples []string `json:"examples"`
}

// WhereTailComesFrom adds what the analysis says about where the tail comes from:
// the client/server gaps, then the worst-first ranking, which orders the
// hop table.
func WhereTailComesFrom(rep *Report, reqs []*span.Request) {
	gaps(rep, reqs)
	rankTail(rep, reqs)
}

// rankTail walks the requests' critical paths, keeps them in the report
// (for Compare) and fills TailRanking, TailRequests and the hop order.
func rankTail(rep *Report, reqs []*span.Request) {
	names := make([]string, len(rep.Hops))
	for i, h := range rep.Hops {
		names[i] = h.Hop
	}
	p := criticalPaths(names, reqs)
	rep.paths = p
	rep.TailRanking = []TailEntry{}
	rep.HopOrder = "rank"
	n := len(p.reqs)
	if n == 0 {
		rep.SortHops("rank")
		return
	}
	lats := make([]int64, n)
	for i, r := range p.reqs {
		lats[i] = r.lat
	}
	quantile.SortInt64(lats)
	p99 := quantile.Int64(lats, 0.99)
	inTail := func(r *reqPath) bool { return r.failed || float64(r.lat) >= p99 }
	sums := sumPaths(p, p99, inTail)
	rep.TailRequests = sums.tr
	nOrd, nTail := n-sums.tr.Count, sums.tr.Count
	if nTail == 0 {
		rep.SortHops("rank")
		return
	}
	usual := make([]float64, len(p.hops))
	for h := range usual {
		if nOrd > 0 {
			usual[h] = sums.ordinary[h] / float64(nOrd)
		}
	}
	rank := rankedEntries(rep, p, sums, usual, nTail)
	slowed, inSet := slowedByRanked(p, inTail, rank, usual)
	tailReasons(rep, reqs, inTail, func(i, j int) bool { return slowed[int64(i)*TailRankMax+int64(j)] }, inSet)
	rep.SortHops("rank")
}

// pathSums is what the requests' critical paths hold per hop (indexed as
// paths.hops): the ordinary requests' time, the tail requests' time, the
// penalty of the failed tail requests whose failure came from the hop,
// their count, and example traces; and the tail requests themselves.
type pathSums struct {
	ordinary, tail, penalty []float64
	failures                []int
	ex                      [][]example
	tr                      *TailRequests
}

// sumPaths adds up the critical paths of the ordinary and the tail
// requests (those inTail: failed, or at or above p99) by hop.
func sumPaths(p *paths, p99 float64, inTail func(*reqPath) bool) pathSums {
	H := len(p.hops)
	s := pathSums{ordinary: make([]float64, H), tail: make([]float64, H), penalty: make([]float64, H), failures: make([]int, H), ex: make([][]example, H),
		tr: &TailRequests{AboveMs: units.RoundPtr(units.MsOf(p99), 3), Examples: []string{}}}
	tr := s.tr
	var slowest []example
	for i := range p.reqs {
		r := &p.reqs[i]
		if !inTail(r) {
			for _, ph := range r.path {
				s.ordinary[ph.hop] += float64(ph.ns)
			}
			continue
		}
		tr.Count++
		if r.failed {
			tr.Failed++
		} else {
			tr.Slow++
		}
		slowest = topExamples(slowest, example{r.trace, float64(r.lat)}, TailExamples)
		for _, ph := range r.path {
			s.tail[ph.hop] += float64(ph.ns)
			s.ex[ph.hop] = topExamples(s.ex[ph.hop], example{r.trace, float64(ph.ns)}, TailExamples)
		}
		if r.failed && r.origin >= 0 {
			s.failures[r.origin]++
			s.penalty[r.origin] += math.Max(0, p99-float64(r.lat))
			if len(s.ex[r.origin]) == 0 {
				s.ex[r.origin] = topExamples(s.ex[r.origin], example{r.trace, 0}, TailExamples)
			}
		}
	}
	for _, e := range slowest {
		tr.Examples = append(tr.Examples, e.trace)
	}
	return s
}

// rankedEntries scores each hop (its tail time beyond its usual, plus its
// failures' penalty), fills rep.TailRanking with the positive scores,
// highest first (at most TailRankMax), and returns each ranked hop's
// place in it.
func rankedEntries(rep *Report, p *paths, s pathSums, usual []float64, nTail int) map[int32]int {
	type cand struct {
		h     int32
		score float64
	}
	var cands []cand
	var total float64
	for h := range p.hops {
		if score := s.tail[h] - float64(nTail)*usual[h] + s.penalty[h]; score > 0 {
			cands = append(cands, cand{int32(h), score})
			total += score
		}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return strings.Compare(p.hops[a.h], p.hops[b.h])
	})
	cands = cands[:min(len(cands), TailRankMax)]
	rank := make(map[int32]int, len(cands))
	for j, c := range cands {
		h := c.h
		rank[h] = j
		e := TailEntry{Hop: p.hops[h], Score: round3(units.MsOf(c.score)), Share: units.Round(c.score/total, 4),
			TailPathMs: round3(units.MsOf(s.tail[h] / float64(nTail))), UsualPathMs: round3(units.MsOf(usual[h])), Failures: s.failures[h], Examples: []string{}}
		for _, x := range s.ex[h] {
			e.Examples = append(e.Examples, x.trace)
		}
		rep.TailRanking = append(rep.TailRanking, e)
	}
	return rank
}

// slowedByRanked marks the tail requests each ranked hop slowed: where it
// held at least twice its usual time (and 1ms more), or where they failed
// in it. A mark is request × TailRankMax + place; inSet counts the
// requests marked for each place.
func slowedByRanked(p *paths, inTail func(*reqPath) bool, rank map[int32]int, usual []float64) (map[int64]bool, []int) {
	slowed := map[int64]bool{}
	inSet := make([]int, len(rank))
	mark := func(i, j int) {
		if k := int64(i)*TailRankMax + int64(j); !slowed[k] {
			slowed[k] = true
			inSet[j]++
		}
	}
	for i := range p.reqs {
		r := &p.reqs[i]
		if !inTail(r) {
			continue
		}
		for _, ph := range r.path {
			if j, ok := rank[ph.hop]; ok && float64(ph.ns)-usual[ph.hop] >= max(usual[ph.hop], float64(time.Millisecond)) {
				mark(i, j)
			}
		}
		if j, ok := rank[r.origin]; ok && r.failed {
			mark(i, j)
		}
	}
	return slowed, inSet
}

// tailReasons writes each ranked hop's reason: its calls' p50 in the tail
// requests it slowed against the ordinary requests, its critical-path time,
// its failures.
func tailReasons(rep *Report, reqs []*span.Request, inTail func(*reqPath) bool, slowed func(req, rank int) bool, inSet []int) {
	p, tr := rep.paths, rep.TailRequests
	want := make(map[string]int, len(rep.TailRanking))
	for i, e := range rep.TailRanking {
		want[e.Hop] = i
	}
	K := len(rep.TailRanking)
	tail, other := make([][]int64, K), make([][]int64, K)
	for i, r := range reqs {
		t := inTail(&p.reqs[i])
		put := func(hop string, ns int64) {
			j, ok := want[hop]
			switch {
			case !ok:
			case !t:
				other[j] = append(other[j], ns)
			case slowed(i, j):
				tail[j] = append(tail[j], ns)
			}
		}
		if r.Root != nil {
			put(r.Root.Hop, r.Root.Duration)
		}
		EachCall(r.Calls, func(c *span.Call) { put(c.Hop, c.End()-c.Start()) })
	}
	which := tailWhich(tr)
	d := func(ns float64) string { return units.Duration(time.Duration(ns)) }
	for j := range rep.TailRanking {
		e := &rep.TailRanking[j]
		var b strings.Builder
		quantile.SortInt64(tail[j])
		quantile.SortInt64(other[j])
		in := which
		if inSet[j] < tr.Count {
			in = fmt.Sprintf("%d of %s", inSet[j], which)
		}
		switch {
		case len(tail[j]) > 0 && len(other[j]) > 0:
			fmt.Fprintf(&b, "in %s its calls took %s at p50 against %s in ordinary requests", in, d(quantile.Int64(tail[j], 0.5)), d(quantile.Int64(other[j], 0.5)))
		case len(tail[j]) > 0:
			fmt.Fprintf(&b, "in %s its calls took %s at p50; ordinary requests do not call it", in, d(quantile.Int64(tail[j], 0.5)))
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "it holds %s of a tail request's critical path on average against %s of an ordinary one's", units.Millis(e.TailPathMs), units.Millis(e.UsualPathMs))
		if e.Failures > 0 {
			fmt.Fprintf(&b, "; %d of the %d failed requests failed in it", e.Failures, tr.Failed)
		}
		e.Reason = b.String()
	}
}

// tailWhich names the tail requests for a sentence: "the 2 slowest
// requests (≥ 9.84s) and the 19 failed ones".
func tailWhich(tr *TailRequests) string {
	above := ""
	if tr.AboveMs != nil {
		above = " (≥ p99 " + units.Millis(*tr.AboveMs) + ")"
	}
	slow := fmt.Sprintf("the %d slowest requests%s", tr.Slow, above)
	if tr.Slow == 1 {
		slow = "the slowest request" + above
	}
	switch {
	case tr.Failed == 0:
		return slow
	case tr.Slow == 0 && tr.Failed == 1:
		return "the failed request"
	case tr.Slow == 0:
		return fmt.Sprintf("the %d failed requests", tr.Failed)
	case tr.Failed == 1:
		return slow + " and the failed one"
	}
	return fmt.Sprintf("%s and the %d failed ones", slow, tr.Failed)
}

// example is a trace id and the value it is an example of.
type example struct {
	trace string
	v     float64
}

// topExamples keeps the k examples with the largest values (the first
// seen on ties), largest first; k is small.
func topExamples(xs []example, x example, k int) []example {
	if x.trace == "" {
		return xs
	}
	for _, y := range xs {
		if y.trace == x.trace {
			return xs
		}
	}
	i := len(xs)
	for i > 0 && xs[i-1].v < x.v {
		i--
	}
	if i >= k {
		return xs
	}
	xs = slices.Insert(xs, i, x)
	if len(xs) > k {
		xs = xs[:k]
	}
	return xs
}

// SortHops orders the hop table: "rank" puts the hops of the worst-first
// ranking first, in its order, and the others after them by name; "name"
// is by name alone. HopOrder records the choice. Linear when the hops are
// in name order already (as Measure makes them); else one sort of indices.
func (r *Report) SortHops(by string) {
	if by != "name" {
		by = "rank"
	}
	r.HopOrder = by
	n := len(r.Hops)
	sorted := true
	for i := 1; i < n && sorted; i++ {
		sorted = r.Hops[i-1].Hop < r.Hops[i].Hop
	}
	pos := map[string]int32{}
	if by == "rank" {
		for i, e := range r.TailRanking {
			pos[e.Hop] = int32(i + 1)
		}
	}
	if sorted && len(pos) == 0 {
		return
	}
	key := make([]int32, n)
	idx := make([]int32, n)
	for i := range r.Hops {
		key[i], idx[i] = pos[r.Hops[i].Hop], int32(i)
	}
	if sorted {
		// Ranked hops to the front in rank order, the rest keep theirs.
		front := make([]int32, len(pos))
		for i := range front {
			front[i] = -1
		}
		k := 0
		for i := range n {
			if key[i] > 0 {
				front[key[i]-1] = int32(i)
			} else {
				idx[k] = int32(i)
				k++
			}
		}
		rest := slices.Clone(idx[:k])
		idx = idx[:0]
		for _, i := range front {
			if i >= 0 {
				idx = append(idx, i)
			}
		}
		idx = append(idx, rest...)
	} else {
		names := make([]string, n)
		for i := range r.Hops {
			names[i] = r.Hops[i].Hop
		}
		slices.SortFunc(idx, func(a, b int32) int {
			ka, kb := key[a], key[b]
			switch {
			case ka != 0 && kb != 0:
				return cmp.Compare(ka, kb)
			case ka != 0:
				return -1
			case kb != 0:
				return 1
			}
			return strings.Compare(names[a], names[b])
		})
	}
	out := make([]Hop, n)
	for i, j := range idx {
		out[i] = r.Hops[j]
	}
	copy(r.Hops, out)
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
