package analyze

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/secret"
	"github.com/tailscope/tailscope/span"
)

// State is an Accum's content in plain fields: what a partial summary
// writes down (package summary) so that accumulators filled on different
// machines can be merged into the one a single reader of all their inputs
// would have filled. Each piece of per-hop state has its own field, so
// that the summary can give each its own section.
type State struct {
	// SampleSpans and Limit are the sample's size bound (Limit is above
	// SampleSpans when one trace alone outgrew it); Level is the sample's
	// level (it keeps the traces whose hash is below 2^64 >> Level).
	SampleSpans int
	Limit       int
	Level       uint
	// Total counts the spans added, Loose those without a trace id.
	Total int64
	Loose uint64
	// Hops is the per-hop state, by name.
	Hops []HopState
	// Sample is the trace sample in input order.
	Sample []Sampled
}

// HopState is one hop's accumulated attempts.
type HopState struct {
	Name string
	// Attempts counts every attempt, Failed the failed ones, Cut those the
	// span marks as cut by a timeout.
	Attempts, Failed, Cut int
	// The durations of successful attempts, of failures marked as cut,
	// and of other failures.
	Succ, Flagged, Other quantile.State
	// First is what the hop's first span said besides its name (for the
	// unbounded-hops rule).
	First HopFirst
	// Examples are the traces behind the hop's figures.
	Examples HopExampleState
	// Attr is the hop's attribution by attribute key and value, by key;
	// HasAttr is false when no span of the hop had attributes.
	HasAttr bool
	Attr    []AttrKey
	// Times are the hop's attempts with their start, for the timeline
	// (all of them, or the 1 in 2^Level that the hash keeps; see
	// hoptimes.go).
	Times TimesState
}

// TimesState is a hop's attempt times: Level, and the kept attempts'
// starts (unix ns) and durations (ns; for a failure −1 − its duration).
type TimesState struct {
	Level uint8
	At    []int64
	D     []int64
}

// MaxHopTimes is the most attempts a hop keeps with their times.
const MaxHopTimes = maxHopTimes

// HopFirst is a hop's first span's service, name and route template
// (RouteKey: the attribute it came from).
type HopFirst struct{ Service, Name, Route, RouteKey string }

// Example is one example attempt: its duration and trace id.
type Example struct {
	Duration int64
	Trace    string
}

// HopExampleState is the longest attempt, cut attempt and other failure,
// and the shortest other failure.
type HopExampleState struct{ Slowest, Flagged, Other, FastFail []Example }

// AttrKey is one attribute key of a hop: dropped when it had more than
// AttrMaxValues values, else its values by value.
type AttrKey struct {
	Key     string
	Dropped bool
	Values  []AttrValue
}

// AttrValue is one value of a key on a hop: its attempts, failures and
// flagged (cut) attempts, the durations of the others as counts by
// sketch bin (Bins[i] is bin Lo+i; Zero counts durations of 0), and the
// slowest attempts and failures.
type AttrValue struct {
	Value                     string
	Attempts, Failed, Flagged int
	Zero, Lo                  int
	Bins                      []uint32
	Slow, Fail                []Example
}

// Sampled is one span of the trace sample.
type Sampled struct {
	Span span.Span
	// Hash places the span's trace in the sample: TraceHash of its trace
	// id, or, for a span without one, a number of its own.
	Hash uint64
	// File is the index of the input file the span came from (see
	// Accum.SetFile).
	File int
}

// TraceHash is the hash the trace sample keeps a trace by: fixed, so
// that every machine keeps the same traces.
func TraceHash(id string) uint64 { return hashID(id) }

// canonicalTimes is a hop's attempt times (start and duration, as
// hopTimes keeps them) ordered by start, then duration: what a summary
// writes. The order they are kept in depends on how a parallel reader
// split the input between its goroutines (the analysis never reads it),
// and a summary of the same logs must be the same bytes. Times already in
// that order (a sequential reader's, a summary's own) are returned as
// they are; otherwise sorted copies.
func canonicalTimes(at, d []int64) ([]int64, []int64) {
	less := func(i, j int) bool { return at[i] < at[j] || at[i] == at[j] && d[i] < d[j] }
	sorted := true
	for i := 1; i < len(at) && sorted; i++ {
		sorted = !less(i, i-1)
	}
	if sorted {
		return at, d
	}
	idx := make([]int32, len(at))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(x, y int32) int {
		switch {
		case less(int(x), int(y)):
			return -1
		case less(int(y), int(x)):
			return 1
		}
		return 0
	})
	oa, od := make([]int64, len(at)), make([]int64, len(d))
	for k, i := range idx {
		oa[k], od[k] = at[i], d[i]
	}
	return oa, od
}

