package analyze

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/secret"
	"github.com/tailscope/tailscope/span"
)

// Attribution: where in the fleet a hop's tail and failures are
// (docs/DESIGN.md §4, "Attribution").
//
// While spans stream, every hop keeps, per attribute key and value, the
// attempts, failed attempts, attempts the span marks as cut by a timeout
// (what hopAcc counts as flagged), and the durations of the other attempts
// as a sparse histogram on the sketch's bins (relative width 2·SketchAlpha),
// so that at the end, when the hop's p99 is known, the attempts at or
// above it can be counted per value. The boundary is approximate: the bin
// that holds the p99 counts as tail whole, so an attempt up to 0.8% below
// the p99 may count as tail; the hop's own tail count, the baseline, is
// counted by the same rule, so values are compared on equal terms.
//
// The state is bounded and merges exactly:
//   - a value longer than AttrMaxValueLen bytes is ignored (ids, URLs with
//     queries, timestamps with sub-second digits are mostly dropped by the
//     next rule anyway);
//   - a key with more than AttrMaxValues distinct values on a hop is dropped
//     for that hop as high-cardinality (its values are freed; the key stays
//     as a marker, so it is not counted again);
//   - a hop keeps at most AttrMaxKeys keys, the first in a fixed order
//     (instance-like keys, then the others, each by name): a key pushed out
//     by an earlier one can never come back (the earlier ones stay), so the
//     kept set is the first AttrMaxKeys of every key seen, whatever the
//     order of the spans or of the Parts merged.
//
// Counts and bins add, and the examples are the top few by (duration
// descending, trace id ascending) of the per-trace maxima, so a split into
// Parts merged in any order gives the state adding every span in order
// gives. The state is allocated at a hop's first span with attributes: a
// hop whose spans carry none costs nothing.
//
// At report time, per hop, the tail is the attempts at or above the hop's
// p99 (its lowest cut when the p99 is censored) and the attempts cut by a
// timeout; for each value the share of its attempts in the tail is
// compared with the rest of the hop's by a one-sided Fisher exact test
// (hypergeometric upper tail), and likewise for failed attempts. A value is
// reported when it holds at least AttrMinCount of them, its lift (its rate
// over the hop's) is at least AttrMinLift, and the test's p-value is below
// AttrAlpha over the number of pairs the hop tested (Bonferroni). Keys that
// record the outcome itself (status codes, errors, exceptions) are not
// compared: they would restate that the attempt failed or was cut.
const (
	AttrMaxKeys     = 64
	AttrMaxValues   = 64
	AttrMaxValueLen = 200
	AttrMinCount    = 5
	AttrMinLift     = 1.5
	AttrAlpha       = 0.001
	// AttrMaxPerHop bounds the attributions listed per hop.
	AttrMaxPerHop = 10
	// AttrExamples is how many example trace ids a value keeps, for its
	// slowest attempts and for its failed ones.
	AttrExamples = 3
)

// Attribution is one attribute value over-represented in a hop's tail or
// failures (JSON hops[].attribution[]).
type Attribution struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// Of is what the value is over-represented in: "tail" (attempts at or
	// above the hop's p99, or cut by a timeout) or "failures".
	Of string `json:"of"`
	// Lift is the value's rate of Of over the hop's.
	Lift float64 `json:"lift"`
	// Tail and Failed count the value's attempts in the hop's tail and
	// its failed attempts, of Total.
	Tail   int `json:"tail"`
	Failed int `json:"failed"`
	Total  int `json:"total"`
	// HopCount is the hop's attempts in Of (its tail or its failures);
	// Share is the value's part of them.
	HopCount int     `json:"hop_count"`
	Share    float64 `json:"share"`
	// PValue is the one-sided Fisher exact test's, before the Bonferroni
	// correction (the value is reported only when it is below AttrAlpha
	// over the pairs tested).
	PValue float64 `json:"p_value"`
	// Examples are trace ids of the value's slowest attempts (Of tail) or
	// slowest failed attempts (Of failures), slowest first.
	Examples []string `json:"examples,omitempty"`
}

// HopExamples are trace ids behind a hop's figures, to open in a trace
// viewer (JSON hops[].examples).
type HopExamples struct {
	// SlowestTraceID is the trace of the hop's slowest attempt.
	SlowestTraceID string  `json:"slowest_trace_id,omitempty"`
	SlowestMs      float64 `json:"slowest_ms,omitempty"`
	// TimeoutTraceID is a trace with an attempt cut by the timeout (marked
	// so by its span, or failed at the timeout in force).
	TimeoutTraceID string `json:"timeout_trace_id,omitempty"`
	// FailedTraceID is a trace with a failed attempt that was not cut.
	FailedTraceID string `json:"failed_trace_id,omitempty"`
}

// ex is an example attempt: its duration and trace id.
type ex struct {
	d     int64
	trace string
}

// before orders examples: longer first, then by trace id.
func (a ex) before(b ex) bool {
	return a.d > b.d || (a.d == b.d && a.trace < b.trace)
}

