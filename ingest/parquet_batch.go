package ingest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// The batch reader of flat Parquet tables.
//
// Parquet is the format users reach for when logs are big, and DuckDB
// reads it as typed column vectors; reading it value by value through
// parquet.Value (the row path in parquet.go) costs ten times more than
// the analysis itself. So, for the physical types a flat table uses, this
// reader takes each page's typed data as it lies in memory (int64, int32,
// double, float slices, bit-packed booleans, byte arrays as one buffer and
// offsets, dictionary indexes) and walks the columns of a row group in
// lockstep, one page per column at a time, building spans with the same
// typed setters as the row path — so both give the same spans, the same
// skips and the same errors (parquet_batch_test.go checks it).
//
// A dictionary is prepared once per column chunk: each entry's string is
// interned (hop, service, name, kind, peer) or its status parsed once,
// instead of once per row.
//
// Row groups are decoded in parallel, one goroutine per core, each
// building chunks of spans that reach Emit in row-group order on the
// calling goroutine, so output and error positions are deterministic.
// Memory is bounded by the pages being read (one per column per worker)
// and a few chunks of chunkRows spans per worker, whatever the row group
// size. Ids are copied into the chunk's own buffer, so with
// Options.Borrowed the id strings alias it and nothing is allocated per
// span.

// pqChunkRows is the number of rows a worker hands over at once: large
// enough that the hand-off costs nothing per span, small enough (about
// 400 KB of spans) to stay in cache.
const pqChunkRows = 2048

// pqChunksPerWorker bounds the chunks a worker has in flight: enough
// that a worker rarely waits for the emitting goroutine.
const pqChunksPerWorker = 3

// pqChunk is a run of consecutive rows of one row group, decoded.
type pqChunk struct {
	spans  []span.Span
	rows   []int64 // 1-based row index in the file of each span
	events []pqEvent
	ids    []byte      // the id text the spans' ids alias (Options.Borrowed)
	attrs  []span.Attr // the spans' attributes (Options.Borrowed: their Attrs alias it)
	err    error       // a read error after the rows of this chunk: the last chunk
	used   int64       // spans a Branch took (Options.Fork)
	owner  chan *pqChunk
}

// pqEvent is a row that does not become a span, placed before span
// `before` of its chunk.
type pqEvent struct {
	before         int
	row            int64
	reason, detail string
	id             uint64           // a filtered span's key (filteredKey)
	soft           []record.SoftErr // values a kept span lost (see lineEvent)
	taken          bool
}

// batchable reports whether every column has a physical type the batch
// reader decodes (INT96 timestamps, for one, take the row path).
func batchable(pf *parquet.File, cols []flatCol) bool {
	for _, c := range cols {
		leaf, ok := pf.Schema().Lookup(c.name)
		if !ok || leaf.MaxRepetitionLevel > 0 || leaf.MaxDefinitionLevel > 1 {
			return false
		}
		switch leaf.Node.Type().Kind() {
		case parquet.Boolean, parquet.Int32, parquet.Int64, parquet.Float, parquet.Double, parquet.ByteArray, parquet.FixedLenByteArray:
		default:
			return false
		}
	}
	return true
}

// decodeFlatBatch reads the row groups of pf in parallel and emits their
// spans in order.
func decodeFlatBatch(src *record.Source, pf *parquet.File, cols []flatCol) error {
	rgs := pf.RowGroups()
	first := make([]int64, len(rgs)) // 0-based index of each row group's first row
	var total int64
	for i, rg := range rgs {
		first[i] = total
		total += rg.NumRows()
	}
	workers := min(max(1, runtime.GOMAXPROCS(0)), max(1, len(rgs)))
	outs := make([]chan *pqChunk, len(rgs))
	for i := range outs {
		outs[i] = make(chan *pqChunk, pqChunksPerWorker)
	}
	stop := make(chan struct{})
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	var branches []record.Branch
	var pqWorkers []*pqWorker
	for range workers {
		w := newPQWorker(src, pf, cols)
		pqWorkers = append(pqWorkers, w)
		if src.Options().Fork != nil {
			w.src, w.branch = src, src.Options().Fork.Branch()
			branches = append(branches, w.branch)
			w.fastPlan(src)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				g := next
				next++
				mu.Unlock()
				if g >= len(rgs) {
					return
				}
				if !w.rowGroup(rgs[g], first[g], outs[g], stop) {
					return
				}
			}
		}()
	}
	var err error
	for g := range rgs {
		for ch := range outs[g] {
			if err == nil {
				err = deliverPQ(src, ch)
			}
			ch.spans, ch.rows, ch.events, ch.ids, ch.attrs, ch.err, ch.used = ch.spans[:0], ch.rows[:0], ch.events[:0], ch.ids[:0], ch.attrs[:0], nil, 0
			ch.owner <- ch
		}
		if err != nil {
			break
		}
	}
	// After an error, workers still decoding see stop wherever they wait
	// (a free chunk, room in their row group's channel) and return; wait
	// for them, as the file must not be closed under them.
	close(stop)
	wg.Wait()
	for _, br := range branches {
		br.Close()
	}
	u := &unitStats{}
	for _, w := range pqWorkers {
		u.merge(w.units)
	}
	unitNotes(src, u, true)
	return err
}