// State returns a's content. It shares the digests' slices with a: a
// must not change while the State is in use.
func (a *Accum) State() *State {
	a.settleAll()
	s := &State{SampleSpans: a.SampleSpans, Limit: a.limit, Level: a.level, Total: a.total, Loose: a.loose}
	if s.Limit == 0 {
		s.Limit = s.SampleSpans
	}
	for _, name := range slices.Sorted(maps.Keys(a.hops)) {
		h := a.hops[name]
		hs := HopState{Name: name, Attempts: h.n, Failed: h.failed, Cut: h.cut,
			Succ: h.succ.State(), Flagged: h.flagged.State(), Other: h.other.State(),
			First:    HopFirst{h.first.service, h.first.name, h.first.route, h.first.routeKey},
			Examples: HopExampleState{exOut(h.ex.slowest.list()), exOut(h.ex.flagged.list()), exOut(h.ex.other.list()), exOut(h.ex.fastFail.list())}}
		if h.at != nil {
			hs.HasAttr, hs.Attr = true, attrOut(h.at)
		}
		at, d := canonicalTimes(h.times.at, h.times.d)
		hs.Times = TimesState{Level: h.times.level, At: at, D: d}
		s.Hops = append(s.Hops, hs)
	}
	spans := a.Spans()
	s.Sample = make([]Sampled, len(spans))
	for i := range spans {
		s.Sample[i] = Sampled{Span: spans[i], Hash: a.hashes[i], File: int(a.files[i])}
	}
	return s
}

// FromState rebuilds an Accum from s, checking that s is one an Accum can
// have reached: per hop, counts that match the digests and digests in the
// form their count implies; attempts that add up to Total; a sample whose
// traces all fall under its level, hashed as TraceHash says. A summary
// whose numbers were changed is refused here even when its checksum was
// recomputed. It takes ownership of s's slices.
func FromState(s *State) (*Accum, error) {
	if s.SampleSpans <= 0 || s.Limit < s.SampleSpans {
		return nil, fmt.Errorf("sample size %d (limit %d) out of range", s.SampleSpans, s.Limit)
	}
	if s.Level > 63 {
		return nil, fmt.Errorf("sample level %d out of range", s.Level)
	}
	if s.Total < 0 || s.Loose > uint64(s.Total) || int64(len(s.Sample)) > s.Total {
		return nil, fmt.Errorf("%d spans, %d without a trace id, %d sampled: counts do not add up", s.Total, s.Loose, len(s.Sample))
	}
	a := NewAccum(s.SampleSpans)
	a.limit, a.level, a.total, a.loose = s.Limit, s.Level, s.Total, s.Loose
	a.noSpec = true // its spans were never ranked here (see Expect)
	a.shared.Store(uint32(s.Level))
	var sum int64
	for i := range s.Hops {
		hs := &s.Hops[i]
		if i > 0 && hs.Name <= s.Hops[i-1].Name {
			return nil, fmt.Errorf("hop %q: hops out of order or repeated", hs.Name)
		}
		h, err := hopFromState(hs)
		if err != nil {
			return nil, fmt.Errorf("hop %q: %w", hs.Name, err)
		}
		a.hops[hs.Name] = h
		sum += int64(h.n)
	}
	if sum != s.Total {
		return nil, fmt.Errorf("the hops' attempts add up to %d, not the %d spans read", sum, s.Total)
	}
	a.spans, a.frozen = make([]span.Span, len(s.Sample)), true
	a.hashes = make([]uint64, len(s.Sample))
	a.files = make([]int32, len(s.Sample))
	for i := range s.Sample {
		x := &s.Sample[i]
		sp := &x.Span
		if sp.TraceID != "" && x.Hash != hashID(sp.TraceID) {
			return nil, fmt.Errorf("sampled span %d: hash %#x is not its trace id's", i+1, x.Hash)
		}
		if s.Level > 0 && x.Hash>>(64-s.Level) != 0 {
			return nil, fmt.Errorf("sampled span %d: its trace is not under the sample's level %d", i+1, s.Level)
		}
		if x.File < 0 || x.File > 1<<31-1 {
			return nil, fmt.Errorf("sampled span %d: file %d out of range", i+1, x.File)
		}
		if sp.Duration < 0 || a.hops[sp.Hop] == nil {
			return nil, fmt.Errorf("sampled span %d: duration %d or hop %q not among the hops", i+1, sp.Duration, sp.Hop)
		}
		a.spans[i], a.hashes[i], a.files[i] = *sp, x.Hash, int32(x.File)
	}
	return a, nil
}

