package flat

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

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
	if c.dict != nil {
		w.applyDict(c, sel, vals, ch)
		return
	}
	recs, bad := w.recs, w.bad
	switch c.fast {
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
		w.applyIDs(c, sel, vals, ch)
	default:
		for k, row := range sel {
			if bad[row] == nil {
				w.setOne(c, row, int(vals[k]), ch)
			}
		}
	}
}

// applyDict is apply for a dictionary-encoded page: each entry was
// prepared once (decoded, parsed), so a value is an index into what was
// prepared.
func (w *pqWorker) applyDict(c *pqCursor, sel, vals []int32, ch *pqChunk) {
	recs, bad := w.recs, w.bad
	if c.target != nil {
		// Dictionary strings: the prepared value, or a setter for the
		// rare entry that needs one. The value is stored in a record
		// already bad too: it cannot fail, and the record is dropped
		// anyway.
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
	// Other dictionary columns: the status, prepared once per entry, is
	// set here; the rest through the setter.
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
}

// applyIDs is apply for a text id column with Options.Borrowed: what
// setText and idString do with a text id, with no call per value. Trimmed,
// blank or (for a parent) "no parent" sets nothing, else the text is
// copied to the chunk and the id aliases the copy. With a Fork the id
// aliases the page itself (held until the batch ends): most spans stop at
// their Branch, and keep copies the rest.
func (w *pqWorker) applyIDs(c *pqCursor, sel, vals []int32, ch *pqChunk) {
	recs := w.recs
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
}

// keepAttrs copies a span's attributes out of the batch: into the chunk
// when spans are borrowed (they live until it is emitted), else into a
// slice of the span's own.
func (w *pqWorker) keepAttrs(ch *pqChunk, l []span.Attr) []span.Attr {
	n := len(l)
	if w.borrow {
		at := len(ch.attrs)
		ch.attrs = append(ch.attrs, l...)
		kept := ch.attrs[at : at+n : at+n]
		// The values may be the batch's text (attrText): the chunk's
		// own copy lives until it is emitted.
		for i := range kept {
			v := kept[i].Value
			j := len(ch.ids)
			ch.ids = append(ch.ids, v...)
			kept[i].Value = unsafe.String(&ch.ids[j], len(v))
		}
		return kept
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
// them and bounded as every flat reader bounds them (maxAttrValue). A
// dictionary's entries were spelled and interned once (prepare); a plain
// page's values are interned, or with Options.Borrowed written to the
// batch's text (attrText), which row copies for the spans that go on.
func (w *pqWorker) applyAttr(c *pqCursor, sel, vals []int32) {
	key := c.col.name
	if c.dict != nil {
		idx, ops, strs := c.idx, c.ops, c.strs
		for k, row := range sel {
			if x := idx[vals[k]]; ops[x] == opAttr {
				w.attrs[row] = append(w.attrs[row], span.Attr{Key: key, Value: strs[x]})
			}
		}
		return
	}
	for k, row := range sel {
		if v, ok := w.attrPlain(c, int(vals[k])); ok {
			w.attrs[row] = append(w.attrs[row], span.Attr{Key: key, Value: v})
		}
	}
}

// attrPlain is the attribute text of value vi of a plain page, false when
// the row has none (empty, or longer than MaxAttrValue).
func (w *pqWorker) attrPlain(c *pqCursor, vi int) (string, bool) {
	var b []byte
	switch c.kind {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		raw := c.value(vi)
		if len(raw) > record.MaxAttrValue {
			return "", false // its text is longer still
		}
		b = c.col.idText(raw, w.scratch[:0])
		w.scratch = b
		if len(b) == 0 || len(b) > record.MaxAttrValue {
			return "", false
		}
		if !w.borrow {
			return attrString(w.recs[0].intern, b), true
		}
		w.loose = true
		return w.text.str(b), true
	}
	// A number or a boolean: its text is short ASCII, and the value of
	// the row before is often the same one (a port, a flag).
	bits := c.bitsOf(vi)
	if m := &c.memo; m.gen == w.text.gen && m.bits == bits && m.ok {
		w.loose = w.loose || m.loose
		return m.s, m.s != ""
	}
	if w.borrow && (c.kind == parquet.Int64 || c.kind == parquet.Int32) {
		// An integer's decimal text (attrValue's): the few a column
		// repeats (ports, counts) interned once (held), the others
		// written in place in the batch's text. Never empty, never long.
		n := int64(bits)
		if c.kind == parquet.Int32 {
			n = int64(int32(bits))
		}
		str, held := c.heldInt(bits)
		if !held && c.nheld < len(c.held) {
			w.scratch = strconv.AppendInt(w.scratch[:0], n, 10)
			str = attrString(w.recs[0].intern, w.scratch)
			c.held[c.nheld], held = heldText{bits, str}, true
			c.nheld++
		}
		if !held {
			str = w.text.int(n)
			w.loose = true
		}
		c.memo = attrMemo{gen: w.text.gen, bits: bits, s: str, ok: true, loose: !held}
		return str, true
	}
	b = attrValue(c.col, c.typed(vi), &w.scratch)
	var str string
	switch {
	case len(b) == 0 || len(b) > record.MaxAttrValue:
	case !w.borrow:
		str = attrString(w.recs[0].intern, b)
	default:
		str = w.text.ascii(b)
		w.loose = true
	}
	c.memo = attrMemo{gen: w.text.gen, bits: bits, s: str, ok: true, loose: w.borrow}
	return str, str != ""
}

// heldText is a number's interned text (pqCursor.held).
type heldText struct {
	bits uint64
	s    string
}

// heldInt is the interned text of the integer bits, when the column holds
// it.
func (c *pqCursor) heldInt(bits uint64) (string, bool) {
	for _, h := range c.held[:c.nheld] {
		if h.bits == bits {
			return h.s, true
		}
	}
	return "", false
}

// attrMemo is the last number a plain attribute page gave and its text
// (valid while the batch's text holds it: gen).
type attrMemo struct {
	gen  uint64
	bits uint64
	s    string
	ok   bool
	// loose: s is in the batch's text, not interned (pqWorker.loose).
	loose bool
}

// bitsOf is value i of a plain page of a numeric or boolean column as the
// bits that decide its text.
func (c *pqCursor) bitsOf(i int) uint64 {
	switch c.kind {
	case parquet.Int64:
		return uint64(c.i64[i])
	case parquet.Int32:
		return uint64(c.i32[i])
	case parquet.Double:
		return math.Float64bits(c.f64[i])
	case parquet.Float:
		return uint64(math.Float32bits(c.f32[i]))
	case parquet.Boolean:
		return uint64(c.bits[i>>3] >> (i & 7) & 1)
	}
	return 0
}

// textArena holds the text of a batch's attribute values (Options.Borrowed):
// blocks that are never moved, so a string cut from one stays valid until
// reset, which the next batch calls.
type textArena struct {
	blocks [][]byte
	cur    int
	gen    uint64 // counts resets: a string cut before one is gone
	// The text of the digits above the last nine of the last integer
	// int wrote from 1e9 up (hi), which need not be in a block.
	hi     int64
	hiText [20]byte
	hiLen  int
}

func (a *textArena) reset() {
	a.cur = 0
	a.gen++
	if len(a.blocks) > 0 {
		a.blocks[0] = a.blocks[0][:0]
	}
}

// str copies b (not empty) into the arena: the same text as ValidText's,
// invalid UTF-8 made valid.
func (a *textArena) str(b []byte) string {
	if !utf8.Valid(b) {
		return record.ValidText(b)
	}
	return a.ascii(b)
}

// ascii is str for text known to be valid (a number's digits).
func (a *textArena) ascii(b []byte) string {
	const blockSize = 32 << 10
	if len(a.blocks) == 0 {
		a.blocks = append(a.blocks, make([]byte, 0, blockSize))
	}
	blk := a.blocks[a.cur]
	if cap(blk)-len(blk) < len(b) {
		a.cur++
		if a.cur == len(a.blocks) {
			a.blocks = append(a.blocks, nil)
		}
		if cap(a.blocks[a.cur]) < len(b) {
			a.blocks[a.cur] = make([]byte, 0, max(blockSize, len(b)))
		}
		blk = a.blocks[a.cur][:0]
	}
	at := len(blk)
	blk = append(blk, b...)
	a.blocks[a.cur] = blk
	return unsafe.String(&blk[at], len(b))
}

// int is the decimal text of n (strconv.AppendInt's), written in the
// arena.
func (a *textArena) int(n int64) string {
	const blockSize = 32 << 10
	if len(a.blocks) == 0 {
		a.blocks = append(a.blocks, make([]byte, 0, blockSize))
	}
	blk := a.blocks[a.cur]
	if cap(blk)-len(blk) < 20 { // a int64's text is at most 20 bytes
		a.cur++
		if a.cur == len(a.blocks) {
			a.blocks = append(a.blocks, nil)
		}
		if cap(a.blocks[a.cur]) < 20 {
			a.blocks[a.cur] = make([]byte, 0, blockSize)
		}
		blk = a.blocks[a.cur][:0]
	}
	at := len(blk)
	if n >= 1e9 {
		// Nanosecond times, the usual such column, share their digits
		// above the last nine from row to row: those are written once
		// per change (hiText), the last nine each time.
		hi, lo := n/1e9, uint32(n%1e9)
		if hi != a.hi || a.hiLen == 0 {
			a.hi, a.hiLen = hi, len(strconv.AppendInt(a.hiText[:0], hi, 10))
		}
		blk = append(blk, a.hiText[:a.hiLen]...)
		blk = appendNine(blk, lo)
	} else {
		blk = strconv.AppendInt(blk, n, 10)
	}
	a.blocks[a.cur] = blk
	return unsafe.String(&blk[at], len(blk)-at)
}

// digitPairs spells 00 to 99.
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

// appendNine appends lo (below 1e9) as nine digits, with leading zeros.
func appendNine(dst []byte, lo uint32) []byte {
	var b [9]byte
	b[0] = '0' + byte(lo/1e8)
	lo %= 1e8
	for i := 7; i >= 1; i -= 2 {
		q := lo / 100
		r := lo - q*100
		b[i], b[i+1] = digitPairs[2*r], digitPairs[2*r+1]
		lo = q
	}
	return append(dst, b[:]...)
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
		return r.setTyped(col.spec, b)
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