// deliverPQ hands a chunk's spans and skips on, in row order. With a
// Fork the chunk's spans were checked and taken by a Branch already: they
// are counted here, and those it asked to see again go to Ordered.
func deliverPQ(src *record.Source, ch *pqChunk) error {
	ev := ch.events
	fork := src.Options().Fork
	used := false
	event := func(e *pqEvent) {
		switch {
		case e.soft != nil:
			if e.taken || used {
				src.Stats().Ignore(src.Name, 0, e.row, e.soft, src.Options().MaxErrors)
			}
		case record.IsFilter(e.reason):
			src.Stats().Filter(e.reason, e.id)
		default:
			src.Skip(0, e.row, e.reason, e.detail)
		}
	}
	for i := range ch.spans {
		for len(ev) > 0 && ev[0].before <= i {
			event(&ev[0])
			ev = ev[1:]
		}
		if fork != nil {
			fork.Ordered(&ch.spans[i])
		} else {
			used = src.Emit(&ch.spans[i], 0, ch.rows[i])
		}
	}
	src.Stats().Read += ch.used
	src.Stats().Used += ch.used
	for i := range ev {
		event(&ev[i])
	}
	return ch.err
}

// pqWorker is one decoding goroutine's state.
type pqWorker struct {
	cols    []flatCol
	recs    []flatRecord // the batch, filled column by column
	bad     []error      // per record of the batch: its first bad value
	sel     []int32      // rows of a page stretch holding a value (fill)
	iota    []int32      // 0, 1, … pqBatchRows-1: the rows of a stretch without nulls
	borrow  bool
	free    chan *pqChunk
	scratch []byte
	curs    []pqCursor
	src     *record.Source // with a Fork: for accept
	branch  record.Branch  // with a Fork: this worker's consumer
	// ids holds the id text of the current batch with a Fork (and
	// Options.Borrowed): most spans stop at their Branch, so only those
	// it gives back have their ids copied to the chunk (keep).
	ids []byte
	// held are the pages the cursors moved past during the batch, with a
	// Fork: the batch's text ids alias them (fastID) until keep copies
	// the few that go on, so they are released only after the batch.
	held []parquet.Page
	// units gathers what the unit checks need from the worker's records.
	units *unitStats
	// vals holds the page positions of the values apply sets.
	vals []int32
	// attrs are the attributes of each record of the batch, when the
	// table has columns no span field takes (nil otherwise); owned is
	// where spans that keep theirs (no Options.Borrowed) get them from.
	attrs [][]span.Attr
	owned []span.Attr
	// The fast rows' state (parquet_fast.go), when the file has them:
	// each column's role, and per batch row what the first pass read,
	// where each column's value is, the rows left for records and
	// those the Branch took already; one is the span it takes.
	roles []pqRole
	lite  []pqLite
	vidx  [][]int32
	need  []int32
	again []bool
	one   span.Span
}

// idBuf is where the batch's id text goes: the chunk's buffer, or with a
// Fork the worker's batch buffer.
func (w *pqWorker) idBuf(ch *pqChunk) *[]byte {
	if w.branch != nil {
		return &w.ids
	}
	return &ch.ids
}

// keep copies the ids of a span a Branch gave back from the batch buffer
// to the chunk's, which lives until the chunk is emitted.
func (w *pqWorker) keep(ch *pqChunk, sp *span.Span) {
	for _, id := range [...]*string{&sp.TraceID, &sp.SpanID, &sp.ParentID} {
		if len(*id) == 0 {
			continue
		}
		at := len(ch.ids)
		ch.ids = append(ch.ids, *id...)
		*id = unsafe.String(&ch.ids[at], len(*id))
	}
}

