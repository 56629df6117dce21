package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/parquet-go/parquet-go"
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

// pqChunkRows is the number of spans a worker hands over at once: large
// enough that the hand-off costs nothing per span, small enough (about
// 1.5 MB of spans) to stay in cache.
const pqChunkRows = 4096

// pqChunksPerWorker bounds the chunks a worker has in flight.
const pqChunksPerWorker = 4

// pqChunk is a run of consecutive rows of one row group, decoded.
type pqChunk struct {
	spans  []span.Span
	rows   []int64 // 1-based row index in the file of each span
	events []pqEvent
	ids    []byte // the id text the spans' ids alias (Options.Borrowed)
	err    error  // a read error after the rows of this chunk: the last chunk
	owner  chan *pqChunk
}

// pqEvent is a row that does not become a span, placed before span
// `before` of its chunk.
type pqEvent struct {
	before         int
	row            int64
	reason, detail string
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
func decodeFlatBatch(src *Source, pf *parquet.File, cols []flatCol) error {
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
	for range workers {
		w := newPQWorker(src, pf, cols)
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
			ch.spans, ch.rows, ch.events, ch.ids, ch.err = ch.spans[:0], ch.rows[:0], ch.events[:0], ch.ids[:0], nil
			ch.owner <- ch
		}
		if err != nil {
			break
		}
	}
	close(stop)
	// Drain what the workers still send so that none blocks, then wait:
	// the file must not be closed under them.
	go func() {
		for _, o := range outs {
			for ch := range o {
				ch.owner <- ch
			}
		}
	}()
	wg.Wait()
	return err
}

func deliverPQ(src *Source, ch *pqChunk) error {
	ev := ch.events
	for i := range ch.spans {
		for len(ev) > 0 && ev[0].before <= i {
			src.Skip(0, ev[0].row, ev[0].reason, ev[0].detail)
			ev = ev[1:]
		}
		src.Emit(&ch.spans[i], 0, ch.rows[i])
	}
	for _, e := range ev {
		src.Skip(0, e.row, e.reason, e.detail)
	}
	return ch.err
}

// pqWorker is one decoding goroutine's state.
type pqWorker struct {
	cols    []flatCol
	rec     *flatRecord
	borrow  bool
	free    chan *pqChunk
	scratch []byte
	curs    []pqCursor
}

func newPQWorker(src *Source, pf *parquet.File, cols []flatCol) *pqWorker {
	w := &pqWorker{cols: cols, rec: &flatRecord{intern: &interner{}}, borrow: src.opt.Borrowed,
		free: make(chan *pqChunk, pqChunksPerWorker), curs: make([]pqCursor, len(cols))}
	for range pqChunksPerWorker {
		w.free <- &pqChunk{owner: w.free}
	}
	for i, c := range cols {
		leaf, _ := pf.Schema().Lookup(c.name)
		w.curs[i] = pqCursor{col: &w.cols[i], maxDef: byte(leaf.MaxDefinitionLevel), kind: leaf.Node.Type().Kind()}
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
	rec := w.rec
	for r := int64(0); r < n; {
		select {
		case ch = <-w.free:
		case <-stop:
			return false
		}
		end := min(n, r+pqChunkRows)
		if w.borrow {
			ch.ids = grow(ch.ids, int(end-r)*64)
		}
		for ; r < end; r++ {
			row := first + r + 1
			rec.reset()
			var bad error
			for i := range w.curs {
				c := &w.curs[i]
				present, err := c.next(rec.intern)
				if err != nil {
					ch.err = fmt.Errorf("row %d, column %s: %v", row, c.col.name, err)
					return send()
				}
				if bad != nil || !present {
					continue
				}
				if err := w.set(c, ch); err != nil {
					bad = fmt.Errorf("column %s: %v", c.col.name, err)
				}
			}
			if bad != nil {
				ch.events = append(ch.events, pqEvent{before: len(ch.spans), row: row, reason: "bad value", detail: bad.Error()})
				continue
			}
			if reason, detail := rec.finish(); reason != "" {
				ch.events = append(ch.events, pqEvent{before: len(ch.spans), row: row, reason: reason, detail: detail})
				continue
			}
			ch.spans = append(ch.spans, rec.sp)
			ch.rows = append(ch.rows, row)
		}
		rec.block = nil
		if !send() {
			return false
		}
	}
	return true
}

// grow returns b emptied with at least n bytes of capacity.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, 0, n)
	}
	return b[:0]
}

