package analyze

import (
	"fmt"
	"github.com/tailscope/tailscope/internal/fastlog"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tailscope/tailscope/internal/par"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/span"
)

// DefaultSampleSpans is how many spans an Accum keeps for the parts of the
// analysis that need whole traces (calls, retry yield, failure class,
// request outcomes, replay, budget). Up to it nothing is sampled and the
// analysis is exactly Measure's; past it memory stays flat whatever the size
// of the logs.
const DefaultSampleSpans = 100_000

// Accum collects spans as a reader streams them, in memory that does not
// grow with the logs:
//
//   - per hop, every attempt is counted and its duration goes into a
//     Digest (exact up to ExactLimit per hop, a SketchAlpha relative-error
//     sketch beyond), split by outcome: successes, failures the span marks
//     as cut by a timeout, other failures;
//   - whole traces are kept for the tree-based parts while they fit in
//     SampleSpans; past that, a deterministic sample: a trace is kept when
//     the hash of its id falls below a threshold that halves each time the
//     sample overflows. The kept set is the same whatever the order of the
//     input (the threshold ends at the largest power-of-two fraction whose
//     traces fit), every span of a kept trace is kept, and no trace is
//     favoured for being slow or failed, so the sample is unbiased.
//
// Add must not be called concurrently. A reader that decodes on several
// goroutines can instead give each of them a Part (see Part), which does
// the per-hop work where the span is decoded.
type Accum struct {
	// SampleSpans bounds the spans kept for trees (DefaultSampleSpans when
	// 0 at the first Add).
	SampleSpans int
	// MaxHops bounds the distinct hops (DefaultMaxHops when 0); set it
	// before the first span. See HopLimit.
	MaxHops int
	// Names names the settings HopLimit's error tells the reader to
	// change (MaxHops, HopBy, Hops) as the caller's user knows them; nil:
	// by option's own names.
	Names option.Names
	// overHops is set once a span's hop was turned away for MaxHops (by
	// Add, Merge or a Part on another goroutine).
	overHops atomic.Bool

	hops map[string]*hopAcc
	last *hopAcc
	// The trace sample: kept while spans are added (sample.go), spans
	// once read (Spans builds them in one array, Kept in pieces that
	// built points at; frozen says so, and whatever adds to the sample
	// again turns them back into rows). hashes[i] is the i-th span's
	// trace hash either way.
	kept   sampleRows
	spans  []span.Span
	built  []*span.Span
	frozen bool
	hashes []uint64
	// files[i] is the input file of the sample's i-th span, as SetFile
	// said (a merge of partial summaries orders the sample by file with
	// it).
	files []int32
	file  int32
	level uint // the sample keeps hash < 2^64 >> level
	// shared is level for Parts on other goroutines, which read it for
	// every span: on a cache line of its own, so that the sample's writes
	// next to it do not make every read a miss.
	_      [64]byte
	shared atomic.Uint32
	_      [60]byte
	mu     sync.Mutex               // guards told
	told   map[string]*atomic.Int64 // attempts per hop that Parts have published
	limit  int                      // SampleSpans, raised when one trace alone exceeds it
	total  int64                    // spans added
	loose  uint64                   // spans without a trace id, each its own request
	// lastID and lastHash are the previous span's trace id and its hash
	// (sp's strings may be borrowed: lastID is a copy).
	lastID   []byte
	lastHash uint64
	// The sample's head start (see Expect). spec is the level the
	// sample jumped to, 0 when it did not jump; target the level Expect
	// aims at (0: none); top the highest rank among the spans before the
	// first overflow; ranks counts every span by its hash's rank, whether
	// the sample or a Part turned it away, so that Held can check the
	// jump at the end; expected and estimated are what Expect was told;
	// noSpec is set once the Accum holds spans it did not rank (a
	// summary's); overflowed at the sample's first overflow.
	spec, target, top uint
	ranks             [65]int64
	expected          int64
	estimated, noSpec bool
	overflowed        bool
	// giant is the most spans the sample held when it had to drop them
	// all, their traces being over maxHold times SampleSpans (see fit).
	giant int
	// noHoldFloor: see hold.
	noHoldFloor bool
}

// maxHold bounds, in multiples of SampleSpans (of holdFloor when that is
// more), the spans the sample holds for traces that alone exceed
// SampleSpans: beyond it they leave the sample, so that one giant trace
// cannot take the memory that the sample exists to bound (some 400 MB at
// the default), while a small --sample-spans still sees a large trace
// whole.
const maxHold = 4

// holdFloor is the SampleSpans that hold is at least computed from.
const holdFloor = DefaultSampleSpans

// hold is how many spans the sample may hold for traces that alone
// exceed its limit (see maxHold). noHoldFloor (set by tests only, so
// that they can reach the bound without millions of spans) computes it
// from SampleSpans alone.
func (a *Accum) hold() int {
	if a.noHoldFloor {
		return maxHold * a.SampleSpans
	}
	return maxHold * max(a.SampleSpans, holdFloor)
}

// hopAcc is what an Accum keeps of one hop over all spans. The fields a
// successful attempt touches come first, in three cache lines (the name,
// the counts, the successes' digest, the slowest example): a reader adds
// every span to one of them, and with thousands of hops these lines are
// what stays in the cache or not.
type hopAcc struct {
	name string
	// n counts attempts, failed the failed ones, cut those of them the
	// span marks as cut by a timeout (flagged's count).
	n, failed, cut int
	told           int             // attempts a Part has told its Accum of (publish)
	succ           quantile.Digest // successful attempts
	// times are the attempts with their start, for the timeline's blocks
	// (hoptimes.go).
	times hopTimes
	// ex are the example traces behind the hop's figures; at is its
	// attribution state, nil until a span with attributes comes (see
	// attribution.go).
	ex      hopEx
	flagged quantile.Digest // failed attempts the span marks as cut (timeout flag or code)
	other   quantile.Digest // other failures
	at      *hopAttr
	// shared is this hop's count over all Parts (Accum.told), once a
	// Part has published it (publish).
	shared *atomic.Int64
	// first is what the hop's first span says besides its name (see
	// cardinality.go): a copy, read only when the hop names look
	// unbounded.
	first hopFirst
	// settled counts the leading attempts of times whose successes succ
	// holds. While times keep every attempt (level 0) a success is not
	// added to succ as it comes: its duration is in times already, and
	// settle adds the ones past settled, in the order they came, before
	// anything reads succ — the digest then holds what adding each at once
	// gives, value for value and in the same order. Over a million spans
	// that saved a third of the accumulation's time, which was a second
	// stream of writes into memory for every success.
	settled int
}

// settle adds to succ the successes times hold past settled (see
// settled). It is idempotent; at level > 0 every success went to succ
// as it came.
func (h *hopAcc) settle() {
	if h.times.level > 0 || h.settled == len(h.times.d) {
		return
	}
	rest := h.times.d[h.settled:]
	h.succ.Grow(len(rest))
	for _, d := range rest {
		if d >= 0 {
			h.succ.Add(d)
		}
	}
	h.settled = len(h.times.d)
}