func exOut(xs []ex) []Example {
	var out []Example
	for _, x := range xs {
		out = append(out, Example{x.d, x.trace})
	}
	return out
}

// exIn checks examples: at most k, with trace ids, in their order.
func exIn(xs []Example, k int) ([]ex, error) {
	if len(xs) > k {
		return nil, fmt.Errorf("%d examples, over %d", len(xs), k)
	}
	var out []ex
	for i, x := range xs {
		e := ex{x.Duration, x.Trace}
		if x.Trace == "" || x.Duration < 0 || i > 0 && !out[i-1].before(e) {
			return nil, errors.New("examples out of order or without a trace")
		}
		out = append(out, e)
	}
	return out, nil
}

func attrOut(a *hopAttr) []AttrKey {
	a.flush()
	out := make([]AttrKey, 0, len(a.keys))
	for _, k := range slices.Sorted(maps.Keys(a.keys)) {
		ka := a.keys[k]
		ak := AttrKey{Key: k, Dropped: ka.dropped}
		for _, va := range ka.sorted() {
			v := va.name
			ak.Values = append(ak.Values, AttrValue{Value: v, Attempts: va.n, Failed: va.failed, Flagged: va.flag,
				Zero: va.zero, Lo: va.lo, Bins: va.bins, Slow: exOut(va.slow), Fail: exOut(va.fail)})
		}
		out = append(out, ak)
	}
	return out
}

// attrIn rebuilds a hop's attribution, checking it against the bounds
// and the hop's own counts.
func attrIn(keys []AttrKey, hopN int) (*hopAttr, error) {
	if len(keys) > AttrMaxKeys {
		return nil, fmt.Errorf("%d attribute keys, over %d", len(keys), AttrMaxKeys)
	}
	a := &hopAttr{keys: map[string]*keyAttr{}}
	for i, k := range keys {
		if k.Key == "" || i > 0 && k.Key <= keys[i-1].Key || len(k.Values) > AttrMaxValues || k.Dropped && len(k.Values) > 0 {
			return nil, fmt.Errorf("attribute key %q: out of order, or too many values", k.Key)
		}
		ka := &keyAttr{name: k.Key, dropped: k.Dropped, secret: secret.Key(k.Key)}
		for j, v := range k.Values {
			// A summary made before values were redacted may hold a
			// credential: shown, and merged, as the logs would give it now.
			v.Value = secret.Redacted
			if !ka.secret {
				v.Value = secret.Scrub(k.Values[j].Value)
			}
			if j > 0 && k.Values[j].Value <= k.Values[j-1].Value || len(k.Values[j].Value) > AttrMaxValueLen {
				return nil, fmt.Errorf("attribute %s: values out of order or too long", k.Key)
			}
			sum := v.Flagged + v.Zero
			for _, c := range v.Bins {
				sum += int(c)
			}
			if v.Attempts > hopN || v.Failed > v.Attempts || v.Flagged < 0 || v.Zero < 0 || sum != v.Attempts ||
				v.Lo < 0 || len(v.Bins) > quantile.MaxBin+1 || v.Lo > quantile.MaxBin+1-len(v.Bins) {
				return nil, fmt.Errorf("attribute %s=%q: counts do not add up", k.Key, v.Value)
			}
			va := &valAttr{name: v.Value, n: v.Attempts, failed: v.Failed, flag: v.Flagged, zero: v.Zero, lo: v.Lo, bins: v.Bins}
			var err error
			if va.slow, err = exIn(v.Slow, AttrExamples); err != nil {
				return nil, fmt.Errorf("attribute %s=%q: %w", k.Key, v.Value, err)
			}
			if va.fail, err = exIn(v.Fail, AttrExamples); err != nil {
				return nil, fmt.Errorf("attribute %s=%q: %w", k.Key, v.Value, err)
			}
			if same := ka.find(va.name); same != nil {
				same.merge(va)
			} else {
				ka.insert(va)
			}
		}
		a.keys[k.Key] = ka
	}
	return a, nil
}