// topEx keeps in xs the k best examples (see before) of distinct traces,
// best first, adding x (its trace id may be borrowed: it is copied when
// kept). A trace already there keeps its longer attempt, so xs is always
// the best k of the per-trace longest attempts seen, whatever their order.
func topEx(xs []ex, d int64, trace string, k int) []ex {
	if trace == "" {
		return xs
	}
	x := ex{d, trace}
	if len(xs) == k && !x.before(xs[k-1]) {
		return xs
	}
	for i := range xs {
		if xs[i].trace == trace {
			if !x.before(xs[i]) {
				return xs
			}
			xs = slices.Delete(xs, i, i+1)
			break
		}
	}
	i := len(xs)
	for i > 0 && x.before(xs[i-1]) {
		i--
	}
	if i >= k {
		return xs
	}
	x.trace = strings.Clone(trace)
	xs = slices.Insert(xs, i, x)
	if len(xs) > k {
		xs = xs[:k]
	}
	return xs
}

// hopEx is what a hop keeps for HopExamples: one example each, in place
// (no allocation but the trace id's copy: hops may number in the
// hundreds of thousands). An empty trace is none.
type hopEx struct {
	slowest, flagged, other ex // the longest attempt, cut (flagged) attempt, other failure
	fastFail                ex // the shortest other failure
}

// list is x as a list of at most one (none when its trace is empty).
func (x ex) list() []ex {
	if x.trace == "" {
		return nil
	}
	return []ex{x}
}

// top1 keeps in x the better of x and (d, trace) by before; bottom1 the
// shorter (ties by trace id).
func top1(x *ex, d int64, trace string) {
	if trace != "" && (x.trace == "" || (ex{d, trace}).before(*x)) {
		*x = ex{d, strings.Clone(trace)}
	}
}

func bottom1(x *ex, d int64, trace string) {
	if trace != "" && (x.trace == "" || d < x.d || (d == x.d && trace < x.trace)) {
		*x = ex{d, strings.Clone(trace)}
	}
}

func (e *hopEx) add(sp *span.Span, flagged bool) {
	if sp.TraceID == "" {
		return
	}
	top1(&e.slowest, sp.Duration, sp.TraceID)
	switch {
	case !sp.Failed():
	case flagged:
		top1(&e.flagged, sp.Duration, sp.TraceID)
	default:
		top1(&e.other, sp.Duration, sp.TraceID)
		bottom1(&e.fastFail, sp.Duration, sp.TraceID)
	}
}

func (e *hopEx) merge(o *hopEx) {
	top1(&e.slowest, o.slowest.d, o.slowest.trace)
	top1(&e.flagged, o.flagged.d, o.flagged.trace)
	top1(&e.other, o.other.d, o.other.trace)
	bottom1(&e.fastFail, o.fastFail.d, o.fastFail.trace)
}

// hopAttr is a hop's attribution state (see above).
type hopAttr struct {
	keys map[string]*keyAttr
	// largest is the last key kept (by keyLess) while keys is full (""
	// when not known): a new key after it is not kept.
	largest string
	// pos remembers the key met at each position of the previous span's
	// attributes: a reader writes a hop's attributes in the same order
	// span after span, so most lookups are a string comparison, not a
	// hash. posRaw[i] is the reader's own text of that key when its span
	// had span.Span.StableAttrs ("" otherwise): the same string again is
	// the same key, found by its address.
	pos    []*keyAttr
	posRaw []string
	// The combinations (see combo): combos in the order made, slots an
	// open-addressed index of them by hash (index+1; 0 is empty). vals is
	// the values of the span being added (scratch).
	combos []*combo
	slots  []int32
	vals   []*valAttr
	// looked and made count combination lookups and the combinations made
	// (see comboChurn); direct is set once the hop's spans are found too
	// varied for combinations to pay: from then on every value counts
	// its attempts itself.
	looked, made int
	direct       bool
	// The raw combinations (see rawCombo), indexed by rawSlots like
	// combos; rawLooked and rawMissed count the lookups of the current
	// trial, rawSkip the spans still to resolve without them, rawBack the
	// next skip.
	raws                 []rawCombo
	rawSlots             []int32
	rawLooked, rawMissed int
	rawSkip, rawBack     int
}

// A combo is the attempts of a hop whose attributes gave the same values
// (one pod, one zone, one route …): most spans of a hop share a handful of
// combinations, so an attempt is counted once, on its combination, instead
// of once on every value it has, and the combination's counts go to each
// of its values when it is flushed (flush). That is exact: counts and bins
// add, and the examples are the best few per-trace maxima of a partition
// of the value's attempts — each of the value's true best traces is among
// the best few of the combination that holds its longest attempt (fewer
// traces than its rank can beat it there), with that attempt, so the best
// few of the combinations' best few are the value's own.
type combo struct {
	hash uint64
	vals []*valAttr
	st   valAttr // the combination's counts, bins and examples (no name)
	// pend holds bins not yet added to st.bins: written in a row, they
	// are added comboPend at a time while st.bins is in the cache, rather
	// than one increment a span somewhere in a hop's bins (a cache miss
	// each, the attribution's largest cost on a wide file).
	pend []int32
}

// comboPend is how many bins a combination holds before adding them.
const comboPend = 512