// deferSuccess reports whether a success of d ns may wait in times
// (settle): while they keep every attempt, its next one does not make
// them thin (which drops attempts), and the digest is exact. Durations
// are never negative after the readers; one that is goes to succ at once
// (times would read it as a failure).
func (h *hopAcc) deferSuccess(d int64) bool {
	return h.times.level == 0 && len(h.times.d) < maxHopTimes && d >= 0 && h.succ.Exact()
}

// settleAll settles every hop (see settled): what reads the digests after
// the read calls it first.
func (a *Accum) settleAll() {
	for _, h := range a.hops {
		h.settle()
	}
}

// NewAccum returns an empty accumulator keeping at most sampleSpans spans
// of whole traces (0: DefaultSampleSpans).
func NewAccum(sampleSpans int) *Accum {
	if sampleSpans <= 0 {
		sampleSpans = DefaultSampleSpans
	}
	return &Accum{SampleSpans: sampleSpans, hops: map[string]*hopAcc{}}
}

// Add records one span. It copies what it keeps, so sp (and its strings)
// may be reused by the caller afterwards.
func (a *Accum) Add(sp *span.Span) {
	a.total++
	if h := a.hopOf(sp.Hop); h != nil {
		if h.n == 0 {
			h.first = firstOf(sp)
		}
		h.add(sp)
	}
	a.sample(sp)
}

// hopOf is hop's accumulator, created when new; nil when it would be one
// hop more than MaxHops (HopLimit then reports it).
func (a *Accum) hopOf(hop string) *hopAcc {
	h := a.last
	if h == nil || h.name != hop {
		h = a.hops[hop]
		if h == nil {
			if len(a.hops) >= a.maxHops() {
				a.overHops.Store(true)
				return nil
			}
			h = &hopAcc{name: hop}
			a.hops[hop] = h
		}
		a.last = h
	}
	return h
}

// DefaultMaxHops is how many distinct hops an Accum holds by default.
// Each costs a few kilobytes over the read and the report (1M hop names,
// URL paths with ids in them, took 3.3 GB), while a table of more than a
// few hundred hops is already past reading: a hundred thousand is far
// beyond any real service graph and stays within a few hundred MB.
const DefaultMaxHops = 100_000

func (a *Accum) maxHops() int {
	if a.MaxHops > 0 {
		return a.MaxHops
	}
	return DefaultMaxHops
}

// HopLimitError says that the logs hold more distinct hops than the
// Accum may hold (MaxHops): the analysis stops rather than grow without
// bound or report on the hops that happened to come first.
type HopLimitError struct {
	Limit int
	// Examples and HopBy are what the unbounded-hops rule says of the
	// hops held (names that differ only in ids, and the --hop-by values
	// that would bound them), when it applies.
	Examples, HopBy []string
	// Names names the settings the message tells the reader to change
	// (MaxHops, HopBy, Hops); nil: by option's own names.
	Names option.Names
}

func (e *HopLimitError) Error() string {
	maxHops, hopBy := e.Names.Of(option.MaxHops), e.Names.Of(option.HopBy)
	var b strings.Builder
	fmt.Fprintf(&b, "the logs hold more than %d distinct hops, the most %s allows", e.Limit, maxHops)
	if len(e.Examples) > 0 {
		fmt.Fprintf(&b, " (names that differ only in ids, e.g. %s)", quoteJoin(e.Examples))
	}
	b.WriteString(": ")
	if len(e.HopBy) > 0 {
		fmt.Fprintf(&b, "group the spans by a bounded name with %s %s, ", hopBy, strings.Join(e.HopBy, " or "+hopBy+" "))
	} else {
		fmt.Fprintf(&b, "group the spans by a bounded name with %s (service+name, or attr:KEY of a route template), ", hopBy)
	}
	fmt.Fprintf(&b, "narrow them with %s, or raise %s (each hop costs a few KB of memory)", e.Names.Of(option.Hops), maxHops)
	return b.String()
}

// HopLimit reports, once every Part has merged, whether the logs held
// more distinct hops than MaxHops: then the spans of the hops beyond it
// were counted nowhere, and the Accum must not be reported on.
func (a *Accum) HopLimit() error {
	if !a.overHops.Load() {
		return nil
	}
	e := &HopLimitError{Limit: a.maxHops(), Names: a.Names}
	if u := unboundedHops(a.seen()); u != nil {
		e.Examples, e.HopBy = u.Examples, u.HopBy
	}
	return e
}

// Ordered records a span that a Part has counted already and asked to see
// again (Part.Add returned true): it only goes through the trace sample.
// Spans must come in input order, as to Add.
func (a *Accum) Ordered(sp *span.Span) { a.sample(sp) }

// OrderedReads reports whether Ordered reads attribute key: the sample
// keeps only the keys that map a hop to its endpoint (routingKeys), so a
// reader may leave the others off the spans it gives Ordered where the
// span's hop ignores them too (see Part.AttrIgnored and
// ingest.OrderedKeys). Nothing else an Accum holds reads an attribute of
// an Ordered span.
func (a *Accum) OrderedReads(key string) bool { return routingKeys[key] }

// sample keeps sp when its trace is in the sample, halving the sample
// when it overflows.
func (a *Accum) sample(sp *span.Span) {
	var x uint64
	if sp.TraceID != "" {
		// A trace's spans mostly come together: hash its id once.
		if string(a.lastID) != sp.TraceID {
			a.lastID = append(a.lastID[:0], sp.TraceID...)
			a.lastHash = hashID(sp.TraceID)
		}
		x = a.lastHash
	} else {
		a.loose++
		x = mix(a.loose)
	}
	r := uint(bits.LeadingZeros64(x))
	a.ranks[r]++
	if a.level == 0 && a.target > 0 && !a.overflowed {
		// Before the first overflow every span is kept: its rank is
		// known in input order (see Expect).
		a.top = max(a.top, r)
		if r >= a.target {
			a.jump(a.target)
		}
	}
	if a.level > 0 && x>>(64-a.level) != 0 {
		return
	}
	if a.frozen {
		a.thaw()
	}
	// The trees use no attributes but those that map a hop to its
	// endpoint (copied: a reader's may be borrowed).
	c := a.kept.row(sp, copyIDs(sp), a.kept.set(sp.Attrs, true, !sp.StableAttrs))
	if a.limit == 0 {
		a.limit = a.SampleSpans
	}
	if rows := a.kept.rows; len(rows) == cap(rows) && len(rows) >= 4096 && len(rows) <= a.limit {
		// Large logs fill the sample to its limit: grow there in one step
		// rather than by doubling past it (fewer copies, less garbage).
		a.kept.rows = slices.Grow(rows, a.limit+1-len(rows))
		a.hashes = slices.Grow(a.hashes, a.limit+1-len(a.hashes))
		a.files = slices.Grow(a.files, a.limit+1-len(a.files))
	}
	a.kept.rows = append(a.kept.rows, c)
	a.hashes = append(a.hashes, x)
	a.files = append(a.files, a.file)
	a.fit()
}

