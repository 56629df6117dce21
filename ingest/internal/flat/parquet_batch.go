package flat

import (
	"fmt"
	"runtime"
	"slices"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/pool"
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
// that a worker rarely waits for the emitting goroutine. Chunks are
// delivered in input order, so the worker on a row group waits once it
// has filled them until the row group before it is delivered. With a
// Fork a chunk holds the spans given back to Ordered, a row in 8 at the
// trace sample's level on a file of a million spans: three chunks were
// some 60,000 rows of a 262,144-row group, and the read kept 1.3 of 2
// cores busy. Six: at 1M spans wall 0.315 → 0.295 s plain and 0.441 →
// 0.407 s with 7 attribute columns (medians of 12 pairs), peak RSS
// 0.6–1.7 MB more at the median and 4 MB at the worst of 20 runs, as
// orderedAttrs left the chunks lighter and chunks are made only when
// needed (chunk). Eight read a little faster still but reached 6 MB more
// in the worst runs, and sixteen 10–20 MB more: where a run's peak is
// within a few MB of DuckDB's (the wide file at 1M spans), memory is the
// bound. Past a few million spans a chunk covers a row group, and a
// worker seldom has more than two.
const pqChunksPerWorker = 6

// pqChunk is a run of consecutive rows of one row group, decoded.
type pqChunk struct {
	record.Batch             // its spans with their 1-based rows in the file, and its skips
	ids          []byte      // the id text the spans' ids alias (Options.Borrowed)
	attrs        []span.Attr // the spans' attributes (Options.Borrowed: their Attrs alias it)
	err          error       // a read error after the rows of this chunk: the last chunk
	owner        chan *pqChunk
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
	var branches []record.Branch
	var pqWorkers []*pqWorker
	for range workers {
		w := newPQWorker(src, pf, cols)
		pqWorkers = append(pqWorkers, w)
		if src.Fork() != nil {
			w.src, w.branch = src, src.Fork().Branch()
			branches = append(branches, w.branch)
			w.fastPlan(src)
		}
	}
	err := pool.Ordered(workers, workers+1, pqChunksPerWorker, pool.Tasks(len(rgs)),
		func(wi, g int, out chan<- *pqChunk, stop <-chan struct{}) bool {
			return pqWorkers[wi].rowGroup(rgs[g], first[g], out, stop)
		},
		func(ch *pqChunk) error {
			src.Deliver(&ch.Batch)
			err := ch.err
			ch.Reset()
			ch.ids, ch.attrs, ch.err = ch.ids[:0], ch.attrs[:0], nil
			ch.owner <- ch
			return err
		})
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

// pqWorker is one decoding goroutine's state.
type pqWorker struct {
	cols    []flatCol
	recs    []flatRecord // the batch, filled column by column
	bad     []error      // per record of the batch: its first bad value
	sel     []int32      // rows of a page stretch holding a value (fill)
	iota    []int32      // 0, 1, … pqBatchRows-1: the rows of a stretch without nulls
	borrow  bool
	free    chan *pqChunk // the worker's chunks back from delivery (see chunk)
	made    int           // chunks made, at most pqChunksPerWorker
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
	nattr int // the attribute columns
	// With a Fork that says which attribute keys its Ordered reads
	// (ordOnly, record.OrderedKeys), ordKeys are those of the attribute
	// columns, the only ones a chunk's spans keep (orderedAttrs; ordBuf
	// holds them until keepAttrs copies them). nkept is how many
	// attributes a chunk's span may keep.
	ordOnly bool
	ordKeys []string
	ordBuf  []span.Attr
	nkept   int
	// text holds the batch's attribute values read from plain pages
	// with Options.Borrowed (applyAttr), reset at every batch.
	text textArena
	// The fast rows' state (parquet_fast.go), when the file has them:
	// each column's role, and per batch row what the first pass read,
	// where each column's value is, the rows left for records and
	// those the Branch took already; one is the span it takes.
	roles []pqRole
	lite  []pqLite
	dense []int32
	vidx  [][]int32
	need  []int32
	again []bool
	one   span.Span
	// loose is set when an attribute value of the batch's fast rows was
	// written in the batch's text (textArena), which the next batch
	// overwrites: its rows' attributes are then not stable
	// (span.Span.StableAttrs).
	loose bool
	// With filters, the options that decide them and, per hop name,
	// whether --hops and --exclude-hops keep it (leftOut).
	filters bool
	opt     *record.Options
	hopKept map[string]bool
	// slow counts batches left to read as records without trying fast
	// rows first: when a filter leaves most rows of a batch out, they
	// are the records' anyway (both ways give the same spans).
	slow int
	// ign is the attribute columns the Branch ignores (attrIgnore), nil
	// when it does not say.
	ign *attrIgnore
	// sets gives the fast rows shared attribute lists (attrSets), nil
	// without attribute columns.
	sets *attrSets
	// The unread columns (parquet_unread.go): the droppable ones (bits
	// among the attribute columns, as attrIgnore's), those left closed in
	// the current row group, and the row group's chunks and first row.
	droppable uint64
	revived   uint64 // droppable columns opened again in the row group
	unread    []bool
	nunread   int
	chunks    []parquet.ColumnChunk
	rgFirst   int64
	rgFresh   bool
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
	ord, _ := src.Fork().(record.OrderedKeys)
	w.ordOnly = ord != nil
	for _, c := range cols {
		if c.attr {
			w.nattr++
			if ord != nil && ord.OrderedReads(c.name) {
				w.ordKeys = append(w.ordKeys, c.name)
			}
		}
	}
	w.nkept = w.nattr
	if w.ordOnly {
		w.nkept = len(w.ordKeys)
	}
	if w.nattr > 0 {
		w.attrs = make([][]span.Attr, pqBatchRows)
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
		if w.curs[i].fast == fastID && src.Fork() != nil {
			w.curs[i].hold = &w.held
		}
	}
	return w
}

// rowGroup decodes one row group into chunks sent to out (a task of
// pool.Ordered). It returns false when the reader stopped (stop closed).
func (w *pqWorker) rowGroup(rg parquet.RowGroup, first int64, out chan<- *pqChunk, stop <-chan struct{}) (ok bool) {
	chunks := rg.ColumnChunks()
	for i := range w.curs {
		w.curs[i].open(chunks[w.cols[i].idx])
	}
	w.startRowGroup(chunks, first)
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
				if ch = w.chunk(stop); ch == nil {
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
		if ch = w.chunk(stop); ch == nil {
			return false
		}
		end := min(n, r+pqChunkRows)
		if ch.Spans == nil { // full size at once: growing by doubling is garbage
			ch.Spans, ch.At = make([]span.Span, 0, pqChunkRows), make([]int64, 0, pqChunkRows)
			if w.borrow && w.nkept > 0 {
				// The attributes too: growing a slice of strings copies
				// it under the GC's write barriers, which cost more than
				// the rest of keepAttrs.
				ch.attrs = make([]span.Attr, 0, pqChunkRows*w.nkept)
			}
		}
		if w.borrow {
			// The ids and the attributes' text (about 16 bytes a value).
			ch.ids = grow(ch.ids, pqChunkRows*(64+16*w.nkept))
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
		for r < end && len(ch.Spans)+pqBatchRows <= pqChunkRows && len(ch.Events)+pqBatchRows <= pqChunkRows {
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
	w.text.reset()
	if w.roles != nil && w.slow > 0 {
		w.slow-- // most rows of the batches before went to the records
	} else if w.roles != nil {
		n, ok, handled := w.fastBatch(ch, base, m)
		if handled {
			return n, ok
		}
		m = n
	}
	if w.nunread > 0 {
		// The records read every column.
		if err := w.revive(base); err != nil {
			ch.err = err
			return m, false
		}
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
		ch.Events = append(ch.Events, record.Event{Before: len(ch.Spans), At: row, Reason: "bad value", Detail: bad.Error()})
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
		ch.Reject(&rec.sp, row, reason, detail)
		return
	}
	if w.branch != nil {
		if !again {
			ch.Used++
			if len(rec.soft) > 0 {
				ch.Events = append(ch.Events, record.Event{Before: len(ch.Spans), At: row, Soft: slices.Clone(rec.soft), Taken: true})
			}
			if !w.branch.Take(&rec.sp) {
				return
			}
		}
		if w.borrow {
			w.keep(ch, &rec.sp)
		}
	}
	if w.branch != nil && w.ordOnly && len(rec.sp.Attrs) > 0 {
		rec.sp.Attrs = w.orderedAttrs(rec.sp.Attrs)
	}
	if len(rec.sp.Attrs) > 0 {
		rec.sp.Attrs = w.keepAttrs(ch, rec.sp.Attrs)
	}
	ch.Spans = append(ch.Spans, rec.sp)
	ch.At = append(ch.At, row)
	if w.branch == nil && len(rec.soft) > 0 {
		ch.Events = append(ch.Events, record.Event{Before: len(ch.Spans), At: row, Soft: slices.Clone(rec.soft)})
	}
}

// orderedAttrs is attrs without the attributes Ordered does not read
// (record.OrderedKeys), in w.ordBuf; nil when none is left. With a Fork
// a span in a chunk goes to Ordered alone, its Branch done with it, so
// what Ordered does not read need not be copied into the chunk nor held
// there until the chunk is delivered. On a file with many attribute
// columns that was most of a chunk's memory, and the chunks a worker may
// have in flight bound how far it reads ahead of the one before it.
func (w *pqWorker) orderedAttrs(attrs []span.Attr) []span.Attr {
	kept := w.ordBuf[:0]
	for _, at := range attrs {
		for _, k := range w.ordKeys {
			if at.Key == k {
				kept = append(kept, at)
				break
			}
		}
	}
	w.ordBuf = kept
	if len(kept) == 0 {
		return nil
	}
	return kept
}

// chunk is a free chunk of the worker's, nil once stop is closed. A
// chunk is made only when every one made is in flight, up to
// pqChunksPerWorker: a worker that is seldom ahead of the emitting
// goroutine (a file of many row groups, a sample that gives back few
// rows) holds two or three, not all of them.
func (w *pqWorker) chunk(stop <-chan struct{}) *pqChunk {
	select {
	case ch := <-w.free:
		return ch
	default:
	}
	if w.made < pqChunksPerWorker {
		w.made++
		return &pqChunk{Batch: record.Batch{Rows: true}, owner: w.free}
	}
	select {
	case ch := <-w.free:
		return ch
	case <-stop:
		return nil
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