func newPQWorker(src *record.Source, pf *parquet.File, cols []flatCol) *pqWorker {
	in := &record.Interner{}
	us := &unitStats{}
	w := &pqWorker{units: us, cols: cols, recs: make([]flatRecord, pqBatchRows), bad: make([]error, pqBatchRows), borrow: src.Options().Borrowed,
		free: make(chan *pqChunk, pqChunksPerWorker), curs: make([]pqCursor, len(cols)),
		sel: make([]int32, pqBatchRows), iota: make([]int32, pqBatchRows), vals: make([]int32, pqBatchRows)}
	for i := range w.iota {
		w.iota[i] = int32(i)
	}
	for i := range w.recs {
		w.recs[i].intern, w.recs[i].units = in, us
	}
	for range pqChunksPerWorker {
		w.free <- &pqChunk{owner: w.free}
	}
	for _, c := range cols {
		if c.attr {
			w.attrs = make([][]span.Attr, pqBatchRows)
			break
		}
	}
	for i, c := range cols {
		leaf, _ := pf.Schema().Lookup(c.name)
		k := leaf.Node.Type().Kind()
		w.curs[i] = pqCursor{col: &w.cols[i], maxDef: byte(leaf.MaxDefinitionLevel), kind: k,
			fast: fastOf(&w.cols[i], k, w.borrow), target: targetOf(&w.cols[i])}
		if t := w.curs[i].target; t != nil {
			var probe flatRecord
			w.curs[i].toff = uintptr(unsafe.Pointer(t(&probe))) - uintptr(unsafe.Pointer(&probe))
		}
		if w.curs[i].fast == fastID && src.Options().Fork != nil {
			w.curs[i].hold = &w.held
		}
	}
	return w
}

// rowGroup decodes one row group into chunks sent to out, which it
// closes. It returns false when the reader stopped (stop closed).
func (w *pqWorker) rowGroup(rg parquet.RowGroup, first int64, out chan *pqChunk, stop chan struct{}) (ok bool) {
	defer close(out)
	chunks := rg.ColumnChunks()
	for i := range w.curs {
		w.curs[i].open(chunks[w.cols[i].idx])
	}
	defer func() {
		for i := range w.curs {
			w.curs[i].close()
		}
	}()
	var ch *pqChunk
	send := func() bool {
		select {
		case out <- ch:
			ch = nil
			return true
		case <-stop:
			return false
		}
	}
	// A panic of the Parquet library on a corrupt page becomes the error
	// of the chunk, like any read error: it must not take the run down.
	defer func() {
		if r := recover(); r != nil {
			if ch == nil {
				select {
				case ch = <-w.free:
				case <-stop:
					ok = false
					return
				}
			}
			ch.err = fmt.Errorf("corrupt Parquet file: %v", r)
			ok = send()
		}
	}()
	n := rg.NumRows()
	for r := int64(0); r < n; {
		select {
		case ch = <-w.free:
		case <-stop:
			return false
		}
		end := min(n, r+pqChunkRows)
		if ch.spans == nil { // full size at once: growing by doubling is garbage
			ch.spans, ch.rows = make([]span.Span, 0, pqChunkRows), make([]int64, 0, pqChunkRows)
		}
		if w.borrow {
			ch.ids = grow(ch.ids, pqChunkRows*64)
		}
		if w.branch != nil {
			// With a Fork a chunk holds only the spans a Branch gave
			// back (the trace sample) and the skips, so it is cut when
			// those could fill it, not after a fixed number of rows:
			// a worker ahead of the emitting goroutine would otherwise
			// wait for it after a few thousand rows, and the workers
			// would take turns instead of decoding side by side.
			end = n
		}
		for r < end && len(ch.spans)+pqBatchRows <= pqChunkRows && len(ch.events)+pqBatchRows <= pqChunkRows {
			k, ok := w.batch(ch, first+r, int(min(end-r, pqBatchRows)))
			if !ok {
				return send()
			}
			r += int64(k)
		}
		if !send() {
			return false
		}
	}
	return true
}

// pqBatchRows is how many records are filled column by column at a time:
// few enough (about 80 KB of records) that they stay in the core's cache
// next to the pages while every column passes over them. 1024 rows (330
// KB) measured 5% slower on the 10M-span benchmark, 128 no faster.
const pqBatchRows = 256

// batch decodes the m rows after row `base` (0-based) into ch, column by
// column: each record sees its columns in the same order as on the row
// path, so the spans, skips and details are the same. It returns the rows
// it read (m, or fewer when fast rows cut the batch at a page's end) and
// false after a read error (ch.err, naming the first row and column that
// failed in row order; the rows before it are in ch).
func (w *pqWorker) batch(ch *pqChunk, base int64, m int) (int, bool) {
	if w.borrow && w.branch != nil {
		w.ids = grow(w.ids, m*64)
	}
	if w.roles != nil {
		n, ok, handled := w.fastBatch(ch, base, m)
		if handled {
			return n, ok
		}
		m = n
	}
	recs := w.recs[:m]
	for i := range recs {
		recs[i].reset()
	}
	for i := range w.attrs[:min(m, len(w.attrs))] {
		w.attrs[i] = w.attrs[i][:0]
	}
	clear(w.bad[:m])
	limit, errCol := m, -1
	var rerr error
	for j := range w.curs {
		c := &w.curs[j]
		k, err := w.fill(c, limit, ch)
		if err != nil && k < limit {
			limit, errCol, rerr = k, j, err
		}
	}
	for i := range recs[:limit] {
		w.row(ch, &recs[i], base+int64(i)+1, int32(i), false)
	}
	w.release()
	if errCol >= 0 {
		ch.err = pqRowError(base+int64(limit)+1, w.curs[errCol].col.name, rerr)
		return m, false
	}
	return m, true
}