// copyIDs copies sp's three ids into one allocation (a trace's id, the
// span's and its parent's are kept and dropped together; a reader's may
// be borrowed).
func copyIDs(sp *span.Span) string {
	buf := make([]byte, 0, len(sp.TraceID)+len(sp.SpanID)+len(sp.ParentID))
	buf = append(append(append(buf, sp.TraceID...), sp.SpanID...), sp.ParentID...)
	return unsafe.String(unsafe.SliceData(buf), len(buf)) // buf is not written again
}

// held is the number of spans in the sample.
func (a *Accum) held() int {
	switch {
	case !a.frozen:
		return len(a.kept.rows)
	case a.built != nil:
		return len(a.built)
	}
	return len(a.spans)
}

// keepSample keeps, in order, the sample's spans i for which keep(i) is
// true.
func (a *Accum) keepSample(keep func(i int) bool) {
	n := 0
	for i := range a.hashes {
		if !keep(i) {
			continue
		}
		switch {
		case !a.frozen:
			a.kept.rows[n] = a.kept.rows[i]
		case a.built != nil:
			a.built[n] = a.built[i]
		default:
			a.spans[n] = a.spans[i]
		}
		a.hashes[n], a.files[n] = a.hashes[i], a.files[i]
		n++
	}
	switch {
	case a.frozen && a.built != nil:
		clear(a.built[n:])
		a.built = a.built[:n]
	case a.frozen:
		clear(a.spans[n:])
		a.spans = a.spans[:n]
	default:
		clear(a.kept.rows[n:])
		a.kept.rows = a.kept.rows[:n]
		a.kept.compact()
	}
	a.hashes, a.files = a.hashes[:n], a.files[:n]
}

// freeze builds the sample's spans from its rows in one array, at its
// length (the rows' array is the sample's limit, and it is dropped); a
// sample built in pieces (build) is copied into one.
func (a *Accum) freeze() {
	if a.frozen {
		if a.built != nil {
			a.spans = make([]span.Span, len(a.built))
			for i, sp := range a.built {
				a.spans[i] = *sp
			}
			a.built = nil
		}
		return
	}
	if n := len(a.kept.rows); n > 0 {
		a.spans = make([]span.Span, n)
		for i := range a.kept.rows {
			a.spans[i] = a.kept.span(&a.kept.rows[i])
		}
	}
	a.kept = sampleRows{}
	a.frozen = true
}

// sampleChunk is how many spans build makes in one allocation (240 KB).
//
// Why in pieces. The sample's spans are made when the read is over, and
// the read's memory is then free but in pieces: on a million wide
// Parquet spans the heap held 50 MB free, none of it 15 MB in one run,
// so the sample's 62,000 spans in one array (15 MB) were fresh pages on
// top of the read's and set the process's peak. Pieces this size fit
// where the read was (Read collects first, see package pipeline).
const sampleChunk = 1024

// build makes the sample's spans from its rows as freeze does, but in
// pieces of sampleChunk spans, which built points at in the sample's
// order.
func (a *Accum) build() {
	rows := a.kept.rows
	if len(rows) > 0 {
		a.built = make([]*span.Span, len(rows))
		var chunk []span.Span
		for i := range rows {
			if len(chunk) == cap(chunk) {
				chunk = make([]span.Span, 0, min(sampleChunk, len(rows)-i))
			}
			chunk = append(chunk, a.kept.span(&rows[i]))
			a.built[i] = &chunk[len(chunk)-1]
		}
	}
	a.kept = sampleRows{}
	a.frozen = true
}

// thaw turns the sample's spans back into rows, for more to be added
// (after a merge of partial summaries, or a summary read).
func (a *Accum) thaw() {
	a.kept.rows = make([]sampleRow, 0, a.held())
	add := func(sp *span.Span) {
		a.kept.rows = append(a.kept.rows, a.kept.row(sp, copyIDs(sp), a.kept.set(sp.Attrs, false, false)))
	}
	if a.built != nil {
		for _, sp := range a.built {
			add(sp)
		}
	} else {
		for i := range a.spans {
			add(&a.spans[i])
		}
	}
	a.spans, a.built, a.frozen = nil, nil, false
}

// SetFile says that the spans added from now on come from input file i
// (0 until it is called; an index into the reader's list of files).
// Readers that know file boundaries call it so that partial summaries can
// merge their samples in input order (see Absorb).
func (a *Accum) SetFile(i int) { a.file = int32(i) }

// fit raises the sample's level until the kept spans fit in its limit.
func (a *Accum) fit() {
	if a.held() > a.limit && !a.overflowed {
		// The first overflow: the last moment a jump may happen, and
		// then no higher than the highest rank so far (see Expect).
		a.overflowed = true
		if a.level == 0 && a.target > 0 && a.top >= 2 {
			a.jump(min(a.target, a.top))
		}
	}
	for a.held() > a.limit && a.level < 63 {
		next := a.level + 1
		keep := 0
		for _, x := range a.hashes {
			if x>>(64-next) == 0 {
				keep++
			}
		}
		if hold := a.hold(); keep == 0 && a.held() <= hold {
			// Halving would empty the sample (one trace larger than the
			// limit): keep what there is, and look again only once it
			// has doubled (or reached the hold), so that this stays
			// linear.
			a.limit = min(2*a.held(), hold)
			break
		}
		if keep == 0 {
			// A trace too large to hold whole (2M spans took 2 GB in
			// the sample and its trees): halve all the same. It leaves
			// the call-tree sample; its spans stay counted per hop.
			a.giant = max(a.giant, a.held())
			a.limit = a.SampleSpans
		}
		a.level = next
		a.shared.Store(uint32(next))
		a.keepSample(func(i int) bool { return a.hashes[i]>>(64-a.level) == 0 })
	}
}