func hopFromState(s *HopState) (*hopAcc, error) {
	h := &hopAcc{name: s.Name, n: s.Attempts, failed: s.Failed, cut: s.Cut,
		first: hopFirst{service: s.First.Service, name: s.First.Name, route: s.First.Route, routeKey: s.First.RouteKey}}
	for _, x := range []struct {
		dst *ex
		src []Example
	}{{&h.ex.slowest, s.Examples.Slowest}, {&h.ex.flagged, s.Examples.Flagged}, {&h.ex.other, s.Examples.Other}, {&h.ex.fastFail, s.Examples.FastFail}} {
		xs, err := exIn(x.src, 1)
		if err != nil {
			return nil, fmt.Errorf("examples: %w", err)
		}
		if len(xs) == 1 {
			*x.dst = xs[0]
		}
	}
	if err := timesIn(&s.Times, s.Attempts); err != nil {
		return nil, err
	}
	h.times = hopTimes{at: s.Times.At, d: s.Times.D, level: s.Times.Level}
	h.settled = len(h.times.d) // the state's digest holds its successes
	if s.HasAttr {
		at, err := attrIn(s.Attr, s.Attempts)
		if err != nil {
			return nil, err
		}
		h.at = at
	} else if len(s.Attr) > 0 {
		return nil, errors.New("attribution without its flag")
	}
	var err error
	for _, d := range []struct {
		what string
		dst  *quantile.Digest
		src  quantile.State
	}{{"successes", &h.succ, s.Succ}, {"cut failures", &h.flagged, s.Flagged}, {"other failures", &h.other, s.Other}} {
		if *d.dst, err = quantile.FromState(d.src); err != nil {
			return nil, fmt.Errorf("%s: %w", d.what, err)
		}
		if sketched := !d.dst.Exact(); sketched != (h.n > quantile.ExactLimit) {
			return nil, fmt.Errorf("%s: %d attempts, but the digest is %s", d.what, h.n, map[bool]string{true: "a sketch", false: "exact"}[sketched])
		}
	}
	if h.n != h.succ.N()+h.flagged.N()+h.other.N() || h.failed != h.flagged.N()+h.other.N() || h.cut != h.flagged.N() {
		return nil, errors.New("attempt, failure and cut counts do not match the durations")
	}
	return h, nil
}