// pqRowError is a read error, positioned.
func pqRowError(row int64, col string, err error) error {
	return fmt.Errorf("row %d, column %s: %v", row, col, err)
}

// row turns the filled record of batch row i (row `row` of the file) into
// a span or an event of ch. again says the Branch took the row already
// (fastBatch) and asked to see it again: it goes on to the chunk.
func (w *pqWorker) row(ch *pqChunk, rec *flatRecord, row int64, i int32, again bool) {
	if bad := w.bad[i]; bad != nil {
		ch.events = append(ch.events, pqEvent{before: len(ch.spans), row: row, reason: "bad value", detail: bad.Error()})
		return
	}
	reason, detail := rec.finish()
	if w.attrs != nil && len(w.attrs[i]) > 0 {
		rec.sp.Attrs = w.attrs[i] // valid for the batch: the chunk copies what it keeps
	}
	if reason == "" && w.branch != nil {
		reason, detail = w.src.Accept(&rec.sp)
	}
	if reason != "" {
		e := pqEvent{before: len(ch.spans), row: row, reason: reason, detail: detail}
		if record.IsFilter(reason) {
			e.id, e.detail = record.FilteredKey(&rec.sp), ""
		}
		ch.events = append(ch.events, e)
		return
	}
	if w.branch != nil {
		if !again {
			ch.used++
			if len(rec.soft) > 0 {
				ch.events = append(ch.events, pqEvent{before: len(ch.spans), row: row, soft: slices.Clone(rec.soft), taken: true})
			}
			if !w.branch.Take(&rec.sp) {
				return
			}
		}
		if w.borrow {
			w.keep(ch, &rec.sp)
		}
	}
	if len(rec.sp.Attrs) > 0 {
		rec.sp.Attrs = w.keepAttrs(ch, rec.sp.Attrs)
	}
	ch.spans = append(ch.spans, rec.sp)
	ch.rows = append(ch.rows, row)
	if w.branch == nil && len(rec.soft) > 0 {
		ch.events = append(ch.events, pqEvent{before: len(ch.spans), row: row, soft: slices.Clone(rec.soft)})
	}
}

// release gives back the pages the batch's ids aliased (see held).
func (w *pqWorker) release() {
	for i, p := range w.held {
		parquet.Release(p)
		w.held[i] = nil
	}
	w.held = w.held[:0]
}

// fill applies column c to the first m records of the batch and returns
// how many rows it read (fewer than m after a read error).
func (w *pqWorker) fill(c *pqCursor, m int, ch *pqChunk) (int, error) {
	in := w.recs[0].intern
	for i := 0; i < m; {
		if c.di >= c.dn {
			if err := c.load(in); err != nil {
				return i, err
			}
			continue
		}
		n := min(c.dn-c.di, m-i)
		// The rows of this stretch that hold a value; values are
		// consecutive in the page from c.vi.
		var sel []int32
		if defs := c.defs; defs != nil {
			// Written at every row, kept where a value is: no branch
			// to mispredict on columns with nulls here and there.
			buf, j := w.sel[:n], 0
			for t, d := range defs[c.di : c.di+n] {
				buf[j] = int32(i + t)
				if d == c.maxDef {
					j++
				}
			}
			sel = buf[:j]
		} else {
			sel = w.iota[i : i+n]
		}
		vals := w.vals[:len(sel)]
		for k := range vals {
			vals[k] = int32(c.vi + k)
		}
		c.vi += len(sel)
		c.di += n
		i += n
		w.apply(c, sel, vals, ch)
	}
	return m, nil
}

// Columns of the flat schema as tailscope writes them, which apply takes
// with a loop of their own instead of a setter call per value. Each does
// what the setter does with that type and field.
const (
	fastNone = iota
	fastDuration
	fastStart
	fastCode
	fastAttempt
	fastTimeoutMs
	fastWeight
	fastTimeout
	fastID // a text id, with Options.Borrowed
)

// fastOf picks a column's loop.
func fastOf(c *flatCol, kind parquet.Kind, borrow bool) int {
	f := c.spec.f
	if c.spec.hopAttr || c.spec.pod {
		return fastNone
	}
	switch {
	case kind == parquet.Int64 && (f == fDuration || f == fDurationNs):
		return fastDuration
	case kind == parquet.Int64 && f == fStart && c.scale == 1:
		return fastStart
	case kind == parquet.Int32 && f == fCode:
		return fastCode
	case kind == parquet.Int32 && f == fAttempt:
		return fastAttempt
	case kind == parquet.Double && f == fTimeoutMs:
		return fastTimeoutMs
	case kind == parquet.Double && f == fWeight:
		return fastWeight
	case kind == parquet.Boolean && f == fTimeout:
		return fastTimeout
	case kind == parquet.ByteArray && c.text && borrow && c.isID():
		return fastID
	}
	return fastNone
}