// The sample's head start.
//
// Left to itself the sample passes through every level from 0 to its
// final one, and at each it keeps every span of the traces under it until
// it overflows: on 10M spans that is some 450,000 spans copied into the
// sample (and, with Parts, sent in order to the one goroutine that owns
// it) to end with 80,000. When the reader can tell how many spans are
// coming (Expect: a Parquet file's row count, a JSON-lines file's size
// over its mean line), the sample jumps early, straight to a level a
// little below the one that many spans would end at, and skips the levels
// in between.
//
// The jump is only a shortcut: the result must be the sample that
// climbing level by level gives, to the byte. It is when two things hold.
// Write c_L for the number of spans whose hash has rank at least L (rank:
// leading zero bits; level L keeps exactly the traces of rank >= L, so
// the kept spans at level L are the c_L of them read so far).
//
//  1. Climbing never met the one irregular step below the jump's level
//     J: a level L whose kept spans all have rank exactly L when they
//     overflow (halving would empty the sample, so the limit is doubled
//     instead; see fit). That needs c_L > limit while c_{L+1} = 0: at
//     least limit+1 spans read, none of rank above L among them. So if
//     one of the first limit+1 spans has rank >= J, it cannot happen
//     below J. Until the first overflow the sample keeps every span and
//     sees them in input order, so it jumps to J as soon as a span of
//     rank >= J comes — on ordinary logs within the first few thousand
//     spans — and, if none has come by the first overflow, to the
//     highest rank seen (checked by construction).
//  2. Climbing would have reached J by the end: c_{J-1} > limit over the
//     whole input (checked by Held at the end, from ranks, which counts
//     every span once: the spans the sample saw and those the Parts
//     turned away).
//
// Without the irregular step, climbing sits at each moment at the lowest
// level L with c_L <= limit; after the jump the sample sits at the higher
// of J and that level (the same rule applied from J). Once climbing
// reaches J the two coincide, and 2 says it does. When 2 fails (the
// estimate was too high, or a few huge traces hold most spans) Held
// reports false and the caller reads the input again without a head
// start; a caller that cannot read its input twice must not call Expect.

// Expect tells a that about n more spans are coming (exact: n is a count,
// not an estimate), before they come. It only makes the sample cheaper to
// build: the result is the same, or Held reports false. Call it before
// the spans it announces, on the goroutine that calls Add and Ordered.
func (a *Accum) Expect(n int64, exact bool) {
	if n <= 0 || a.noSpec {
		return
	}
	a.expected += n
	a.estimated = a.estimated || !exact
	// Aim where the spans would leave 1.5×limit of them at the level
	// below (3×limit for an estimate): a count is off only by how the
	// hashes fall, an estimate by more, and a missed jump costs a second
	// read. J is the largest level with expected >= unit × 2^(J-1).
	limit := int64(a.SampleSpans)
	if limit <= 0 {
		limit = DefaultSampleSpans
	}
	unit := limit * 3 / 2
	if a.estimated {
		unit = limit * 3
	}
	j := uint(0)
	for k := a.expected / unit; k > 0; k >>= 1 {
		j++
	}
	if j >= 2 {
		a.target = j // level 1 is where climbing goes first anyway
	}
}

// jump raises the level from 0 to j (see Expect).
func (a *Accum) jump(j uint) {
	a.spec = j
	a.level = j
	a.shared.Store(uint32(j))
	a.keepSample(func(i int) bool { return a.hashes[i]>>(64-j) == 0 })
}

// Held reports whether the sample is the one climbing level by level
// gives (see Expect): true without a jump, or when the whole input holds
// more than limit spans of rank >= J-1 for the jump's level J. Call it
// once every Part has merged. When it is false the sample is not the
// right one and the input must be read again without Expect.
func (a *Accum) Held() bool {
	if a.spec == 0 {
		return true
	}
	var c int64
	for r := a.spec - 1; r < uint(len(a.ranks)); r++ {
		c += a.ranks[r]
	}
	return c > int64(a.SampleSpans)
}

// Part is the per-hop half of an Accum for one decoding goroutine. The
// sample must see spans in input order and the hop statistics need not
// (their digests merge exactly), so a parallel reader gives each of its
// goroutines a Part: Add counts the span into the Part's own hop digests
// and says whether the span may belong to the trace sample; the reader
// passes those spans, in input order, to Accum.Ordered, and Merge folds
// the Part back once its goroutine is done. The result is what Add on
// every span in input order gives, to the byte.
//
// Add may ask for more spans than the sample keeps: it reads the sample's
// level as it is now, and the level only rises, so Ordered, seeing the
// span later, sees a level at least as high and decides exactly as Add
// would have. Spans without a trace id always go to Ordered: each is its
// own trace, numbered in input order.
type Part struct {
	_    [64]byte // Parts of other goroutines stay off this one's cache lines
	a    *Accum
	hops map[string]*hopAcc
	// recent finds a hop's accumulator by its string's address without
	// hashing it: readers intern hop names, so a hop's spans share one
	// string (a miss falls back to the map). A hop sits in its slot or
	// one of the recentWays-1 after it, of 1<<recentBits slots (and the
	// ways past them); the slots grow with the hops (see grow), so that a
	// log's hops all find a slot and the map is left for new names. (With
	// two ways, three hops whose addresses fell on two neighbouring slots
	// left one of them to the map on every span: on a twelve-hop file, a
	// map lookup for one span in twelve in some runs and none in others.)
	recent     []*hopAcc
	recentBits uint
	n          int64
	quiet      int // spans since the last publish
	// dirty lists the hops that gained attempts since the last publish,
	// so that publishing costs what the Part added, not what it holds
	// (with hundreds of thousands of hops, a walk over all of them every
	// publishEvery spans made the read quadratic).
	dirty []*hopAcc
	// published counts the hop entries publish has visited: at most the
	// spans added, which the scaling test holds it to.
	published int64
	// lastID and lastHash are the previous span's trace id and its hash.
	lastID   []byte
	lastHash uint64
	// ranks counts the spans Add turned away by their hash's rank (see
	// Accum.Held); the sample counts the others.
	ranks [65]int64
	_     [64]byte
}

// AttrIgnored reports whether Add ignores the value of attribute key on
// every later span of hop: the hop's attribution dropped the key (more
// than AttrMaxValues values, or pushed out of its AttrMaxKeys). Nothing
// else in Add reads an attribute but the hop's first span (firstOf), and
// a hop with a dropped key has had that span; a dropped key never counts
// again, in this Part nor in what it merges into (hopAttr.merge), and a
// key pushed out never comes back. So a reader that leaves such a value
// off the spans it hands to Add changes nothing the Part accumulates
// (see record.AttrIgnorer). False for a hop the Part does not hold.
// Called on the Part's goroutine, like Add.
func (p *Part) AttrIgnored(hop, key string) bool {
	h := p.hops[hop]
	if h == nil || h.at == nil {
		return false
	}
	k := h.at.keys[key]
	return k != nil && k.dropped
}

// publishEvery is how many spans a Part adds between telling its Accum
// how many attempts each hop has (see publish).
const publishEvery = 8192

// Part returns a new Part of a. Parts may run concurrently with each
// other and with Ordered; Merge must not.
func (a *Accum) Part() *Part { return &Part{a: a, hops: map[string]*hopAcc{}} }

// Part.recent's size: 1<<recentBits slots, from minRecentBits, grown
// while the Part holds more hops than a quarter of them, up to
// maxRecentBits (256 KB of pointers: past that the hops' own state no
// longer stays in any cache, and a slot saves little over the map).
const (
	minRecentBits = 6
	maxRecentBits = 15
	recentWays    = 4
)

// grow sizes recent for the hops the Part holds: empty slots at first, a
// hop takes one again on its next span.
func (p *Part) grow() {
	bits := max(p.recentBits, minRecentBits)
	for bits < maxRecentBits && len(p.hops) > 1<<bits/4 {
		bits++
	}
	if bits != p.recentBits || p.recent == nil {
		p.recentBits = bits
		p.recent = make([]*hopAcc, 1<<bits+recentWays-1)
	}
}