// add records sp (see valAttr.add).
func (c *combo) add(sp *span.Span, flagged bool, bin int) {
	if !c.st.note(sp, flagged, bin) {
		return
	}
	if c.pend == nil {
		c.pend = make([]int32, 0, comboPend)
	}
	if c.pend = append(c.pend, int32(bin)); len(c.pend) == comboPend {
		c.settle()
	}
}

// settle adds the pending bins to st.bins.
func (c *combo) settle() {
	if len(c.pend) == 0 {
		return
	}
	lo, hi := c.pend[0], c.pend[0]
	for _, b := range c.pend {
		lo, hi = min(lo, b), max(hi, b)
	}
	// The range first (each end is added to below), then the counts.
	v := &c.st
	v.addBin(int(lo), 0)
	v.addBin(int(hi), 0)
	bins, off := v.bins, int32(v.lo)
	for _, b := range c.pend {
		bins[b-off]++
	}
	c.pend = c.pend[:0]
}

// Bounds of the combinations: at most maxCombos per hop (a full table is
// flushed and emptied), and a hop whose lookups make a new combination
// more than once in comboChurn (after comboTrial lookups) counts on its
// values directly from then on.
const (
	maxCombos  = 32
	comboTrial = 4096
	comboChurn = 8
)

type keyAttr struct {
	name    string // owned
	dropped bool
	// secret: the key names a credential, so every value is one,
	// secret.Redacted (see package secret).
	secret bool
	// list holds the key's values in the order met; index finds them by
	// name once there are more than keyScan of them (nil before: with
	// unbounded hop names most keys have one value on a hop, and a map
	// per key was a fifth of attribution's memory).
	list  []*valAttr
	index map[string]*valAttr
	// last is the value met last, with its owned text (most spans of a
	// hop repeat their neighbour's).
	lastVal string
	last    *valAttr
	// byRaw finds a value by its raw text (before secret.Scrub), once the
	// key has more than one (see remember).
	byRaw map[string]*valAttr
	// raws are raw texts of spans with span.Span.StableAttrs and their
	// values, found by address (at most keyScan): a reader that interns
	// gives a value the same string every time.
	raws []rawVal
}

// rawVal is a reader's stable text of a value (span.Span.StableAttrs) and
// the value it is.
type rawVal struct {
	raw string
	v   *valAttr
}

// sameText reports whether a and b are one string: the same bytes at the
// same address (so equal texts; used only on immutable, held strings).
func sameText(a, b string) bool {
	return len(a) == len(b) && unsafe.StringData(a) == unsafe.StringData(b)
}

// rawFind is the value whose stable raw text is raw (by address), nil
// when none is remembered.
func (k *keyAttr) rawFind(raw string) *valAttr {
	for i := range k.raws {
		if sameText(k.raws[i].raw, raw) {
			return k.raws[i].v
		}
	}
	return nil
}

// keyScan is how many values a key finds by comparing names (instances,
// zones: cheaper than hashing) before it indexes them.
const keyScan = 8

// find is the key's value val, nil when it has none.
func (k *keyAttr) find(val string) *valAttr {
	if k.index != nil {
		return k.index[val]
	}
	for _, x := range k.list {
		if x.name == val {
			return x
		}
	}
	return nil
}

// insert adds v, a value find does not find.
func (k *keyAttr) insert(v *valAttr) {
	k.list = append(k.list, v)
	switch {
	case k.index != nil:
		k.index[v.name] = v
	case len(k.list) > keyScan:
		k.index = make(map[string]*valAttr, 2*len(k.list))
		for _, x := range k.list {
			k.index[x.name] = x
		}
	}
}

// sorted is the key's values by name.
func (k *keyAttr) sorted() []*valAttr {
	return slices.SortedFunc(slices.Values(k.list), func(a, b *valAttr) int { return strings.Compare(a.name, b.name) })
}

// valAttr is one value of one key on one hop.
type valAttr struct {
	name            string // owned
	n, failed, flag int
	// bins counts the attempts that are not flagged by sketch bin: bins[i]
	// is bin lo+i; zero counts durations of 0.
	bins []uint32
	lo   int
	zero int
	slow []ex // slowest attempts
	fail []ex // slowest failed attempts
}

func (v *valAttr) addBin(i int, c uint32) {
	switch {
	case len(v.bins) == 0:
		v.lo = i
		v.bins = append(v.bins, 0)
	case i < v.lo:
		grow := v.lo - i
		nb := make([]uint32, len(v.bins)+grow, len(v.bins)+grow+8)
		copy(nb[grow:], v.bins)
		v.bins, v.lo = nb, i
	}
	for i >= v.lo+len(v.bins) {
		v.bins = append(v.bins, 0)
	}
	v.bins[i-v.lo] += c
}

// add records sp; bin is its duration's sketch bin (math.MinInt when
// flagged or 0).
func (v *valAttr) add(sp *span.Span, flagged bool, bin int) {
	if v.note(sp, flagged, bin) {
		v.addBin(bin, 1)
	}
}

