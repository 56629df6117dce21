package flat

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// Operations prepared for a dictionary entry.
const (
	opGeneric = iota // setText on the value, per row
	opNothing        // blank: sets nothing
	opString         // assign the prepared string to the column's field
	opStatus         // the prepared status
	opValue          // a typed (not byte array) value: the row path's setter
	opAttr           // an attribute column's value: the prepared string (s)
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
	memo     attrMemo // an attribute column's last plain number (attrPlain)
	// held are the first integers of a plain attribute column with their
	// interned text (attrPlain, Options.Borrowed).
	held  [8]heldText
	nheld int
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
		nvals = CountDefined(c.defs, c.maxDef)
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

// CountDefined counts the levels equal to maxDef. A flat optional column
// has levels 0 and 1, so eight at a time are one population count: a
// byte loop mispredicts on columns with nulls spread about (parent_id).
func CountDefined(defs []byte, maxDef byte) int {
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
		if c.col.attr {
			// An attribute's text, spelled and bounded as applyAttr
			// spells a plain page's value, and interned once here.
			var b []byte
			if k := v.Kind(); k == parquet.ByteArray || k == parquet.FixedLenByteArray {
				b = c.col.idText(v.ByteArray(), nil)
			} else {
				var scratch []byte
				b = attrValue(c.col, v, &scratch)
			}
			e := pqEntry{op: opNothing}
			if len(b) > 0 && len(b) <= record.MaxAttrValue {
				e.op, e.s = opAttr, attrString(in, b)
			}
			c.entries = append(c.entries, e)
			continue
		}
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
				e.op, e.s = opString, in.Get(e.raw) // a name keeps its bytes (setTyped)
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