// Add records sp's attempt in the Part's hop statistics and reports
// whether Accum.Ordered must see sp. Like Accum.Add it keeps nothing of
// sp's strings but the hop name.
func (p *Part) Add(sp *span.Span) bool {
	p.n++
	hop := sp.Hop
	if p.recent == nil {
		p.grow()
	}
	k := uint64(uintptr(unsafe.Pointer(unsafe.StringData(hop)))) * 0x9E3779B97F4A7C15 >> (64 - p.recentBits)
	h := p.recent[k]
	if h == nil || h.name != hop {
		h = nil
		for _, r := range p.recent[k+1 : k+recentWays] {
			if r != nil && r.name == hop {
				h = r
				break
			}
		}
		if h == nil {
			h = p.hops[hop]
			if h == nil && len(p.hops) < p.a.maxHops() {
				h = &hopAcc{name: hop, first: firstOf(sp)}
				p.hops[hop] = h
				if len(p.hops) > 1<<p.recentBits/4 && p.recentBits < maxRecentBits {
					p.grow()
					k = uint64(uintptr(unsafe.Pointer(unsafe.StringData(hop)))) * 0x9E3779B97F4A7C15 >> (64 - p.recentBits)
				}
			}
			if h == nil {
				p.a.overHops.Store(true) // one hop more than MaxHops: see HopLimit
			} else {
				// The first empty way, else the last way.
				ways := p.recent[k : k+recentWays]
				i := 0
				for i < len(ways)-1 && ways[i] != nil {
					i++
				}
				ways[i] = h
			}
		}
	}
	if h != nil {
		if h.n == h.told {
			p.dirty = append(p.dirty, h)
		}
		h.add(sp)
	}
	if p.quiet++; p.quiet >= publishEvery {
		p.publish()
	}
	if sp.TraceID == "" {
		return true
	}
	level := p.a.shared.Load()
	if level == 0 {
		return true
	}
	// A trace's spans mostly come together: hash its id once.
	if string(p.lastID) != sp.TraceID {
		p.lastID = append(p.lastID[:0], sp.TraceID...) // a copy: sp's may be borrowed
		p.lastHash = hashID(sp.TraceID)
	}
	if p.lastHash>>(64-level) == 0 {
		return true
	}
	p.ranks[bits.LeadingZeros64(p.lastHash)]++
	return false
}

// publish adds the Part's new attempts to the counts of all Parts, and
// turns the Part's digests of every hop past ExactLimit over all Parts
// into sketches. A hop past the exact range ends as sketches whatever the
// order of its values, so sketching early changes nothing but where the
// binning happens: here, on the Part's goroutine, in parallel, rather
// than in Merge at the end on one goroutine (and the exact values stop
// piling up in every Part).
func (p *Part) publish() {
	p.quiet = 0
	a := p.a
	var over []*hopAcc
	// A hop's count over all Parts is found under the lock the first
	// time the Part publishes it, and kept: later publishes add to it
	// without the lock or the lookup.
	locked := false
	p.published += int64(len(p.dirty))
	for _, h := range p.dirty {
		if h.shared == nil {
			if !locked {
				a.mu.Lock()
				locked = true
				if a.told == nil {
					a.told = map[string]*atomic.Int64{}
				}
			}
			if h.shared = a.told[h.name]; h.shared == nil {
				h.shared = new(atomic.Int64)
				a.told[h.name] = h.shared
			}
		}
		t := h.shared.Add(int64(h.n - h.told))
		h.told = h.n
		if t > quantile.ExactLimit && h.succ.Exact() {
			over = append(over, h)
		}
	}
	if locked {
		a.mu.Unlock()
	}
	clear(p.dirty)
	p.dirty = p.dirty[:0]
	for _, h := range over {
		h.settle()
		h.succ.Sketch()
		h.flagged.Sketch()
		h.other.Sketch()
	}
}

// Merge folds a Part's statistics into a; p is empty afterwards. The
// order in which Parts merge does not change the result.
func (a *Accum) Merge(p *Part) {
	a.total += p.n
	for r, n := range p.ranks {
		a.ranks[r] += n
	}
	names := make([]string, 0, len(p.hops))
	for name := range p.hops {
		names = append(names, name)
	}
	sort.Strings(names)
	// The hops are found (and made) in name order, as one loop would;
	// each hop's merge then reads and writes that hop alone, so the hops
	// merge on all cores (package par).
	hs := make([]*hopAcc, len(names))
	for i, name := range names {
		hs[i] = a.hopOf(name)
	}
	par.Ranges(len(names), mergeMinPer, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			if h := hs[i]; h != nil {
				h.merge(p.hops[names[i]])
			}
		}
	})
	*p = Part{a: a, hops: map[string]*hopAcc{}}
}

// mergeMinPer is the fewest hops a goroutine of Merge takes.
const mergeMinPer = 64

// merge adds o's attempts to h, in the form Add would have left them: a
// hop past the exact range has all three digests sketched.
func (h *hopAcc) merge(o *hopAcc) {
	h.settle()
	o.settle()
	defer func() { h.settled = len(h.times.d) }()
	if h.n == 0 && o.succ.Exact() && o.flagged.Exact() && o.other.Exact() {
		// Into an empty hop, o's values as they are, sorted: what merging
		// them into empty digests leaves, without copying them (o is
		// emptied by the caller). o is within the exact range (a hop past
		// it has its digests sketched). The successes stay unsorted:
		// Accum.Measure gives them sorted from the attempt times' order
		// (sortSuccesses), which the timeline sorts anyway.
		o.flagged.Sorted()
		o.other.Sorted()
		h.first = o.first
		h.n, h.failed, h.cut = o.n, o.failed, o.cut
		h.succ, h.flagged, h.other = o.succ, o.flagged, o.other
		o.succ, o.flagged, o.other = quantile.Digest{}, quantile.Digest{}, quantile.Digest{}
		h.ex.merge(&o.ex)
		h.at, o.at = o.at, nil
		h.times, o.times = o.times, hopTimes{}
		return
	}
	if h.n+o.n > quantile.ExactLimit {
		// Sketch first, so that o's exact values go straight into bins
		// instead of being appended to h's and then binned.
		h.succ.Sketch()
		h.flagged.Sketch()
		h.other.Sketch()
	}
	if h.n == 0 {
		h.first = o.first
	}
	h.n += o.n
	h.failed += o.failed
	h.cut += o.cut
	h.succ.MergeUnsorted(&o.succ) // sorted by sortSuccesses, or when read
	h.flagged.Merge(&o.flagged)
	h.other.Merge(&o.other)
	h.ex.merge(&o.ex)
	h.times.merge(&o.times)
	switch {
	case o.at == nil:
	case h.at == nil:
		h.at, o.at = o.at, nil
	default:
		h.at.merge(o.at)
	}
	if h.n > quantile.ExactLimit {
		h.succ.Sketch()
		h.flagged.Sketch()
		h.other.Sketch()
	}
}