// note is add but for the bin: it reports whether bin must be added.
func (v *valAttr) note(sp *span.Span, flagged bool, bin int) bool {
	v.n++
	if sp.Failed() {
		v.failed++
		v.fail = topEx(v.fail, sp.Duration, sp.TraceID, AttrExamples)
	}
	if len(v.slow) < AttrExamples || sp.Duration >= v.slow[AttrExamples-1].d {
		// (Shorter than the last of a full list: topEx would leave it.)
		v.slow = topEx(v.slow, sp.Duration, sp.TraceID, AttrExamples)
	}
	switch {
	case flagged:
		v.flag++
	case bin == math.MinInt:
		v.zero++
	default:
		return true
	}
	return false
}

func (v *valAttr) merge(o *valAttr) {
	v.n += o.n
	v.failed += o.failed
	v.flag += o.flag
	v.zero += o.zero
	for i, c := range o.bins {
		if c > 0 {
			v.addBin(o.lo+i, c)
		}
	}
	for _, x := range o.slow {
		v.slow = topEx(v.slow, x.d, x.trace, AttrExamples)
	}
	for _, x := range o.fail {
		v.fail = topEx(v.fail, x.d, x.trace, AttrExamples)
	}
}

// atOrAbove counts the value's attempts in the tail: flagged, or not
// flagged with a bin at or above b.
func (v *valAttr) atOrAbove(b int) int {
	n := v.flag
	if b == math.MinInt {
		return n + v.zero + v.sum(0)
	}
	return n + v.sum(b-v.lo)
}

func (v *valAttr) sum(from int) int {
	n := 0
	for _, c := range v.bins[max(0, min(from, len(v.bins))):] {
		n += int(c)
	}
	return n
}

// add records sp's attributes.
func (a *hopAttr) add(sp *span.Span, flagged bool) {
	bin := math.MinInt // the duration's bin, computed once for all keys
	if !flagged && sp.Duration >= 1 {
		bin = quantile.Bin(sp.Duration)
	}
	if sp.StableAttrs && a.rawSkip == 0 {
		shared := sp.SharedAttrs
		var h uint64
		if shared {
			h = sharedHash(sp.Attrs)
		} else {
			h = rawHash(sp.Attrs)
		}
		if e := a.rawFind(h, sp.Attrs, shared); e != nil {
			count(e.vals, e.c, sp, flagged, bin)
			return
		}
		vals := a.resolve(sp)
		c := a.combo(vals)
		a.rawAdd(h, sp.Attrs, vals, c, shared)
		count(vals, c, sp, flagged, bin)
		clear(vals)
		return
	}
	if a.rawSkip > 0 {
		a.rawSkip--
	}
	vals := a.resolve(sp)
	count(vals, a.combo(vals), sp, flagged, bin)
	clear(vals)
}

// count adds an attempt to its combination c, or when nil to each of its
// values.
func count(vals []*valAttr, c *combo, sp *span.Span, flagged bool, bin int) {
	if c != nil {
		c.add(sp, flagged, bin)
		return
	}
	for _, v := range vals {
		v.add(sp, flagged, bin)
	}
}

// A rawCombo is what a hop's attributes, as a reader that interns gives
// them (span.Span.StableAttrs), resolved to: the same strings again are
// the same values, found without looking at a key. It holds the strings
// (so their addresses stay theirs), and it is forgotten whenever the
// combinations are flushed: when a key is dropped, when the table of
// combinations is full, before the values are read. When the reader
// shares its attribute lists (span.Span.SharedAttrs) it holds the
// reader's slice itself (shared), and the same slice again is found by
// its address alone: no text is looked at.
type rawCombo struct {
	hash   uint64
	attrs  []span.Attr
	vals   []*valAttr
	c      *combo // nil: the values count directly
	shared bool
}

// Bounds of the raw combinations: at most maxRaws per hop (a full table is
// emptied); when more than one lookup in rawChurn of the last rawTrial
// missed, the hop resolves every span for the next rawBackoff spans
// (doubled each time it happens again).
const (
	maxRaws    = 64
	rawTrial   = 4096
	rawChurn   = 8
	rawBackoff = 4096
)

// rawHash hashes attrs by the addresses and lengths of their texts.
func rawHash(attrs []span.Attr) uint64 {
	h := uint64(len(attrs))
	for i := range attrs {
		at := &attrs[i]
		h = (h ^ uint64(uintptr(unsafe.Pointer(unsafe.StringData(at.Value))))) * 0x9E3779B97F4A7C15
		h = (h ^ uint64(uintptr(unsafe.Pointer(unsafe.StringData(at.Key)))) ^ uint64(len(at.Value))<<48) * 0xC2B2AE3D27D4EB4F
	}
	return h ^ h>>29
}

// sharedHash hashes a shared attribute list (span.Span.SharedAttrs) by
// its slice's address and length.
func sharedHash(attrs []span.Attr) uint64 {
	h := (uint64(uintptr(unsafe.Pointer(unsafe.SliceData(attrs)))) ^ uint64(len(attrs))<<56) * 0x9E3779B97F4A7C15
	return h ^ h>>29
}