// apply sets the values vals of c's page in the records at rows sel of
// the batch (value vals[k] in row sel[k]).
func (w *pqWorker) apply(c *pqCursor, sel, vals []int32, ch *pqChunk) {
	if c.col.attr {
		w.applyAttr(c, sel, vals)
		return
	}
	recs, bad := w.recs, w.bad
	fast := c.fast
	if c.dict != nil {
		fast = fastNone
		if c.target != nil {
			// Dictionary strings: the prepared value, or a setter for
			// the rare entry that needs one. The value is stored in a
			// record already bad too: it cannot fail, and the record
			// is dropped anyway.
			idx, ops, strs, off := c.idx, c.ops, c.strs, c.toff
			for k, row := range sel {
				switch x := idx[vals[k]]; ops[x] {
				case opString:
					*(*string)(unsafe.Add(unsafe.Pointer(&recs[row]), off)) = strs[x]
				case opNothing:
				default:
					if bad[row] == nil {
						w.setOne(c, row, int(vals[k]), ch)
					}
				}
			}
			return
		}
		// Other dictionary columns: the status, prepared once per
		// entry, is set here; the rest through the setter.
		for k, row := range sel {
			e := &c.entries[c.idx[vals[k]]]
			switch {
			case bad[row] != nil || e.op == opNothing:
			case e.op == opStatus:
				r := &recs[row]
				r.status, r.hasStatus = e.st, true
				r.timeout = r.timeout || e.to
				if e.code != 0 && !r.codeSet {
					r.sp.Code = e.code
				}
			default:
				w.setOne(c, row, int(vals[k]), ch)
			}
		}
		return
	}
	switch fast {
	case fastDuration:
		f := c.col.spec.f
		for k, row := range sel {
			r := &recs[row]
			r.sp.Duration, r.hasDur, r.durField = c.i64[vals[k]], true, f
		}
	case fastStart:
		for k, row := range sel {
			r := &recs[row]
			r.sp.Start, r.hasStart = c.i64[vals[k]], true
		}
	case fastCode:
		for k, row := range sel {
			r, n := &recs[row], c.i32[vals[k]]
			r.sp.Code, r.codeSet, r.codeText, r.codeNamed = int(n), true, "", false
			r.errTimeout = r.errTimeout || n == 408 || n == 504
		}
	case fastAttempt:
		for k, row := range sel {
			if n := c.i32[vals[k]]; n >= 0 {
				r := &recs[row]
				r.sp.Attempt, r.sp.AttemptSet = int(n), true
			} else if bad[row] == nil {
				w.setOne(c, row, int(vals[k]), ch)
			}
		}
	case fastTimeoutMs:
		for k, row := range sel {
			if x := c.f64[vals[k]]; x >= 0 && x < 9e12 {
				recs[row].sp.TimeoutInForce = int64(math.Round(x * 1e6))
			} else if bad[row] == nil {
				w.setOne(c, row, int(vals[k]), ch)
			}
		}
	case fastWeight:
		for k, row := range sel {
			if x := c.f64[vals[k]]; x >= 0 && x <= math.MaxFloat64 {
				recs[row].sp.Weight = x
			} else if bad[row] == nil {
				w.setOne(c, row, int(vals[k]), ch)
			}
		}
	case fastTimeout:
		for k, row := range sel {
			i := vals[k]
			if c.bits[i>>3]>>(i&7)&1 != 0 {
				recs[row].timeout = true
			}
		}
	case fastID:
		// What setText and idString do with a text id: trimmed, blank or
		// (for a parent) "no parent" sets nothing, else the text is
		// copied to the chunk and the id aliases the copy. With a Fork
		// the id aliases the page itself (held until the batch ends):
		// most spans stop at their Branch, and keep copies the rest.
		parent := c.col.spec.f == fParentID
		ids := &ch.ids
		for k, row := range sel {
			v := trimSpace(c.value(int(vals[k])))
			if len(v) == 0 || (parent && isNoParent(v)) {
				continue
			}
			var id string
			if c.hold != nil {
				id = unsafe.String(&v[0], len(v))
			} else {
				at := len(*ids)
				*ids = append(*ids, v...)
				id = unsafe.String(&(*ids)[at], len(v))
			}
			r := &recs[row]
			switch c.col.spec.f {
			case fTraceID:
				r.sp.TraceID = id
			case fSpanID:
				r.sp.SpanID = id
			default:
				r.sp.ParentID = id
			}
		}
	default:
		for k, row := range sel {
			if bad[row] == nil {
				w.setOne(c, row, int(vals[k]), ch)
			}
		}
	}
}