// Absorb adds o's content to a, as if a's reader had read o's inputs too:
// per hop the attempts and digests are merged exactly (the order of merges
// does not matter), and the trace samples are combined. Two samples may
// have reached different levels: the merge keeps the traces under the
// higher level (a trace hashes the same everywhere, so each side holds
// every span of those traces it read) and raises the level further while
// they do not fit, as Add does. The result is the sample a reader of all
// the inputs keeps: the level at which all their traces fit is the same
// whichever way they are split.
//
// aFile and oFile give, for each file index of a and of o, its index in
// the merged list of files: the merged sample is in that order (a's
// spans first within a file), which is input order when each file was
// read on one side. The smaller SampleSpans of the two bounds the result.
// o must not be used afterwards.
func (a *Accum) Absorb(o *Accum, aFile, oFile []int) error {
	for _, x := range []struct {
		files []int32
		to    []int
	}{{a.files, aFile}, {o.files, oFile}} {
		for i, f := range x.files {
			if int(f) >= len(x.to) {
				return fmt.Errorf("sampled span %d: file %d of %d", i+1, f, len(x.to))
			}
		}
	}
	a.total += o.total
	a.loose += o.loose
	names := make([]string, 0, len(o.hops))
	for name := range o.hops {
		names = append(names, name)
	}
	sort.Strings(names)
	// A hop's first span is taken from the side whose first file comes
	// first (exact when the hop is in that file).
	oFirst := len(oFile) > 0 && (len(aFile) == 0 || slices.Min(oFile) < slices.Min(aFile))
	for _, name := range names {
		h, oh := a.hops[name], o.hops[name]
		if h == nil {
			a.hops[name] = oh
			continue
		}
		first := oh.first
		h.merge(oh)
		if oFirst {
			h.first = first
		}
	}
	a.last = nil

	// The samples merge as spans (a summary's are; a sample read here is
	// built from its rows).
	a.freeze()
	o.freeze()
	level := max(a.level, o.level)
	// Both samples drop the traces above the new level, in place, and
	// take their merged file numbers.
	for side, x := range []*Accum{a, o} {
		to := aFile
		if side == 1 {
			to = oFile
		}
		keep := 0
		for i, h := range x.hashes {
			if level == 0 || h>>(64-level) == 0 {
				x.spans[keep], x.hashes[keep], x.files[keep] = x.spans[i], x.hashes[i], int32(to[x.files[i]])
				keep++
			}
		}
		clear(x.spans[keep:])
		x.spans, x.hashes, x.files = x.spans[:keep], x.hashes[:keep], x.files[:keep]
		x.sortByFile()
	}
	if len(a.files) == 0 || len(o.files) == 0 || a.files[len(a.files)-1] <= o.files[0] {
		// o's files all come after a's (merging parts in file order):
		// append, as reading o's files next would have.
		a.spans = append(a.spans, o.spans...)
		a.hashes = append(a.hashes, o.hashes...)
		a.files = append(a.files, o.files...)
	} else {
		a.interleave(o)
	}
	a.level = level
	a.noSpec = true // o's spans were never ranked here (see Expect)
	a.SampleSpans = min(a.SampleSpans, o.SampleSpans)
	a.limit = a.SampleSpans
	a.fit()
	a.shared.Store(uint32(a.level))
	*o = Accum{}
	return nil
}

// sortByFile puts the sample in file order, keeping the order within a
// file (a reader given files out of name order read them so).
func (a *Accum) sortByFile() {
	if slices.IsSorted(a.files) {
		return
	}
	idx := make([]int, len(a.files))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return a.files[idx[i]] < a.files[idx[j]] })
	spans := make([]span.Span, len(idx))
	hashes := make([]uint64, len(idx))
	files := make([]int32, len(idx))
	for k, i := range idx {
		spans[k], hashes[k], files[k] = a.spans[i], a.hashes[i], a.files[i]
	}
	a.spans, a.hashes, a.files = spans, hashes, files
}

// interleave merges o's sample into a's by file (a's spans first within
// a file); both are in file order.
func (a *Accum) interleave(o *Accum) {
	n := len(a.spans) + len(o.spans)
	spans := make([]span.Span, 0, n)
	hashes := make([]uint64, 0, n)
	files := make([]int32, 0, n)
	i, j := 0, 0
	for i < len(a.spans) || j < len(o.spans) {
		if j == len(o.spans) || i < len(a.spans) && a.files[i] <= o.files[j] {
			spans, hashes, files = append(spans, a.spans[i]), append(hashes, a.hashes[i]), append(files, a.files[i])
			i++
		} else {
			spans, hashes, files = append(spans, o.spans[j]), append(hashes, o.hashes[j]), append(files, o.files[j])
			j++
		}
	}
	a.spans, a.hashes, a.files = spans, hashes, files
}

// timesIn checks a hop's attempt times as State wrote them: as many as
// the bound and the attempts allow, each one its level keeps, and a level
// no higher than the bound made it (a level only rises past a full set).
func timesIn(t *TimesState, attempts int) error {
	if len(t.At) != len(t.D) {
		return fmt.Errorf("times: %d starts and %d durations", len(t.At), len(t.D))
	}
	if t.Level > 63 {
		return fmt.Errorf("times: level %d out of range", t.Level)
	}
	if len(t.At) > maxHopTimes || len(t.At) > attempts {
		return fmt.Errorf("times: %d kept of %d attempts (at most %d)", len(t.At), attempts, maxHopTimes)
	}
	if t.Level > 0 && attempts <= maxHopTimes {
		return fmt.Errorf("times: sampled at level %d though the hop's %d attempts fit", t.Level, attempts)
	}
	for i, at := range t.At {
		if !keepTime(at, t.D[i], t.Level) {
			return fmt.Errorf("times: attempt %d is not one level %d keeps", i, t.Level)
		}
	}
	return nil
}