// rawFind is the raw combination of attrs, nil when there is none; a
// shared list (span.Span.SharedAttrs) is found by its address: a held
// slice is at an address no other list has while it is held, and the
// slices held by copy (not shared) are the hop's own, never a reader's.
func (a *hopAttr) rawFind(h uint64, attrs []span.Attr, shared bool) *rawCombo {
	a.rawLooked++
	if len(a.rawSlots) > 0 {
		mask := uint64(len(a.rawSlots) - 1)
	probe:
		for i := h & mask; a.rawSlots[i] != 0; i = (i + 1) & mask {
			e := &a.raws[a.rawSlots[i]-1]
			if e.hash != h || len(e.attrs) != len(attrs) {
				continue
			}
			if shared {
				if unsafe.SliceData(e.attrs) == unsafe.SliceData(attrs) {
					return e
				}
				continue
			}
			for j := range attrs {
				if !sameText(e.attrs[j].Value, attrs[j].Value) || !sameText(e.attrs[j].Key, attrs[j].Key) {
					continue probe
				}
			}
			return e
		}
	}
	if a.rawMissed++; a.rawLooked >= rawTrial {
		if a.rawMissed*rawChurn > a.rawLooked {
			a.rawSkip, a.rawBack = a.rawBack, min(2*a.rawBack, 1<<20)
			a.forgetRaws()
		}
		a.rawLooked, a.rawMissed = 0, 0
	}
	return nil
}

// rawAdd remembers that attrs resolved to vals and c; a shared list is
// held as it is (see rawFind), any other copied.
func (a *hopAttr) rawAdd(h uint64, attrs []span.Attr, vals []*valAttr, c *combo, shared bool) {
	if a.rawSkip > 0 {
		return
	}
	if len(a.raws) == maxRaws {
		a.forgetRaws()
	}
	if a.rawSlots == nil {
		a.rawSlots = make([]int32, 2*maxRaws)
		a.rawBack = rawBackoff
	}
	if !shared {
		attrs = slices.Clone(attrs)
	}
	a.raws = append(a.raws, rawCombo{hash: h, attrs: attrs, vals: slices.Clone(vals), c: c, shared: shared})
	mask := uint64(len(a.rawSlots) - 1)
	i := h & mask
	for a.rawSlots[i] != 0 {
		i = (i + 1) & mask
	}
	a.rawSlots[i] = int32(len(a.raws))
}

// forgetRaws empties the raw combinations.
func (a *hopAttr) forgetRaws() {
	clear(a.raws)
	a.raws = a.raws[:0]
	clear(a.rawSlots)
}

// resolve is the values sp's attributes count on (a.vals), in their
// order: attributes too long, without a key, of a key dropped or not
// kept are left out.
func (a *hopAttr) resolve(sp *span.Span) []*valAttr {
	vals := a.vals[:0]
	stable := sp.StableAttrs
	for i := range sp.Attrs {
		at := &sp.Attrs[i]
		if len(at.Value) > AttrMaxValueLen || at.Key == "" {
			continue
		}
		var k *keyAttr
		switch {
		case stable && i < len(a.posRaw) && sameText(a.posRaw[i], at.Key):
			k = a.pos[i]
		case i < len(a.pos) && a.pos[i] != nil && a.pos[i].name == at.Key:
			k = a.pos[i]
			a.posRaw[i] = ""
			if stable {
				a.posRaw[i] = at.Key
			}
		default:
			if k = a.keys[at.Key]; k == nil {
				if k = a.newKey(at.Key); k == nil {
					continue
				}
			}
			for len(a.pos) <= i && len(a.pos) < AttrMaxKeys {
				a.pos, a.posRaw = append(a.pos, nil), append(a.posRaw, "")
			}
			if i < len(a.pos) {
				a.pos[i], a.posRaw[i] = k, ""
				if stable {
					a.posRaw[i] = at.Key
				}
			}
		}
		if k.dropped {
			continue
		}
		v := k.last
		switch {
		case k.secret && v != nil:
			// Every value of the key is the one redacted value.
		case v != nil && stable && sameText(k.lastVal, at.Value):
		case v != nil && !stable && k.lastVal == at.Value:
		default:
			var r *valAttr
			known := false // at.Value is in k.raws
			if stable {
				if r = k.rawFind(at.Value); r != nil {
					known = true
				} else if v != nil && k.lastVal == at.Value {
					r = v
				}
			}
			if r != nil {
				v = r
			} else if r = k.byRaw[at.Value]; r != nil {
				// A value met before, not the last one: no scrub again.
				v = r
			} else {
				// Values are kept, compared and shown with their
				// credentials hidden (package secret), so that no report
				// or summary holds one and a summary merges as the logs
				// read at once.
				shown := secret.Redacted
				if !k.secret {
					shown = secret.Scrub(at.Value)
				}
				v = k.find(shown)
				if v == nil {
					if len(k.list) == AttrMaxValues {
						a.dropKey(k)
						continue
					}
					v = &valAttr{name: strings.Clone(shown)}
					k.insert(v)
				}
				k.remember(at.Value, v)
			}
			k.last = v
			switch {
			case stable:
				// Held as the reader gave it: the next span's same
				// string compares by address.
				k.lastVal = at.Value
				if !known && len(k.raws) < keyScan {
					k.raws = append(k.raws, rawVal{at.Value, v})
				}
			case v.name == at.Value:
				k.lastVal = v.name
			default:
				k.lastVal = strings.Clone(at.Value)
			}
		}
		vals = append(vals, v)
	}
	a.vals = vals
	return vals
}