// keepAttrs copies a span's attributes out of the batch: into the chunk
// when spans are borrowed (they live until it is emitted), else into a
// slice of the span's own.
func (w *pqWorker) keepAttrs(ch *pqChunk, l []span.Attr) []span.Attr {
	n := len(l)
	if w.borrow {
		at := len(ch.attrs)
		ch.attrs = append(ch.attrs, l...)
		return ch.attrs[at : at+n : at+n]
	}
	if cap(w.owned)-len(w.owned) < n {
		w.owned = make([]span.Attr, 0, max(512, n))
	}
	at := len(w.owned)
	w.owned = append(w.owned, l...)
	return w.owned[at : at+n : at+n]
}

// applyAttr adds the values vals of an attribute column to the records
// at rows sel of the batch, spelled as the row path's attrValue spells
// them and bounded as every flat reader bounds them (maxAttrValue).
func (w *pqWorker) applyAttr(c *pqCursor, sel, vals []int32) {
	in := w.recs[0].intern
	key := c.col.name
	for k, row := range sel {
		var b []byte
		vi := int(vals[k])
		switch {
		case c.dict != nil:
			e := &c.entries[c.idx[vi]]
			switch e.op {
			case opValue:
				b = attrValue(c.col, e.v, &w.scratch)
			default:
				b = c.col.idText(e.raw, w.scratch[:0])
				w.scratch = b
			}
		case c.kind == parquet.ByteArray || c.kind == parquet.FixedLenByteArray:
			b = c.col.idText(c.value(vi), w.scratch[:0])
			w.scratch = b
		default:
			b = attrValue(c.col, c.typed(vi), &w.scratch)
		}
		if len(b) > 0 && len(b) <= record.MaxAttrValue {
			w.attrs[row] = append(w.attrs[row], span.Attr{Key: key, Value: attrString(in, b)})
		}
	}
}

// typed is value i of a plain page of a numeric or boolean column.
func (c *pqCursor) typed(i int) parquet.Value {
	switch c.kind {
	case parquet.Int64:
		return parquet.Int64Value(c.i64[i])
	case parquet.Int32:
		return parquet.Int32Value(c.i32[i])
	case parquet.Double:
		return parquet.DoubleValue(c.f64[i])
	case parquet.Float:
		return parquet.FloatValue(c.f32[i])
	case parquet.Boolean:
		return parquet.BooleanValue(c.bits[i>>3]>>(i&7)&1 != 0)
	}
	return parquet.Value{}
}

// setOne sets one value with the row path's setter, keeping the first bad
// value of the record.
func (w *pqWorker) setOne(c *pqCursor, row int32, vi int, ch *pqChunk) {
	if err := w.set(c, &w.recs[row], vi, ch); err != nil {
		w.bad[row] = fmt.Errorf("column %s: %v", c.col.name, err)
	}
}

// trimSpace is bytes.TrimSpace for ids, which almost never have space
// around them: two byte tests instead of a call per value.
func trimSpace(v []byte) []byte {
	if len(v) > 0 && v[0] > ' ' && v[0] < 0x80 && v[len(v)-1] > ' ' && v[len(v)-1] < 0x80 {
		return v
	}
	return bytes.TrimSpace(v)
}

// grow returns b emptied with at least n bytes of capacity.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, 0, n)
	}
	return b[:0]
}

// set stores the cursor's current value in the worker's record.
func (w *pqWorker) set(c *pqCursor, r *flatRecord, vi int, ch *pqChunk) error {
	col := c.col
	switch {
	case c.dict != nil:
	case c.kind == parquet.Int64:
		return r.setParquetInt(col, c.i64[vi], &w.scratch)
	case c.kind == parquet.Int32:
		return r.setParquetInt(col, int64(c.i32[vi]), &w.scratch)
	case c.kind == parquet.Double:
		return r.setParquetFloat(col, c.f64[vi], &w.scratch)
	case c.kind == parquet.Float:
		return r.setParquetFloat(col, float64(c.f32[vi]), &w.scratch)
	case c.kind == parquet.Boolean:
		i := vi
		return r.setParquetBool(col, c.bits[i>>3]>>(i&7)&1 != 0, &w.scratch)
	}
	var b []byte
	if c.dict != nil {
		// Typed kinds with a dictionary land here too (c.idx is set).
		e := &c.entries[c.idx[vi]]
		switch e.op {
		case opNothing:
			return nil
		case opString:
			*c.target(r) = e.s // only string columns have opString entries
			return nil
		case opStatus:
			r.status, r.hasStatus = e.st, true
			r.timeout = r.timeout || e.to
			if e.code != 0 && !r.codeSet {
				r.sp.Code = e.code
			}
			return nil
		}
		if e.op == opValue {
			return r.setParquet(col, e.v, &w.scratch)
		}
		b = e.raw
	} else {
		b = c.value(vi)
	}
	if !col.isID() {
		return r.setText(col.spec, b)
	}
	if !w.borrow {
		w.scratch = col.idText(b, w.scratch[:0])
		return r.setText(col.spec, w.scratch)
	}
	// The id's text goes to the chunk's buffer, which the span's id then
	// aliases (idString): it lives until the chunk is emitted.
	ids := w.idBuf(ch)
	at := len(*ids)
	*ids = col.idText(b, *ids)
	r.block = *ids
	return r.setText(col.spec, (*ids)[at:])
}

