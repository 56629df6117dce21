package flat

import (
	"math"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// Fast rows: flat Parquet straight into the per-worker accumulators.
//
// With a Fork (the analysis), most spans stop at their Branch: it counts
// the attempt into its hop's digests and needs only the hop, the duration,
// the outcome and the trace id (to tell whether the trace is in the
// sample). Building a whole record for each of them — every column's value
// set, finish, accept — costs more than decompressing the pages. So when a
// file's columns are all of the kinds the flat schema writes (what
// `tailscope convert` and export produce), a batch is read in two passes:
//
//  1. the columns the Branch needs are read into a small struct per row,
//     the row's outcome is settled exactly as finish and accept would
//     settle it, and the Branch takes it; a row with anything unusual (a
//     null or negative duration, a blank hop, a status or value a setter
//     would keep as text or ignore) is left for the second pass untouched;
//  2. only the rows the Branch hands back (the trace sample) and the
//     unusual ones are built as records from every column, with the
//     setters of the batch reader, in row order: their spans, skips and
//     ignored values are exactly the batch reader's.
//
// The columns no fast row looks at (span and parent ids, service, name,
// kind, peer) are still decompressed — a page holds some sampled row
// almost always — but their values are only touched for the rows of the
// second pass. A batch never crosses a page of any column, so every row's
// value can be addressed directly in both passes.

// pqRole is what the first pass does with a column.
type pqRole uint8

const (
	roleNone      pqRole = iota // a column the first pass cannot read: no fast rows for the file
	roleIgnore                  // no bearing on a fast row (ids, service, name, kind, peer)
	roleHop                     // the hop column (dictionary strings)
	roleDur                     // integer ns durations
	roleStart                   // integer ns starts
	roleStatus                  // status words (dictionary)
	roleTimeout                 // the timeout flag
	roleCode                    // integer codes
	roleAttempt                 // integer attempt numbers
	roleTimeoutMs               // the timeout in force, ms
	roleWeight                  // adjusted counts
	roleTrace                   // text trace ids
	roleAttr                    // a column no span field takes: the span's attributes
	roleCodeText                // an error kind as text (export's code_text): null or blank in a fast row
)

// roleOf is c's role, roleNone when its field or physical type is not one
// the first pass reads.
func roleOf(c *pqCursor) pqRole {
	spec := c.col.spec
	if c.col.attr {
		return roleAttr
	}
	if spec.hopAttr {
		return roleNone
	}
	switch spec.f {
	case fSpanID, fParentID, fService, fName, fKind, fPeer:
		// Their setters never skip a record nor ignore a value, and the
		// hop is not named by them (see fastPlan).
		return roleIgnore
	case fHop:
		if c.target != nil {
			return roleHop
		}
		return roleNone
	case fStatus:
		if c.kind == parquet.ByteArray || c.kind == parquet.FixedLenByteArray {
			return roleStatus
		}
		return roleNone
	case fTraceID:
		if c.fast == fastID {
			return roleTrace
		}
		return roleNone
	case fCodeText:
		// Export writes the column, null but where a code was text: a
		// row with a value is the records' (it may decide the outcome).
		if c.kind == parquet.ByteArray || c.kind == parquet.FixedLenByteArray {
			return roleCodeText
		}
		return roleNone
	}
	switch c.fast {
	case fastDuration:
		return roleDur
	case fastStart:
		return roleStart
	case fastTimeout:
		return roleTimeout
	case fastCode:
		return roleCode
	case fastAttempt:
		return roleAttempt
	case fastTimeoutMs:
		return roleTimeoutMs
	case fastWeight:
		return roleWeight
	}
	return roleNone
}

// fastPlan gives the worker its column roles when the file and the
// options allow fast rows: a Fork with borrowed spans, hops named by the
// hop column, and every column one the first pass reads, with a hop and a
// duration among them. With filters (--since, --until, --exclude, --hops,
// --exclude-hops) a row a filter would leave out goes to the records
// (filtered is an event of its own, counted by the span's key): the rows
// kept stay fast.
func (w *pqWorker) fastPlan(src *record.Source) {
	if w.branch == nil || !w.borrow || src.Options().Paths.NoFastRows {
		return
	}
	o := src.Options()
	hopBy := o.HopBy
	if hopBy == "" {
		hopBy = src.DefaultHopBy()
	}
	if hopBy != "hop" {
		return
	}
	w.filters = o.SinceOn() || o.UntilOn() || len(o.Exclude) > 0 || o.Hops != nil || o.ExcludeHops != nil
	if w.filters {
		w.opt, w.hopKept = o, map[string]bool{}
	}
	roles := make([]pqRole, len(w.curs))
	var hop, dur bool
	for j := range w.curs {
		r := roleOf(&w.curs[j])
		if r == roleNone {
			return
		}
		hop, dur = hop || r == roleHop, dur || r == roleDur
		roles[j] = r
	}
	if !hop || !dur {
		return
	}
	w.roles = roles
	w.planIgnore()
	if w.nattr > 0 {
		w.sets = newAttrSets(w)
	}
	w.unread = make([]bool, len(w.curs))
	// Attribute columns a row group may leave unread (parquet_unread.go):
	// those the Fork's Ordered does not read, among the ignorable ones.
	if ord, _ := src.Fork().(record.OrderedKeys); ord != nil && w.ign != nil {
		for j, b := range w.ign.bit {
			if b != 0 && !ord.OrderedReads(w.curs[j].col.name) {
				w.droppable |= b
			}
		}
	}
	w.lite = make([]pqLite, pqBatchRows)
	w.need = make([]int32, 0, pqBatchRows)
	w.again = make([]bool, pqBatchRows)
	w.dense = make([]int32, len(w.curs))
	w.vidx = make([][]int32, len(w.curs))
	for j := range w.vidx {
		w.vidx[j] = make([]int32, pqBatchRows)
	}
}

// pqLite is what the first pass reads of a row.
type pqLite struct {
	hop, trace         string
	start, dur, tif    int64
	weight             float64
	code, statusCode   int
	attempt            int
	status             span.Status
	hasStatus, timeout bool
	errTimeout         bool
	hasStart, hasDur   bool
	codeSet, attSet    bool
	odd                bool // something only the record path decides
}

// fastBatch reads up to m rows after row base (0-based) in two passes (see
// above). It returns the rows read and, like batch, false after a read
// error; handled is false when a page of this batch is in a form the
// first pass does not read (a dictionary where values are plain, or the
// reverse): batch then reads the n rows the usual way.
func (w *pqWorker) fastBatch(ch *pqChunk, base int64, m int) (n int, ok, handled bool) {
	in := w.recs[0].intern
	if w.rgFresh || (w.ign != nil && w.ign.changed) {
		w.rgFresh = false
		w.planUnread(in)
	}
	// Every column at a page with rows left, and the batch cut where the
	// first of them ends. A read error here is the error of the batch's
	// first row, in the first column that fails: what the row-by-row
	// order gives, as no column failed earlier in the file. A batch with
	// a row whose hop is derived reads the unread columns again.
	for {
		for j := range w.curs {
			if w.unread[j] {
				continue
			}
			c := &w.curs[j]
			for c.di >= c.dn {
				if err := c.load(in); err != nil {
					ch.err = pqRowError(base+1, c.col.name, err)
					return 0, false, true
				}
			}
			m = min(m, c.dn-c.di)
		}
		if w.nunread == 0 || !w.hopless(m) {
			break
		}
		if err := w.revive(base); err != nil {
			ch.err = err
			return 0, false, true
		}
	}
	for j := range w.curs {
		if w.unread[j] {
			continue
		}
		c := &w.curs[j]
		switch w.roles[j] {
		case roleHop, roleStatus:
			if c.dict == nil {
				return m, true, false
			}
		case roleIgnore, roleAttr, roleCodeText:
		default:
			if c.dict != nil {
				return m, true, false
			}
		}
	}
	// Where each row's value is in its page (-1: null), and the cursors
	// moved past the batch; the pages stay until the next batch loads.
	// A page without nulls holds row i's value at dense[j]+i: no index
	// is written for it.
	for j := range w.curs {
		if w.unread[j] {
			continue
		}
		c := &w.curs[j]
		vx := w.vidx[j][:m]
		if c.defs == nil {
			w.dense[j] = int32(c.vi)
			c.vi += m
		} else {
			// Without a branch (parent ids, codes and the like are
			// null here and there, which a branch mispredicts): row i
			// takes value v when it has one (on = 1), else -1.
			w.dense[j] = -1
			v, md := int32(c.vi), c.maxDef
			for i, d := range c.defs[c.di : c.di+m] {
				on := int32(0)
				if d == md {
					on = 1
				}
				vx[i] = (v+1)*on - 1
				v += on
			}
			c.vi = int(v)
		}
		c.di += m
	}
	lite := w.lite[:m]
	clear(lite)
	if w.attrs != nil {
		for i := range w.attrs[:m] {
			w.attrs[i] = w.attrs[i][:0]
		}
	}
	if w.ign != nil {
		w.ignoreBatch(m)
	}
	w.loose = false
	shared := w.sets != nil && w.sets.batch(w, m)
	for j := range w.curs {
		if w.roles[j] == roleAttr {
			if !shared && !w.unread[j] {
				w.attrColumn(j, m)
			}
		} else if d := w.dense[j]; d >= 0 {
			w.liteDense(&w.curs[j], w.roles[j], int(d), lite)
		} else {
			w.liteColumn(&w.curs[j], w.roles[j], w.vidx[j][:m], lite)
		}
	}
	// The rows the Branch takes here, and those left for the records.
	need := w.need[:0]
	out := 0 // rows a filter leaves out
	again := w.again[:m]
	sp := &w.one
	for i := range lite {
		l := &lite[i]
		again[i] = false
		if l.odd || !l.hasDur || l.dur < 0 || l.hop == "" ||
			(l.hasStart && (l.start < 0 || (l.start > 0 && l.start+l.dur < l.start))) {
			need = append(need, int32(i))
			continue
		}
		if w.filters && w.leftOut(l) {
			need = append(need, int32(i))
			out++
			continue
		}
		l.fill(sp)
		if shared {
			// The row's shared list (attrSets): the same attributes.
			sp.Attrs, sp.StableAttrs, sp.SharedAttrs = w.sets.lists[i], true, true
		} else if w.attrs != nil {
			// What row gives the record: the attributes in column
			// order, none as nil.
			sp.Attrs = nil
			if len(w.attrs[i]) > 0 {
				sp.Attrs = w.attrs[i]
			}
			// Column names and interned texts, unless a value of the
			// batch was written in its text (attrPlain).
			sp.StableAttrs, sp.SharedAttrs = !w.loose, false
		}
		ch.Used++
		if w.branch.Take(sp) {
			need, again[i] = append(need, int32(i)), true
			continue
		}
		if l.hasStart {
			w.units.starts[startClass(l.start)]++ // what finish records
		}
	}
	w.need = need
	if w.filters && 2*out > m && m >= 64 {
		w.slow = pqSlowBatches
	}
	if len(need) > 0 {
		if shared {
			// records reads the first pass's attributes from w.attrs.
			for _, row := range need {
				w.attrs[row] = append(w.attrs[row][:0], w.sets.lists[row]...)
			}
		}
		w.records(ch, base, need, again)
	}
	w.release()
	return m, true, true
}

// applyStatus takes a status column's dictionary entry into the row, as
// the record path's setter would: a status (with the timeout it implies
// and a code), nothing, or a value that sends the row to the record path.
func (l *pqLite) applyStatus(e *pqEntry) {
	switch e.op {
	case opStatus:
		l.status, l.hasStatus = e.st, true
		l.timeout = l.timeout || e.to
		if e.code != 0 {
			l.statusCode = e.code
		}
	case opNothing:
	default:
		l.odd = true
	}
}

// liteColumn reads column c into the rows' lite structs. Each case does
// what the setter does with a value of that kind, or marks the row odd
// where the setter would do more (keep text, ignore a value, fail).
func (w *pqWorker) liteColumn(c *pqCursor, role pqRole, vx []int32, lite []pqLite) {
	switch role {
	case roleHop:
		ops, strs, idx := c.ops, c.strs, c.idx
		for i, v := range vx {
			if v < 0 {
				continue
			}
			switch x := idx[v]; ops[x] {
			case opString:
				lite[i].hop = strs[x]
			case opNothing:
			default:
				lite[i].odd = true
			}
		}
	case roleStatus:
		for i, v := range vx {
			if v < 0 {
				continue
			}
			lite[i].applyStatus(&c.entries[c.idx[v]])
		}
	case roleDur:
		for i, v := range vx {
			if v >= 0 {
				lite[i].dur, lite[i].hasDur = c.i64[v], true
			}
		}
	case roleStart:
		for i, v := range vx {
			if v >= 0 {
				lite[i].start, lite[i].hasStart = c.i64[v], true
			}
		}
	case roleTimeout:
		for i, v := range vx {
			if v >= 0 && c.bits[v>>3]>>(v&7)&1 != 0 {
				lite[i].timeout = true
			}
		}
	case roleCode:
		for i, v := range vx {
			if v >= 0 {
				n := c.i32[v]
				l := &lite[i]
				l.code, l.codeSet = int(n), true
				l.errTimeout = l.errTimeout || n == 408 || n == 504
			}
		}
	case roleAttempt:
		for i, v := range vx {
			if v >= 0 {
				if n := c.i32[v]; n >= 0 {
					lite[i].attempt, lite[i].attSet = int(n), true
				} else {
					lite[i].odd = true
				}
			}
		}
	case roleTimeoutMs:
		for i, v := range vx {
			if v >= 0 {
				if x := c.f64[v]; x >= 0 && x < 9e12 {
					lite[i].tif = int64(math.Round(x * 1e6))
				} else {
					lite[i].odd = true
				}
			}
		}
	case roleWeight:
		for i, v := range vx {
			if v >= 0 {
				if x := c.f64[v]; x >= 0 && x <= math.MaxFloat64 {
					lite[i].weight = x
				} else {
					lite[i].odd = true
				}
			}
		}
	case roleCodeText:
		// A blank dictionary entry sets nothing (set skips opNothing);
		// any other value goes to the records.
		for i, v := range vx {
			if v >= 0 && (c.dict == nil || c.ops[c.idx[v]] != opNothing) {
				lite[i].odd = true
			}
		}
	case roleTrace:
		for i, v := range vx {
			if v < 0 {
				continue
			}
			if id := trimSpace(c.value(int(v))); len(id) > 0 {
				lite[i].trace = unsafe.String(&id[0], len(id))
			}
		}
	}
}

// liteDense is liteColumn for a column whose page has no nulls: row i's
// value is value d+i of the page. Each case is liteColumn's.
func (w *pqWorker) liteDense(c *pqCursor, role pqRole, d int, lite []pqLite) {
	m := len(lite)
	switch role {
	case roleHop:
		ops, strs := c.ops, c.strs
		for i, x := range c.idx[d : d+m] {
			switch ops[x] {
			case opString:
				lite[i].hop = strs[x]
			case opNothing:
			default:
				lite[i].odd = true
			}
		}
	case roleStatus:
		for i, x := range c.idx[d : d+m] {
			lite[i].applyStatus(&c.entries[x])
		}
	case roleDur:
		for i, x := range c.i64[d : d+m] {
			lite[i].dur, lite[i].hasDur = x, true
		}
	case roleStart:
		for i, x := range c.i64[d : d+m] {
			lite[i].start, lite[i].hasStart = x, true
		}
	case roleTimeout:
		for i := range lite {
			v := d + i
			if c.bits[v>>3]>>(v&7)&1 != 0 {
				lite[i].timeout = true
			}
		}
	case roleCode:
		for i, n := range c.i32[d : d+m] {
			l := &lite[i]
			l.code, l.codeSet = int(n), true
			l.errTimeout = l.errTimeout || n == 408 || n == 504
		}
	case roleAttempt:
		for i, n := range c.i32[d : d+m] {
			if n >= 0 {
				lite[i].attempt, lite[i].attSet = int(n), true
			} else {
				lite[i].odd = true
			}
		}
	case roleTimeoutMs:
		for i, x := range c.f64[d : d+m] {
			if x >= 0 && x < 9e12 {
				lite[i].tif = int64(math.Round(x * 1e6))
			} else {
				lite[i].odd = true
			}
		}
	case roleWeight:
		for i, x := range c.f64[d : d+m] {
			if x >= 0 && x <= math.MaxFloat64 {
				lite[i].weight = x
			} else {
				lite[i].odd = true
			}
		}
	case roleCodeText:
		for i := range lite {
			if c.dict == nil || c.ops[c.idx[d+i]] != opNothing {
				lite[i].odd = true
			}
		}
	case roleTrace:
		for i := range lite {
			if id := trimSpace(c.value(d + i)); len(id) > 0 {
				lite[i].trace = unsafe.String(&id[0], len(id))
			}
		}
	}
}

// fill sets sp to the span finish and accept make of the row: its
// outcome, and the fields a Branch may look at (the ids other than the
// trace's, service, name, kind and peer stay empty; see Branch.Take). sp
// is the worker's own and only fill writes it, so the fields it never sets
// are still zero: it sets the others one by one rather than clearing the
// whole span per row.
func (l *pqLite) fill(sp *span.Span) {
	sp.TraceID, sp.Hop, sp.Duration, sp.Start = l.trace, l.hop, l.dur, l.start
	sp.Attempt, sp.AttemptSet, sp.TimeoutInForce, sp.Weight = l.attempt, l.attSet, l.tif, l.weight
	// A code column wins over the code a status word implies, whatever
	// their order (the status sets it only while no code is set, and the
	// code column sets it always).
	code := l.statusCode
	if l.codeSet {
		code = l.code
	}
	timeout := l.timeout || l.errTimeout
	st := span.Unset
	switch {
	case l.hasStatus:
		st = l.status
		if timeout {
			st = span.Error
		}
	case timeout, code >= 500 || code == 429:
		st = span.Error
	}
	if sp.Weight == 0 {
		sp.Weight = 1
	}
	if st == span.Unset && (code == 429 || (code >= 500 && code < 600)) {
		st = span.Error
	}
	sp.Code, sp.Timeout, sp.Status = code, timeout, st
}

// records builds the rows of need (in row order) as the batch reader
// does, from every column; the rows of again were taken by the Branch
// already and go on to the chunk. The attribute columns are not read
// again: the first pass gave every row of the batch its attributes with
// the same applyAttr, in the same column order, in w.attrs — but for the
// columns it left off rows whose hop the Branch ignores them on, which
// reattr gives back to the rows of need.
func (w *pqWorker) records(ch *pqChunk, base int64, need []int32, again []bool) {
	for _, row := range need {
		w.recs[row].reset()
		w.bad[row] = nil
	}
	w.reattr(need)
	for j := range w.curs {
		c := &w.curs[j]
		if w.roles[j] == roleAttr {
			continue
		}
		sel, vals := w.sel[:0], w.vals[:0]
		if d := w.dense[j]; d >= 0 {
			for _, row := range need {
				sel, vals = append(sel, row), append(vals, d+row)
			}
		} else {
			vx := w.vidx[j]
			for _, row := range need {
				if v := vx[row]; v >= 0 {
					sel, vals = append(sel, row), append(vals, v)
				}
			}
		}
		w.apply(c, sel, vals, ch)
	}
	for _, row := range need {
		w.row(ch, &w.recs[row], base+int64(row)+1, row, again[row])
	}
}

// selOf and valsOf are the rows of a batch column holding a value and
// their positions in its page, from where each row's value is (vidx).
func (w *pqWorker) selOf(vx []int32) []int32 {
	sel := w.sel[:0]
	for i, v := range vx {
		if v >= 0 {
			sel = append(sel, int32(i))
		}
	}
	return sel
}

func (w *pqWorker) valsOf(vx []int32) []int32 {
	vals := w.vals[:0]
	for _, v := range vx {
		if v >= 0 {
			vals = append(vals, v)
		}
	}
	return vals
}

// pqSlowBatches is how many batches a worker reads as records after one
// whose rows a filter mostly left out, before it tries fast rows again.
const pqSlowBatches = 8

// leftOut reports whether Accept's filters would leave the row out: its
// start (0 when it has none, as the record's) outside the window or in an
// excluded one, or its hop not kept by --hops and --exclude-hops (decided
// once per hop name).
func (w *pqWorker) leftOut(l *pqLite) bool {
	o := w.opt
	start := int64(0)
	if l.hasStart {
		start = l.start
	}
	if ((o.HasSince || o.Since != 0) && start < o.Since) || ((o.HasUntil || o.Until != 0) && start >= o.Until) { // not o.SinceOn(): it copies *o
		return true
	}
	for _, x := range o.Exclude {
		if x.Holds(start) {
			return true
		}
	}
	if o.Hops == nil && o.ExcludeHops == nil {
		return false
	}
	kept, ok := w.hopKept[l.hop]
	if !ok {
		kept = (o.Hops == nil || o.Hops.MatchString(l.hop)) && (o.ExcludeHops == nil || !o.ExcludeHops.MatchString(l.hop))
		if len(w.hopKept) < 1<<12 {
			w.hopKept[l.hop] = kept
		}
	}
	return !kept
}