// combo is the combination of vals (which it does not keep), made when
// new; nil for fewer than two values (they count directly), and once the
// hop counts directly (a.direct).
func (a *hopAttr) combo(vals []*valAttr) *combo {
	if len(vals) < 2 || a.direct {
		return nil
	}
	h := uint64(len(vals))
	for _, v := range vals {
		h = (h ^ uint64(uintptr(unsafe.Pointer(v)))) * 0x9E3779B97F4A7C15
	}
	h ^= h >> 31
	a.looked++
	if len(a.slots) > 0 {
		mask := uint64(len(a.slots) - 1)
		for i := h & mask; a.slots[i] != 0; i = (i + 1) & mask {
			if c := a.combos[a.slots[i]-1]; c.hash == h && slices.Equal(c.vals, vals) {
				return c
			}
		}
	}
	if a.made++; a.looked >= comboTrial && a.made*comboChurn > a.looked {
		// Too varied: the values count their attempts themselves from
		// now on.
		a.flush()
		a.direct, a.combos, a.slots = true, nil, nil
		return nil
	}
	if len(a.combos) == maxCombos {
		a.flush()
	}
	if len(a.slots) == 0 {
		a.slots = make([]int32, 2*maxCombos)
	}
	c := &combo{hash: h, vals: slices.Clone(vals)}
	a.combos = append(a.combos, c)
	mask := uint64(len(a.slots) - 1)
	i := h & mask
	for a.slots[i] != 0 {
		i = (i + 1) & mask
	}
	a.slots[i] = int32(len(a.combos))
	return c
}

// flush adds every combination's counts to its values and empties the
// table. Whatever reads the values (merge, the report, a summary) flushes
// first.
func (a *hopAttr) flush() {
	for _, c := range a.combos {
		c.settle()
		for _, v := range c.vals {
			v.merge(&c.st)
		}
	}
	clear(a.combos)
	a.combos = a.combos[:0]
	clear(a.slots)
	a.forgetRaws() // they point at the combinations
}

// dropKey drops k (see keyAttr.drop), flushing the combinations first:
// they may hold its values.
func (a *hopAttr) dropKey(k *keyAttr) {
	a.flush()
	k.drop()
}

// drop frees a high-cardinality (or pushed out) key's values; it stays a
// marker, so that it is not counted again.
func (k *keyAttr) drop() {
	k.dropped, k.index, k.last, k.lastVal, k.list, k.byRaw, k.raws = true, nil, nil, "", nil, nil, nil
}

// maxRaw bounds the raw values a key remembers: values that scrub to one
// shown value (tokens) could be many.
const maxRaw = 4 * AttrMaxValues

// remember notes that the raw text raw is value v, once the key has two
// values (most keys of a hop have one, and need no map): spans whose
// values alternate then find theirs without scrubbing it again (measured:
// secret.Scrub was 27% of the CPU on a Parquet file whose region column
// alternates three values).
func (k *keyAttr) remember(raw string, v *valAttr) {
	if len(k.list) < 2 || len(k.byRaw) >= maxRaw {
		return
	}
	if k.byRaw == nil {
		k.byRaw = make(map[string]*valAttr, len(k.list))
		if k.last != nil && k.last != v {
			k.byRaw[k.lastVal] = k.last
		}
	}
	k.byRaw[strings.Clone(raw)] = v
}

// keyLess orders attribute keys for the AttrMaxKeys bound: instance-like
// keys first (so that many other keys never push them out), then by name.
func keyLess(a, b string) bool {
	if ia, ib := instanceKey(a), instanceKey(b); ia != ib {
		return ia
	}
	return a < b
}

// newKey adds key when it is among the AttrMaxKeys first keys seen (by
// keyLess), pushing out the last; nil when it is not.
func (a *hopAttr) newKey(key string) *keyAttr {
	if len(a.keys) >= AttrMaxKeys {
		if a.largest == "" {
			for name := range a.keys {
				if a.largest == "" || keyLess(a.largest, name) {
					a.largest = name
				}
			}
		}
		if !keyLess(key, a.largest) {
			return nil
		}
		// A cached position may still point at it: dropped, it counts
		// nothing more.
		a.dropKey(a.keys[a.largest])
		delete(a.keys, a.largest)
		a.largest = ""
	}
	name := strings.Clone(key)
	k := &keyAttr{name: name, secret: secret.Key(name)}
	a.keys[name] = k
	return k
}

func (a *hopAttr) merge(o *hopAttr) {
	o.flush()
	names := make([]string, 0, len(o.keys))
	for name := range o.keys {
		names = append(names, name)
	}
	slices.SortFunc(names, func(x, y string) int {
		switch {
		case keyLess(x, y):
			return -1
		case keyLess(y, x):
			return 1
		}
		return 0
	})
	for _, name := range names {
		ok := o.keys[name]
		k := a.keys[name]
		if k == nil {
			if k = a.newKey(name); k == nil {
				// Every later name is larger still.
				break
			}
		}
		if k.dropped {
			continue
		}
		if ok.dropped {
			k.drop()
			continue
		}
		for _, ov := range ok.sorted() {
			v := k.find(ov.name)
			if v == nil {
				if len(k.list) == AttrMaxValues {
					k.drop()
					break
				}
				v = &valAttr{name: ov.name}
				k.insert(v)
			}
			v.merge(ov)
		}
	}
}