// set stores the cursor's current value in the worker's record.
func (w *pqWorker) set(c *pqCursor, ch *pqChunk) error {
	r := w.rec
	col := c.col
	switch {
	case c.dict != nil:
	case c.kind == parquet.Int64:
		return r.setParquetInt(col, c.i64[c.vi-1], &w.scratch)
	case c.kind == parquet.Int32:
		return r.setParquetInt(col, int64(c.i32[c.vi-1]), &w.scratch)
	case c.kind == parquet.Double:
		return r.setParquetFloat(col, c.f64[c.vi-1], &w.scratch)
	case c.kind == parquet.Float:
		return r.setParquetFloat(col, float64(c.f32[c.vi-1]), &w.scratch)
	case c.kind == parquet.Boolean:
		i := c.vi - 1
		return r.setParquetBool(col, c.bits[i>>3]>>(i&7)&1 != 0, &w.scratch)
	}
	var b []byte
	if c.dict != nil {
		// Typed kinds with a dictionary land here too (c.idx is set).
		e := &c.entries[c.idx[c.vi-1]]
		switch e.op {
		case opNothing:
			return nil
		case opString:
			*c.target(r) = e.s
			return nil
		case opStatus:
			if e.err != nil {
				return e.err
			}
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
		b = c.value(c.vi - 1)
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
	at := len(ch.ids)
	ch.ids = col.idText(b, ch.ids)
	r.block = ch.ids
	return r.setText(col.spec, ch.ids[at:])
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
	err  error
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

	dict     parquet.Dictionary // the current page's, nil for a plain page
	prepared parquet.Dictionary // the one entries were prepared for
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

// next moves to the next row and reports whether it holds a value (the
// value is then at vi-1 of the page's typed data).
func (c *pqCursor) next(in *interner) (bool, error) {
	for c.di >= c.dn {
		if err := c.load(in); err != nil {
			return false, err
		}
	}
	i := c.di
	c.di++
	if c.defs != nil && c.defs[i] != c.maxDef {
		return false, nil
	}
	if c.vi >= c.vn {
		return false, errors.New("page holds fewer values than its definition levels say (corrupt page)")
	}
	c.vi++
	return true, nil
}

// load reads the next page and takes its typed data.
func (c *pqCursor) load(in *interner) error {
	if c.page != nil {
		parquet.Release(c.page)
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
		nvals = 0
		for _, d := range c.defs {
			if d == c.maxDef {
				nvals++
			}
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

// target is the span field a column's prepared strings go to.
func (c *pqCursor) target(r *flatRecord) *string {
	switch {
	case c.col.spec.hopAttr:
		return &r.sp.Hop
	case c.col.spec.f == fService:
		return &r.sp.Service
	case c.col.spec.f == fName:
		return &r.sp.Name
	case c.col.spec.f == fKind:
		return &r.sp.Kind
	case c.col.spec.f == fHop:
		return &r.sp.Hop
	}
	return &r.sp.Peer
}

// prepare computes, once per dictionary, what each entry does to a
// record, with exactly the effect the row path has on its value.
func (c *pqCursor) prepare(d parquet.Dictionary, in *interner) {
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
				e.op, e.s = opString, normKind(t)
			case isString:
				e.op, e.s = opString, in.get(t)
			case spec.f == fStatus && !spec.hopAttr:
				e.op = opStatus
				e.st, e.to, e.code, e.err = parseStatus(t)
			}
		} else {
			e.v = v.Clone()
		}
		c.entries = append(c.entries, e)
	}
}