func (h *hopAcc) add(sp *span.Span) {
	if h.times.level == 0 && len(h.times.d) >= maxHopTimes {
		// This attempt makes the times thin, dropping attempts whose
		// successes may wait there: succ takes them first.
		h.settle()
	}
	flagged := h.addDurations(sp, true)
	h.ex.add(sp, flagged)
	h.times.add(sp)
	if len(sp.Attrs) > 0 {
		if h.at == nil {
			h.at = &hopAttr{keys: map[string]*keyAttr{}}
		}
		h.at.add(sp, flagged)
	}
}

// addDurations counts sp where the per-hop statistics read it (stats):
// the attempts, and its duration among the successes, the failures its
// span marks as cut (markedCut), or the other failures. It reports
// whether the span marks it as cut. With wait (add, which puts every
// attempt in times next) a success may wait in times (settled).
func (h *hopAcc) addDurations(sp *span.Span, wait bool) (flagged bool) {
	h.n++
	switch {
	case !sp.Failed():
		if !wait || !h.deferSuccess(sp.Duration) {
			h.settle()
			h.succ.Add(sp.Duration)
			if wait {
				// times take this attempt next (add), and succ has it.
				h.settled = len(h.times.d) + 1
			}
		}
	case markedCut(sp):
		h.failed++
		h.cut++
		h.flagged.Add(sp.Duration)
		flagged = true
	default:
		h.failed++
		h.other.Add(sp.Duration)
	}
	// A hop past the exact range turns all its digests into sketches
	// together, so that merging them never mixes forms.
	if h.n == quantile.ExactLimit+1 {
		h.settle()
		h.succ.Sketch()
		h.flagged.Sketch()
		h.other.Sketch()
	}
	return flagged
}

// cutValues are the hop's successful durations and those of its attempts
// cut by a timeout T (cutBy: marked, or failed within its tolerance),
// each ascending; past the exact range, the sketches' values.
func (h *hopAcc) cutValues(T int64) (succ, cut []int64) {
	lo, hi := cutWindow(T)
	h.other.Each(func(v int64, c int) {
		if T > 0 && v >= lo && v <= hi {
			for range c {
				cut = append(cut, v)
			}
		}
	})
	return digestValues(&h.succ), mergeAscending(digestValues(&h.flagged), cut)
}

// digestValues are d's values ascending: its own when exact, else each
// sketch value as often as it counts.
func digestValues(d *quantile.Digest) []int64 {
	if d.Exact() {
		return d.Sorted()
	}
	var out []int64
	d.Each(func(v int64, c int) {
		for range c {
			out = append(out, v)
		}
	})
	return out
}

// hashID is a fixed (seedless, so deterministic across runs) 64-bit hash
// of a trace id: 8 bytes at a time through a multiply-xorshift mixer.
func hashID(s string) uint64 {
	h := uint64(len(s)) * 0x9E3779B97F4A7C15
	for len(s) >= 8 {
		v := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		h = mix(h ^ v)
		s = s[8:]
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		v |= uint64(s[i]) << (8 * i)
	}
	return mix(h ^ v ^ 0xff)
}

func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hopAcc is the state of a hop over every span (nil when none came).
func (a *Accum) hopAcc(name string) *hopAcc { return a.hops[name] }

// Total is the number of spans added.
func (a *Accum) Total() int64 { return a.total }

// Sampled reports whether traces were dropped from the sample.
func (a *Accum) Sampled() bool { return a.level > 0 }

// Spans returns the kept spans: all of them when not Sampled. The read
// is over when they are asked for: they are built then (see sample.go),
// in one array, and are the same slice until spans are added again.
// Asked for after Kept, they are copies of its spans.
func (a *Accum) Spans() []span.Span {
	a.freeze()
	return a.spans
}

// Kept is Spans by pointer, in the same order. Asked for before Spans,
// the spans are built in pieces rather than in one array (see build): a
// read's report takes them so. They are the same spans until spans are
// added again or Spans is asked for (which copies them into one array);
// asked for after Spans, they point into it.
func (a *Accum) Kept() []*span.Span {
	if !a.frozen {
		a.build()
	}
	if a.built != nil || len(a.spans) == 0 {
		return a.built
	}
	return spanPointers(a.spans)
}

// Sample describes the trace sample the tree-based parts of a report
// rest on, when the logs were too large to keep whole.
type Sample struct {
	// Spans and Traces are what the sample holds, of TotalSpans.
	Spans      int     `json:"spans"`
	Traces     int     `json:"traces"`
	TotalSpans int64   `json:"total_spans"`
	Fraction   float64 `json:"fraction"`
	// SuccessRate95 is the 95% interval of the request success rate that
	// a sample of Traces requests implies (Wilson score interval).
	SuccessRate95 [2]float64 `json:"success_rate_95"`
	// From lists what comes from the sample; everything else is over
	// all spans.
	From []string `json:"from_sample"`
}

// Measure analyses what was accumulated, without the recommendation
// (package recommend runs after it, then Complete). When nothing had to
// be sampled it is exactly Measure over all spans; otherwise the per-hop
// counts, latency percentiles, censoring, time to success (and so the
// recommended timeouts) and histograms are over all spans, and the
// tree-based parts over the sample, which Complete states. reqs and probs
// come from span.Assemble(a.Spans()) or span.AssemblePointers(a.Kept()).
func (a *Accum) Measure(reqs []*span.Request, probs span.Problems, opt Options) *Report {
	// Attribution and examples come from the per-hop state over every
	// span: the sample keeps no attributes.
	a.sortSuccesses()
	src := measureSources{state: a.hopAcc, seen: a.seen(), times: a.timesSource(), overAll: a.Sampled()}
	return measure(a.Kept(), reqs, probs, opt, src)
}