// outcomeKey reports whether an attribute records the attempt's outcome
// (a status code, an error, an exception): comparing the failures or the
// cut attempts over it would only restate them.
func outcomeKey(key string) bool {
	k := strings.ToLower(key)
	for _, w := range []string{"status", "error", "exception", "fault", "response_code", "response.code", "grpc.code", "outcome", "result"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// tailBin is the sketch bin whose attempts and above are a hop's tail,
// given its p99 (or lowest cut) in ns; math.MinInt when every attempt is.
func tailBin(t int64) int {
	if t < 1 {
		return math.MinInt
	}
	return quantile.Bin(t)
}

// digestAtOrAbove counts d's values whose bin is b or above (all of them
// when b is math.MinInt).
func digestAtOrAbove(d *quantile.Digest, b int) int {
	if b == math.MinInt {
		return d.N()
	}
	return d.AtOrAboveBin(b)
}

// attribute fills h.Attribution and h.Examples from acc (the hop's
// accumulated state; nil: nothing).
func attribute(h *Hop, acc *hopAcc) {
	h.Attribution, h.Examples, h.instances = nil, nil, nil
	if acc == nil {
		return
	}
	h.Examples = hopExamples(h, &acc.ex)
	if acc.at == nil || acc.n == 0 {
		return
	}
	acc.at.flush()
	// The tail threshold: the p99 of all attempts, or the lowest cut when
	// that p99 is censored.
	var t float64
	switch {
	case h.LatencyMs.P99 != nil:
		t = *h.LatencyMs.P99
	case h.Censored != nil:
		t = h.Censored.AtLeastMs
	default:
		return
	}
	b := tailBin(int64(math.Round(units.NsOfMs(t))))
	hopTail := acc.cut + digestAtOrAbove(&acc.succ, b) + digestAtOrAbove(&acc.other, b)
	N := acc.n
	type cand struct {
		a     Attribution
		count int
	}
	var cands []cand
	tested := 0
	consider := func(key, val string, v *valAttr, of string, k, K int) {
		if k < AttrMinCount || K == 0 || K == N {
			return
		}
		tested++
		lift := (float64(k) / float64(v.n)) / (float64(K) / float64(N))
		if lift < AttrMinLift {
			return
		}
		p := fisherUpper(N, K, v.n, k)
		xs := v.slow
		if of == "failures" {
			xs = v.fail
		}
		a := Attribution{Key: key, Value: val, Of: of, Lift: units.Round(lift, 2), Tail: v.atOrAbove(b), Failed: v.failed, Total: v.n,
			HopCount: K, Share: units.Round(float64(k)/float64(K), 4), PValue: p}
		for _, x := range xs {
			a.Examples = append(a.Examples, x.trace)
		}
		cands = append(cands, cand{a, k})
	}
	keys := make([]string, 0, len(acc.at.keys))
	for key, ka := range acc.at.keys {
		if !ka.dropped && !outcomeKey(key) && len(ka.list) > 0 {
			keys = append(keys, key)
		}
	}
	slices.Sort(keys)
	h.instances = map[string]int{}
	for _, key := range keys {
		ka := acc.at.keys[key]
		h.instances[key] = len(ka.list)
		for _, v := range ka.sorted() {
			val := v.name
			if v.n == N && len(ka.list) == 1 {
				continue // the same on every attempt: nothing to compare
			}
			consider(key, val, v, "tail", v.atOrAbove(b), hopTail)
			consider(key, val, v, "failures", v.failed, acc.failed)
		}
	}
	if tested == 0 {
		return
	}
	limit := AttrAlpha / float64(tested)
	var out []Attribution
	for _, c := range cands {
		if c.a.PValue < limit {
			c.a.PValue = roundSig(c.a.PValue)
			out = append(out, c.a)
		}
	}
	slices.SortStableFunc(out, func(x, y Attribution) int {
		if x.Of != y.Of {
			return cmp.Compare(ofRank(x.Of), ofRank(y.Of))
		}
		if c := cmp.Compare(y.Share, x.Share); c != 0 {
			return c
		}
		if c := cmp.Compare(y.Lift, x.Lift); c != 0 {
			return c
		}
		if c := cmp.Compare(x.Key, y.Key); c != 0 {
			return c
		}
		return cmp.Compare(x.Value, y.Value)
	})
	if len(out) > AttrMaxPerHop {
		out = out[:AttrMaxPerHop]
	}
	h.Attribution = out
}

func ofRank(of string) int {
	if of == "tail" {
		return 0
	}
	return 1
}

// hopExamples picks the hop's example traces: its slowest attempt, an
// attempt cut by the timeout (marked, or failed at the timeout in force),
// and a failure that was not cut.
func hopExamples(h *Hop, e *hopEx) *HopExamples {
	var out HopExamples
	if e.slowest.trace != "" {
		out.SlowestTraceID, out.SlowestMs = e.slowest.trace, units.Ms(e.slowest.d)
	}
	T := nsOf(h.TimeoutMs)
	if e.flagged.trace != "" {
		out.TimeoutTraceID = e.flagged.trace
	} else if e.other.trace != "" && near(e.other.d, T) {
		out.TimeoutTraceID = e.other.trace
	}
	if e.fastFail.trace != "" && !near(e.fastFail.d, T) {
		out.FailedTraceID = e.fastFail.trace
	}
	if out == (HopExamples{}) {
		return nil
	}
	return &out
}

// fisherUpper is the one-sided Fisher exact test's p-value: the
// probability of k or more of n draws, without replacement, from N items of
// which K are marked (hypergeometric upper tail).
func fisherUpper(N, K, n, k int) float64 {
	hi := min(n, K)
	if k > hi {
		return 0
	}
	lo := max(0, n-(N-K))
	k = max(k, lo)
	lnC := func(a, b int) float64 {
		x, _ := math.Lgamma(float64(a + 1))
		y, _ := math.Lgamma(float64(b + 1))
		z, _ := math.Lgamma(float64(a - b + 1))
		return x - y - z
	}
	base := lnC(N, n)
	var p float64
	for x := k; x <= hi; x++ {
		term := math.Exp(lnC(K, x) + lnC(N-K, n-x) - base)
		p += term
		// Past the mode the terms only shrink: stop once they no longer
		// count.
		if float64(x) > float64(n)*float64(K)/float64(N) && term < p*1e-12 {
			break
		}
	}
	return math.Min(1, p)
}

// roundSig keeps three significant digits of a p-value.
func roundSig(p float64) float64 {
	if p == 0 || math.IsNaN(p) {
		return 0
	}
	e := math.Floor(math.Log10(p))
	s := math.Pow(10, 2-e)
	return math.Round(p*s) / s
}

// hopAccOf accumulates a hop's spans, as an Accum would (for Measure on spans
// in memory).
func hopAccOf(name string, ss []*span.Span) *hopAcc {
	h := &hopAcc{name: name}
	for _, s := range ss {
		h.add(s)
	}
	h.settle()
	return h
}

// Eject is the outlier-detection advice of a hop whose tail or failures
// concentrate on one instance (JSON hops[].recommendation.eject).
type Eject struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// Of is "tail" or "failures"; Lift and Share are the attribution's.
	Of    string  `json:"of"`
	Lift  float64 `json:"lift"`
	Share float64 `json:"share"`
	// Instances is the number of values of Key on the hop.
	Instances int `json:"instances"`
	// From is the callee hop the instance was found on, when the advice
	// is on the calling hop ("" when found on this hop).
	From string `json:"from,omitempty"`
}

// EjectMinShare is the part of a hop's tail (or failures) one instance
// must hold, with a significant lift, for the advice to eject it.
const EjectMinShare = 0.5

// instanceKey reports whether an attribute names one instance of a
// service (a pod, host, container, process or peer address), the unit
// outlier detection ejects. Separators are ignored ("pod_name", "pod-name"
// and "pod.name" are one), so that flat logs' columns match too.
func instanceKey(key string) bool {
	k := strings.NewReplacer("_", ".", "-", ".").Replace(strings.ToLower(key))
	switch k {
	case "service.instance.id", "k8s.pod.name", "k8s.pod.uid", "pod", "pod.name", "podname", "pod.id",
		"host", "host.name", "hostname", "host.id", "instance", "instance.id", "container", "container.id", "container.name",
		"net.peer.ip", "net.peer.name", "net.sock.peer.addr", "net.sock.peer.name", "network.peer.address",
		"server.address", "server.socket.address", "peer.address", "peer.ip", "upstream.host", "upstream.address", "endpoint", "node.id":
		return true
	}
	for _, suf := range []string{".pod.name", ".instance.id", ".host.name", ".peer.ip", ".peer.addr", ".peer.address", ".container.id"} {
		if strings.HasSuffix(k, suf) {
			return true
		}
	}
	return false
}

// ejectOf is the hop's own eject advice: the first attribution (tail
// before failures, largest share first) to an instance-like key holding
// at least EjectMinShare of them; nil when the tail is spread.
func ejectOf(h *Hop, instances func(key string) int) *Eject {
	for _, a := range h.Attribution {
		if instanceKey(a.Key) && a.Share >= EjectMinShare {
			return &Eject{Key: a.Key, Value: a.Value, Of: a.Of, Lift: a.Lift, Share: a.Share, Instances: instances(a.Key)}
		}
	}
	return nil
}

// Ejection is the hop's own eject advice (see ejectOf), with the number
// of instances its attribution compared; nil when its tail is spread.
// Package recommend adds it to the recommendation.
func (h *Hop) Ejection() *Eject {
	return ejectOf(h, func(key string) int { return h.instances[key] })
}

// Sentence is the advice in words.
func (e *Eject) Sentence() string {
	what := "slow attempts"
	if e.Of == "failures" {
		what = "failures"
	}
	from := ""
	if e.From != "" {
		from = " (its callee " + e.From + ")"
	}
	return fmt.Sprintf("eject %s=%s%s (outlier detection): it holds %s of the %s (lift %s×): neither retries nor a longer timeout will fix it",
		e.Key, e.Value, from, units.PercentWholeEven(e.Share), what, units.Decimal(e.Lift, 1))
}