// Operations prepared for a dictionary entry.
const (
	opGeneric = iota // setText on the value, per row
	opNothing        // blank: sets nothing
	opString         // assign the prepared string to the column's field
	opStatus         // the prepared status
	opValue          // a typed (not byte array) value: the row path's setter
)

type pqEntry struct {
	v    parquet.Value // opValue
	raw  []byte
	op   uint8
	s    string
	st   span.Status
	to   bool
	code int
}

// pqCursor walks one column chunk value by value, a page at a time.
type pqCursor struct {
	col    *flatCol
	kind   parquet.Kind
	maxDef byte
	pages  parquet.Pages
	page   parquet.Page

	defs   []byte // definition levels of the page (optional columns)
	di, dn int    // next row of the page, rows in the page
	vi, vn int    // next value (non-null) of the page, values in the page

	i64  []int64
	i32  []int32
	f64  []float64
	f32  []float32
	bits []byte
	data []byte   // byte arrays: the values back to back
	offs []uint32 // byte arrays: offsets of each value in data (vn+1)
	size int      // fixed-length byte arrays: the length of each
	idx  []int32  // dictionary indexes

	fast     int                       // the column's own loop (fastOf)
	hold     *[]parquet.Page           // where pages go instead of Release (pqWorker.held)
	target   func(*flatRecord) *string // where dictionary strings go (targetOf)
	toff     uintptr                   // the offset of that field in a flatRecord
	ops      []uint8                   // entries[i].op, packed for the per-row loop
	strs     []string                  // entries[i].s, packed likewise
	dict     parquet.Dictionary        // the current page's, nil for a plain page
	prepared parquet.Dictionary        // the one entries were prepared for
	entries  []pqEntry
	stalls   int
}

func (c *pqCursor) open(cc parquet.ColumnChunk) {
	c.close()
	c.pages = cc.Pages()
	c.dict, c.prepared, c.entries = nil, nil, c.entries[:0]
}

func (c *pqCursor) close() {
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	if c.pages != nil {
		c.pages.Close()
		c.pages = nil
	}
	c.di, c.dn, c.vi, c.vn = 0, 0, 0, 0
}

// errColumnShort is a column chunk with fewer values than its row group
// has rows.
var errColumnShort = errors.New("the column ends before the row group (corrupt file)")

// load reads the next page and takes its typed data.
func (c *pqCursor) load(in *record.Interner) error {
	if c.page != nil {
		if c.hold != nil {
			*c.hold = append(*c.hold, c.page)
		} else {
			parquet.Release(c.page)
		}
		c.page = nil
	}
	p, err := c.pages.ReadPage()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return errColumnShort
		}
		return err
	}
	c.page = p
	c.dn = int(p.NumRows())
	if int64(c.dn) != p.NumValues() {
		return errors.New("repeated values in a flat column (corrupt page)")
	}
	if c.dn == 0 {
		// A page without rows makes no progress: allow a few, as a
		// corrupt file could otherwise loop here forever.
		if c.stalls++; c.stalls > 16 {
			return errors.New("pages without rows (corrupt column)")
		}
	} else {
		c.stalls = 0
	}
	c.di, c.vi = 0, 0
	c.defs = nil
	nvals := c.dn
	if c.maxDef > 0 {
		c.defs = p.DefinitionLevels()
		if len(c.defs) != c.dn {
			return errors.New("definition levels do not match the rows (corrupt page)")
		}
		nvals = countDefined(c.defs, c.maxDef)
		if nvals == c.dn {
			c.defs = nil // no nulls in this page: fill takes its rows as they come
		}
	}
	data := p.Data()
	if d := p.Dictionary(); d != nil {
		c.idx = data.Int32()
		c.vn = len(c.idx)
		if d != c.prepared {
			c.prepare(d, in)
		}
		c.dict = d
		for _, x := range c.idx[:min(nvals, c.vn)] {
			if x < 0 || int(x) >= len(c.entries) {
				return fmt.Errorf("dictionary index %d out of range [0, %d) (corrupt page)", x, len(c.entries))
			}
		}
	} else {
		c.dict = nil
		switch c.kind {
		case parquet.Int64:
			c.i64 = data.Int64()
			c.vn = len(c.i64)
		case parquet.Int32:
			c.i32 = data.Int32()
			c.vn = len(c.i32)
		case parquet.Double:
			c.f64 = data.Double()
			c.vn = len(c.f64)
		case parquet.Float:
			c.f32 = data.Float()
			c.vn = len(c.f32)
		case parquet.Boolean:
			c.bits = data.Boolean()
			c.vn = min(nvals, 8*len(c.bits))
		case parquet.ByteArray:
			c.data, c.offs = data.ByteArray()
			c.vn = max(0, len(c.offs)-1)
			if c.vn > 0 && (int(c.offs[c.vn]) > len(c.data) || !sortedOffsets(c.offs)) {
				return errors.New("byte array offsets out of range (corrupt page)")
			}
		case parquet.FixedLenByteArray:
			c.data, c.size = data.FixedLenByteArray()
			c.vn = 0
			if c.size > 0 {
				c.vn = len(c.data) / c.size
			}
		default:
			return fmt.Errorf("unsupported Parquet type %s", c.kind)
		}
	}
	if c.vn < nvals {
		return errors.New("page holds fewer values than its definition levels say (corrupt page)")
	}
	return nil
}