// Complete finishes a report of what was accumulated once it is
// recommended: when the logs were sampled, it adds the hops no sampled
// trace reached and says what rests on the sample (Report.Sample and its
// warnings). It returns the names of the hops it added: no recommendation
// reached them either, and the caller says how the policy covers them.
func (a *Accum) Complete(rep *Report, reqs []*span.Request) []string {
	if !a.Sampled() {
		return nil
	}
	added := a.addUnsampledHops(rep)
	traces := map[uint64]bool{}
	for _, x := range a.hashes {
		traces[x] = true
	}
	s := &Sample{Spans: a.held(), Traces: len(reqs), TotalSpans: a.total,
		Fraction: math.Ldexp(1, -int(a.level)),
		From:     []string{"calls", "retry_yield", "failure_class", "evidence", "call_failure_histogram", "km_latency_ms", "requests", "predicted_effect", "recommended_policy.budget_ms", "retries"}}
	s.SuccessRate95[0], s.SuccessRate95[1] = wilson(rep.Requests.Succeeded, rep.Requests.Count)
	rep.Sample = s
	if a.giant > 0 {
		rep.Warnings = append(rep.Warnings, Warning{Code: "giant-trace", Message: fmt.Sprintf(
			"at least %d spans belong to traces too large to keep whole (over %d spans): those traces are kept out of the call trees, requests and replay, and their spans counted in the per-hop figures; raise %s above a quarter of a trace's spans to see it whole (about 1 KB of memory per span)",
			a.giant, a.hold(), rep.opt.Names.Of(option.SampleSpans))})
	}
	rep.Warnings = append(rep.Warnings, Warning{Code: "sampled", Message: fmt.Sprintf(
		"%d spans are more than the %d kept whole: per-hop counts, percentiles and timeouts are over all spans, while calls, retry yield, failure classes, requests and replay rest on a deterministic sample of %d traces (%d spans, 1/%d of trace ids); the request success rate is known to ±%.1f points (95%%)",
		a.total, a.SampleSpans, len(reqs), a.held(), 1<<a.level, 50*(s.SuccessRate95[1]-s.SuccessRate95[0]))})
	return added
}