// countDefined counts the levels equal to maxDef. A flat optional column
// has levels 0 and 1, so eight at a time are one population count: a
// byte loop mispredicts on columns with nulls spread about (parent_id).
func countDefined(defs []byte, maxDef byte) int {
	n, i := 0, 0
	if maxDef == 1 {
		for ; i+8 <= len(defs); i += 8 {
			x := binary.LittleEndian.Uint64(defs[i:])
			if x&^0x0101010101010101 != 0 {
				break // a level above 1 (corrupt page): count bytewise
			}
			n += bits.OnesCount64(x)
		}
	}
	for _, d := range defs[i:] {
		if d == maxDef {
			n++
		}
	}
	return n
}

func sortedOffsets(o []uint32) bool {
	for i := 1; i < len(o); i++ {
		if o[i] < o[i-1] {
			return false
		}
	}
	return true
}

// value returns byte array value i of a plain page.
func (c *pqCursor) value(i int) []byte {
	if c.kind == parquet.FixedLenByteArray {
		return c.data[i*c.size : (i+1)*c.size]
	}
	return c.data[c.offs[i]:c.offs[i+1]]
}

// targetOf is the span field a column's prepared dictionary strings go
// to, nil for columns that are not plain strings.
func targetOf(c *flatCol) func(r *flatRecord) *string {
	switch {
	case c.spec.hopAttr:
		return func(r *flatRecord) *string { return &r.sp.Hop }
	case c.spec.pod:
		return nil
	case c.spec.f == fService:
		return func(r *flatRecord) *string { return &r.sp.Service }
	case c.spec.f == fName:
		return func(r *flatRecord) *string { return &r.sp.Name }
	case c.spec.f == fKind:
		return func(r *flatRecord) *string { return &r.sp.Kind }
	case c.spec.f == fHop:
		return func(r *flatRecord) *string { return &r.sp.Hop }
	case c.spec.f == fPeer:
		return func(r *flatRecord) *string { return &r.sp.Peer }
	}
	return nil
}

// prepare computes, once per dictionary, what each entry does to a
// record, with exactly the effect the row path has on its value.
func (c *pqCursor) prepare(d parquet.Dictionary, in *record.Interner) {
	c.prepared = d
	c.entries = c.entries[:0]
	spec := c.col.spec
	isString := spec.hopAttr || (!spec.pod && (spec.f == fService || spec.f == fName || spec.f == fKind || spec.f == fHop || spec.f == fPeer))
	for i := range d.Len() {
		v := d.Index(int32(i))
		e := pqEntry{op: opValue, v: v}
		if k := v.Kind(); k == parquet.ByteArray || k == parquet.FixedLenByteArray {
			e.op, e.raw = opGeneric, bytes.Clone(v.ByteArray())
			t := bytes.TrimSpace(e.raw)
			switch {
			case len(t) == 0:
				e.op = opNothing
			case isString && spec.f == fKind && !spec.hopAttr:
				e.op, e.s = opString, record.NormKind(t)
			case isString:
				e.op, e.s = opString, in.Get(t)
			case spec.f == fStatus && !spec.hopAttr:
				// A status the setter reads fully (no text to keep, no
				// value to ignore) is prepared; any other takes the setter.
				var text []byte
				var ok bool
				e.st, e.to, e.code, text, ok = record.ParseStatus(t)
				if ok && text == nil {
					e.op = opStatus
				}
			}
		} else {
			e.v = v.Clone()
		}
		c.entries = append(c.entries, e)
	}
	c.ops, c.strs = c.ops[:0], c.strs[:0]
	for i := range c.entries {
		c.ops, c.strs = append(c.ops, c.entries[i].op), append(c.strs, c.entries[i].s)
	}
}