// addUnsampledHops reports the hops that no sampled trace reached (rare
// hops in very large logs), and returns their names: their counts and
// percentiles are known over all spans, their class and retry yield are
// not.
func (a *Accum) addUnsampledHops(rep *Report) []string {
	seen := make(map[string]bool, len(rep.Hops))
	for _, h := range rep.Hops {
		seen[h.Hop] = true
	}
	// With unbounded hop names most hops are missing from the sample: grow
	// once rather than by doubling a slice of large structs.
	rep.Hops = slices.Grow(rep.Hops, len(a.hops)-len(seen))
	// By name, not in the map's order: each hop's warnings are appended
	// as it is filled, and a report must not change from run to run.
	var missing []string
	for name := range a.hops {
		if !seen[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	var added []string
	for _, name := range missing {
		acc := a.hops[name]
		h := Hop{Hop: name, FailureHistogram: []quantile.Bucket{}, CallFailureHistogram: []quantile.Bucket{}, TimeoutSource: SourceUnknown,
			FailureClass: ClassTooFew, Evidence: units.Count(acc.n, "attempt", "attempts") + ", none in the trace sample: class and retry yield unknown"}
		acc.stats(&h, nsOf(h.TimeoutMs), optionsOf(rep), rep, true)
		attribute(&h, acc)
		// No tree shows its place: a call, as flat logs' spans are.
		h.Role = RoleCall
		rep.Hops = append(rep.Hops, h)
		added = append(added, name)
	}
	if len(added) > 0 {
		slices.SortFunc(rep.Hops, func(x, y Hop) int { return strings.Compare(x.Hop, y.Hop) })
	}
	return added
}

// wilson is the 95% Wilson score interval of k successes in n.
func wilson(k, n int) (float64, float64) {
	if n == 0 {
		return 0, 1
	}
	const z = 1.96
	p, nf := float64(k)/float64(n), float64(n)
	d := 1 + z*z/nf
	c := (p + z*z/(2*nf)) / d
	w := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / d
	return units.Round(math.Max(0, c-w), 4), units.Round(math.Min(1, c+w), 4)
}

// stats sets h's counts, percentiles, cut attempts (Censored), time to
// success and, with histograms, its latency and failure histograms from
// the hop's accumulated durations, and adds the hop's warnings on them to
// rep: the one implementation of the per-hop statistics, over every span
// (an Accum's state) or over the spans a report was given (hopStats). T
// is the hop's timeout as found on its spans (the policy in force, the
// span attribute, or inferred): a failure that ended within its tolerance
// was cut by it (cutBy).
func (acc *hopAcc) stats(h *Hop, T int64, opt Options, rep *Report, histograms bool) {
	acc.settle()
	h.Attempts, h.FailedAttempts = acc.n, acc.failed
	// Cut attempts: marked by the span, or failed and ended at T. Within
	// the exact range the unions below are of sorted lists, read in place
	// (runs) but for the failures, merged into one new list (fewer: the
	// histogram reads it); past it, of digests.
	lo, hi := cutWindow(T)
	var all, tts, failed, nearT fillValues
	if acc.succ.Exact() {
		succ, flagged, other := acc.succ.Sorted(), acc.flagged.Sorted(), acc.other.Sorted()
		var near []int64
		if T > 0 {
			a := sort.Search(len(other), func(i int) bool { return other[i] >= lo })
			b := sort.Search(len(other), func(i int) bool { return other[i] > hi })
			near = other[a:b]
		}
		all.r = runs{succ, flagged, other}
		tts.r = runs{succ, flagged, near}
		failed.r = runs{mergeAscending(flagged, other)}
		nearT.r = runs{near}
		all.exact, failed.exact, tts.exact, nearT.exact = true, true, true, true
	} else {
		var nd quantile.Digest
		if T > 0 {
			acc.other.Each(func(v int64, c int) {
				if v >= lo && v <= hi {
					for range c {
						nd.Add(v)
					}
				}
			})
		}
		var ad, td, fd quantile.Digest
		for _, d := range []*quantile.Digest{&acc.succ, &acc.flagged, &acc.other} {
			ad.Merge(d)
		}
		fd.Merge(&acc.flagged)
		fd.Merge(&acc.other)
		td.Merge(&acc.succ)
		td.Merge(&acc.flagged)
		td.Merge(&nd)
		ad.Sketch()
		td.Sketch()
		fd.Sketch()
		all.d, tts.d, failed.d, nearT.d = &ad, &td, &fd, &nd
	}
	cut := acc.cut + nearT.n()
	h.TimeoutAttempts = cut
	cutMin := int64(math.MaxInt64)
	if acc.flagged.N() > 0 {
		cutMin = acc.flagged.Min()
	}
	if nearT.n() > 0 {
		cutMin = min(cutMin, nearT.min())
	}
	known, knownTTS := all.n(), tts.n()
	if cut > 0 {
		known, knownTTS = all.below(cutMin), tts.below(cutMin)
	}
	var unknown []string
	h.LatencyMs, unknown = all.percentiles(known)
	if cut > 0 {
		// The most frequent cut, to the ms (within SketchAlpha past the
		// exact range).
		cutCount := map[int64]int{}
		acc.flagged.Each(func(v int64, c int) { cutCount[roundMs(v)] += c })
		nearT.each(func(v int64, c int) { cutCount[roundMs(v)] += c })
		h.Censored = &Censored{TimeoutMs: units.Ms(modeKey(cutCount)), Attempts: cut, Fraction: units.Round(float64(cut)/float64(all.n()), 4),
			AtLeastMs: units.Ms(cutMin), Unknown: orEmpty(unknown)}
	} else {
		h.Censored = nil
	}
	h.SuccessLatencyMs, _ = tts.percentiles(knownTTS)
	h.ttsCount = tts.n()
	h.targetKnown = false
	if q := opt.Percentile / 100; PercentileKnown(tts.n(), knownTTS, q) {
		h.target, h.targetKnown = tts.quantile(q), true
	}
	if tts.n() > 0 && knownTTS > 0 {
		// The median of the certain values (below any cut).
		if tts.exact {
			h.p50TTS = tts.r.quantile(knownTTS, 0.5)
		} else {
			h.p50TTS = tts.quantile(0.5 * float64(knownTTS-1) / float64(max(1, tts.n()-1)))
		}
		h.maxTTS = int64(tts.at(knownTTS - 1))
	}
	h.ttsAt, h.ttsKnown = tts.quantileFunc(), knownTTS
	h.ttsAbove = func(t int64) int {
		if t == math.MaxInt64 {
			return 0
		}
		return tts.n() - tts.below(t+1)
	}
	switch {
	case !histograms:
	case failed.exact:
		h.FailureHistogram = quantile.Histogram(failed.r[0], failureWidth(failed.r[0]))
	default:
		h.FailureHistogram = digestHistogram(failed.d, quantile.NiceWidth(failed.d.Max(), 100))
	}
	switch {
	case !histograms:
	case all.exact:
		h.LatencyHistogram = logHistogram(all.r.all())
	default:
		h.LatencyHistogram = digestLogHistogram(all.d)
	}
	if h.Attempts < MinSamplesP99 {
		rep.Warnings = append(rep.Warnings, Warning{Code: "too-few-samples", Hop: h.Hop,
			Message: fmt.Sprintf("%s: p99 needs at least %d to be more than the largest values", units.Count(h.Attempts, "attempt", "attempts"), MinSamplesP99)})
	}
	if h.Censored != nil && len(h.Censored.Unknown) > 0 {
		rep.Warnings = append(rep.Warnings, Warning{Code: "censored-tail", Hop: h.Hop,
			Message: fmt.Sprintf("%d of %d attempts (%s) were cut at %s: %s only known to be ≥ %s; raise the timeout on a canary to see the tail",
				cut, h.Attempts, units.PercentOf(cut, h.Attempts, 1), units.Millis(h.Censored.TimeoutMs), joinNames(unknown), units.Millis(h.Censored.AtLeastMs))})
	}
}

// fillValues is one of the unions stats reads: its values ascending
// (exact: what a Digest of them would hold, sorted, read in place as
// runs) or, past the exact range, a sketch; each method answers what the
// Digest's would.
type fillValues struct {
	exact bool
	r     runs
	d     *quantile.Digest
}

func (v *fillValues) n() int {
	if v.exact {
		return v.r.n()
	}
	return v.d.N()
}

func (v *fillValues) min() int64 {
	if v.exact {
		return v.r.min()
	}
	return v.d.Min()
}

// below counts the values certainly below x (Digest.Below).
func (v *fillValues) below(x int64) int {
	if v.exact {
		return v.r.below(x)
	}
	return v.d.Below(x)
}

func (v *fillValues) quantile(q float64) float64 {
	if v.exact {
		return v.r.quantile(v.r.n(), q)
	}
	return v.d.Quantile(q)
}

// quantileFunc is quantile as a function that holds only what it reads
// (exact: the hop's digests' lists, which live as long anyway).
func (v *fillValues) quantileFunc() func(float64) float64 {
	if v.exact {
		r := v.r
		return func(q float64) float64 { return r.quantile(r.n(), q) }
	}
	return v.d.Quantile
}

func (v *fillValues) at(r int) float64 {
	if v.exact {
		return float64(v.r.at(r))
	}
	return v.d.At(r)
}

func (v *fillValues) percentiles(known int) (Latency, []string) {
	if v.exact {
		return latencyOf(v.r.n(), known, v.quantile)
	}
	return digestPercentiles(v.d, known)
}

// each calls f with each distinct value and its count, ascending
// (Digest.Each).
func (v *fillValues) each(f func(v int64, c int)) {
	if !v.exact {
		v.d.Each(f)
		return
	}
	v.r.each(f)
}

// optionsOf recovers the analysis options measure stored for fill.
func optionsOf(rep *Report) Options { return rep.opt }

// digestPercentiles is percentiles over a Digest.
func digestPercentiles(d *quantile.Digest, known int) (Latency, []string) {
	if d.Exact() {
		return percentiles(d.Sorted(), known)
	}
	return latencyOf(d.N(), known, d.Quantile)
}

// digestHistogram is quantile.Histogram over a Digest's values.
func digestHistogram(d *quantile.Digest, width int64) []quantile.Bucket {
	out := []quantile.Bucket{}
	if d.N() == 0 || width <= 0 {
		return out
	}
	d.Each(func(v int64, c int) {
		k := v / width
		if n := len(out); n > 0 && out[n-1].FromMs == units.Ms(k*width) {
			out[n-1].Count += c
			return
		}
		out = append(out, quantile.Bucket{FromMs: units.Ms(k * width), ToMs: units.Ms((k + 1) * width), Count: c})
	})
	return out
}

// digestLogHistogram is LogHistogram over a Digest's values.
func digestLogHistogram(d *quantile.Digest) []quantile.Bucket {
	if d.Exact() {
		return LogHistogram(d.Sorted())
	}
	out := []quantile.Bucket{}
	idx := func(ns int64) int {
		if units.Ms(ns) < 1 {
			return -1
		}
		return int(math.Floor(10 * fastlog.Log10(units.Ms(ns))))
	}
	edge := func(i int) float64 {
		if i < 0 {
			return 0
		}
		return math.Round(math.Pow(10, float64(i)/10)*1000) / 1000
	}
	d.Each(func(v int64, c int) {
		i := idx(v)
		if n := len(out); n > 0 && out[n-1].FromMs == edge(i) {
			out[n-1].Count += c
			return
		}
		out = append(out, quantile.Bucket{FromMs: edge(i), ToMs: edge(i + 1), Count: c})
	})
	return out
}

// seen lists every hop for the cardinality rule (the sample's spans do
// not carry attributes: each hop's first span was read as it was added).
//
// A reader may defer decoding a span's service and name until the span
// joins the sample (the flat fast path does): a hop whose first span had
// neither takes them from its first span in the sample, if any.
func (a *Accum) seen() []hopSeen {
	out := make([]hopSeen, 0, len(a.hops))
	var inSample map[string][2]string
	for name, h := range a.hops {
		f := h.first
		if f.service == "" && f.name == "" {
			if inSample == nil {
				inSample = map[string][2]string{}
				for _, sp := range a.Kept() {
					if _, ok := inSample[sp.Hop]; !ok {
						inSample[sp.Hop] = [2]string{sp.Service, sp.Name}
					}
				}
			}
			if sn, ok := inSample[name]; ok {
				f.service, f.name = sn[0], sn[1]
			}
		}
		out = append(out, hopSeen{name: name, attempts: h.n, first: f})
	}
	slices.SortFunc(out, func(x, y hopSeen) int { return strings.Compare(x.name, y.name) })
	return out
}
