package flat

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/option"
)

// Arrow IPC holds the flat span schema as record batches, with the same
// column names as Parquet (what `tailscope convert -o x.arrow` writes, or
// any table through --map). Both IPC encodings are read:
//
//   - the file format ("ARROW1" … footer): with ipc.NewFileReader when the
//     input is a plain file; when it comes compressed or on stdin, the file
//     format's embedded stream (it follows the 8-byte magic) is read with
//     the stream reader instead, so no spill is needed;
//   - the stream format (messages starting 0xFFFFFFFF), with ipc.NewReader.
//
// One record batch is in memory at a time.

var arrowMagic = []byte("ARROW1")

// maxArrowBody bounds one record batch body: a corrupt length must not
// make the reader allocate more than this.
const maxArrowBody = 1 << 30

func DecodeArrow(src *record.Source) (err error) {
	defer record.NoPanic("Arrow", &err)
	src.SetDefaultHopBy("hop")
	head, _ := src.R.Peek(8)
	var next func() (arrow.RecordBatch, error)
	switch {
	case bytes.HasPrefix(head, arrowMagic) && src.File != nil:
		fi, err := src.File.Stat()
		if err != nil {
			return err
		}
		if err := checkArrowFooter(src.File, fi.Size()); err != nil {
			return err
		}
		fr, err := ipc.NewFileReader(io.NewSectionReader(src.File, 0, fi.Size()), ipc.WithBodySizeLimit(maxArrowBody),
			ipc.WithAllocator(&arrowAllocator{mem: memory.NewGoAllocator()}))
		if err != nil {
			return fmt.Errorf("not a readable Arrow file (truncated or corrupt?): %v", err)
		}
		defer fr.Close()
		i, n := 0, fr.NumRecords()
		next = func() (arrow.RecordBatch, error) {
			if i >= n {
				return nil, io.EOF
			}
			i++
			rec, err := fr.RecordBatch(i - 1)
			if err == nil {
				rec.Retain() // the file reader releases it on the next call
			}
			return rec, err
		}
	default:
		if bytes.HasPrefix(head, arrowMagic) {
			if _, err := src.R.Discard(8); err != nil {
				return fmt.Errorf("truncated Arrow file: %v", err)
			}
		}
		in, err := checkArrowStream(src.R, src.Options().MaxRecord, src.Options().Names)
		if err != nil {
			return err
		}
		in = &arrowFrames{r: bufio.NewReader(in), maxMeta: int64(src.Options().MaxRecord), maxBody: maxArrowBody, names: src.Options().Names}
		rr, err := ipc.NewReader(in, ipc.WithBodySizeLimit(maxArrowBody), ipc.WithMetadataSizeLimit(int64(src.Options().MaxRecord)),
			ipc.WithAllocator(&arrowAllocator{mem: memory.NewGoAllocator()}))
		if err != nil {
			return fmt.Errorf("not a readable Arrow stream (truncated or corrupt?): %v", err)
		}
		defer rr.Release()
		next = func() (arrow.RecordBatch, error) {
			if !rr.Next() {
				if err := rr.Err(); err != nil {
					return nil, err
				}
				return nil, io.EOF
			}
			rec := rr.RecordBatch()
			rec.Retain()
			return rec, nil
		}
	}
	tab := newFieldTable(src.Options())
	defer func() {
		if err == nil {
			tab.noteUnmapped(src)
		}
	}()
	rec := &flatRecord{intern: &record.Interner{}, units: &unitStats{}, at: record.AttrSet{Borrow: src.Options().Borrowed}}
	defer func() { unitNotes(src, rec.units, true) }()
	var row int64
	var scratch []byte
	for batch := 1; ; batch++ {
		rb, err := next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("record batch %d (after row %d): %v (truncated or corrupt?)", batch, row, err)
		}
		err = decodeArrowBatch(src, tab, rb, rec, &row, &scratch)
		rb.Release()
		if err != nil {
			return err
		}
	}
}

type arrowCol struct {
	name string
	arr  arrow.Array
	spec colSpec
	attr bool // a column no span field takes: its cells are attributes
}

func decodeArrowBatch(src *record.Source, tab *fieldTable, rb arrow.RecordBatch, rec *flatRecord, row *int64, scratch *[]byte) error {
	var cols []arrowCol
	have := map[field]bool{}
	for i, f := range rb.Schema().Fields() {
		spec := tab.column(f.Name)
		// Cells stay in the batch until its last span is emitted.
		spec.alias = true
		switch {
		case spec.used():
			cols = append(cols, arrowCol{name: f.Name, arr: rb.Column(i), spec: spec})
			have[spec.f] = true
		case arrowScalar(f.Type) || arrowPairs(f.Type):
			cols = append(cols, arrowCol{name: f.Name, arr: rb.Column(i), spec: spec, attr: true})
		}
	}
	if !hasDurationColumn(have) {
		return fmt.Errorf("an Arrow span table needs a duration column (duration_ns, duration_ms, …, or start and end); fields: %s; name one with %s", rb.Schema(), src.Options().Names.Of(option.Map))
	}
	n := int(rb.NumRows())
	for i := 0; i < n; i++ {
		*row++
		rec.reset()
		var bad error
		for _, c := range cols {
			if i >= c.arr.Len() {
				return fmt.Errorf("row %d: column %s is shorter than its batch (corrupt file)", *row, c.name)
			}
			if c.attr {
				rec.arrowAttr(&c, c.arr, i, scratch)
				continue
			}
			if err := rec.setArrow(&c, c.arr, i, scratch); err != nil {
				bad = fmt.Errorf("column %s: %v", c.name, err)
				break
			}
		}
		if bad != nil {
			src.Skip(0, *row, "bad value", bad.Error())
			continue
		}
		if reason, detail := rec.finish(); reason != "" {
			src.Skip(0, *row, reason, detail)
			continue
		}
		src.EmitSoft(&rec.sp, 0, *row, rec.soft)
	}
	return nil
}

// view returns the bytes of s without copying; the record copies what it
// keeps, and the batch outlives the call.
func view(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// setArrow stores cell i of a column, typed values directly where the flat
// schema's own columns are concerned, the rest through the text parsers.
func (r *flatRecord) setArrow(c *arrowCol, a arrow.Array, i int, scratch *[]byte) error {
	if a.IsNull(i) {
		return nil
	}
	f := c.spec.f
	// Text made in scratch is not the batch's: a pod cell read from it
	// must not be kept as a view.
	made := c.spec
	made.alias = false
	setInt := func(n int64, scale int64) error {
		if r.setTypedInt(f, n, scale) {
			return nil
		}
		return r.setText(made, strconv.AppendInt((*scratch)[:0], n, 10))
	}
	switch a := a.(type) {
	case *array.String:
		return r.setTyped(c.spec, view(a.Value(i)))
	case *array.LargeString:
		return r.setTyped(c.spec, view(a.Value(i)))
	case *array.StringView:
		return r.setTyped(c.spec, view(a.Value(i)))
	case *array.Binary:
		return r.setBinary(c.spec, a.Value(i), scratch)
	case *array.LargeBinary:
		return r.setBinary(c.spec, a.Value(i), scratch)
	case *array.FixedSizeBinary:
		return r.setBinary(c.spec, a.Value(i), scratch)
	case *array.Boolean:
		return r.setText(made, strconv.AppendBool((*scratch)[:0], a.Value(i)))
	case *array.Int64:
		return setInt(a.Value(i), 1)
	case *array.Int32:
		return setInt(int64(a.Value(i)), 1)
	case *array.Int16:
		return setInt(int64(a.Value(i)), 1)
	case *array.Int8:
		return setInt(int64(a.Value(i)), 1)
	case *array.Uint64:
		if a.Value(i) > math.MaxInt64 {
			return r.unsupported(c.spec, fmt.Errorf("%d out of range", a.Value(i)))
		}
		return setInt(int64(a.Value(i)), 1)
	case *array.Uint32:
		return setInt(int64(a.Value(i)), 1)
	case *array.Uint16:
		return setInt(int64(a.Value(i)), 1)
	case *array.Uint8:
		return setInt(int64(a.Value(i)), 1)
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return setInt(int64(a.Value(i)), int64(unit.Multiplier()))
	case *array.Duration:
		unit := a.DataType().(*arrow.DurationType).Unit
		n := int64(a.Value(i)) * int64(unit.Multiplier())
		if f == fDuration || f == fDurationMs || f == fDurationUs || f == fDurationNs || f == fDurationS {
			r.sp.Duration, r.hasDur = n, true
			return nil
		}
		return setInt(n, 1)
	case *array.Float64:
		return r.setFloat(made, a.Value(i), scratch)
	case *array.Float32:
		return r.setFloat(made, float64(a.Value(i)), scratch)
	case *array.Dictionary:
		return r.setArrow(c, a.Dictionary(), a.GetValueIndex(i), scratch)
	}
	return r.unsupported(c.spec, fmt.Errorf("unsupported Arrow type %s", a.DataType()))
}

// arrowScalar reports whether cells of type t are attribute values:
// text, integers, floats, booleans, and dictionaries of them.
func arrowScalar(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW, arrow.BOOL,
		arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT32, arrow.FLOAT64:
		return true
	case arrow.DICTIONARY:
		return arrowScalar(t.(*arrow.DictionaryType).ValueType)
	}
	return false
}

// arrowAttr stores cell i of a column no span field takes as an
// attribute (text as it is, numbers in decimal, booleans true/false).
func (r *flatRecord) arrowAttr(c *arrowCol, a arrow.Array, i int, scratch *[]byte) {
	if i < 0 || i >= a.Len() || a.IsNull(i) {
		return
	}
	b := (*scratch)[:0]
	alias := false
	switch a := a.(type) {
	case *array.String:
		b, alias = view(a.Value(i)), true
	case *array.LargeString:
		b, alias = view(a.Value(i)), true
	case *array.StringView:
		b, alias = view(a.Value(i)), true
	case *array.Boolean:
		b = strconv.AppendBool(b, a.Value(i))
	case *array.Int64:
		b = strconv.AppendInt(b, a.Value(i), 10)
	case *array.Int32:
		b = strconv.AppendInt(b, int64(a.Value(i)), 10)
	case *array.Int16:
		b = strconv.AppendInt(b, int64(a.Value(i)), 10)
	case *array.Int8:
		b = strconv.AppendInt(b, int64(a.Value(i)), 10)
	case *array.Uint64:
		b = strconv.AppendUint(b, a.Value(i), 10)
	case *array.Uint32:
		b = strconv.AppendUint(b, uint64(a.Value(i)), 10)
	case *array.Uint16:
		b = strconv.AppendUint(b, uint64(a.Value(i)), 10)
	case *array.Uint8:
		b = strconv.AppendUint(b, uint64(a.Value(i)), 10)
	case *array.Float64:
		b = strconv.AppendFloat(b, a.Value(i), 'g', -1, 64)
	case *array.Float32:
		b = strconv.AppendFloat(b, float64(a.Value(i)), 'g', -1, 32)
	case *array.Dictionary:
		r.arrowAttr(c, a.Dictionary(), a.GetValueIndex(i), scratch)
		return
	case array.ListLike:
		r.arrowPairs(a, i)
		return
	default:
		return
	}
	if !alias {
		*scratch = b
	}
	r.at.Add(record.TierField, c.spec.name, b, alias)
}

// arrowPairs reports whether t is a list of key/value text pairs: the
// attributes column export writes (list<struct<key, value>>), or a
// map<string, string>.
func arrowPairs(t arrow.DataType) bool {
	var elem arrow.DataType
	switch t := t.(type) {
	case *arrow.MapType:
		return t.KeyType().ID() == arrow.STRING && t.ItemType().ID() == arrow.STRING
	case *arrow.ListType:
		elem = t.Elem()
	case *arrow.LargeListType:
		elem = t.Elem()
	default:
		return false
	}
	st, ok := elem.(*arrow.StructType)
	return ok && st.NumFields() == 2 && st.Field(0).Type.ID() == arrow.STRING && st.Field(1).Type.ID() == arrow.STRING
}

// arrowPairs stores the key/value pairs of list cell i as attributes of
// the span, under their own keys.
func (r *flatRecord) arrowPairs(a array.ListLike, i int) {
	var keys, vals *array.String
	switch l := a.(type) {
	case *array.Map:
		keys, _ = l.Keys().(*array.String)
		vals, _ = l.Items().(*array.String)
	default:
		if st, ok := l.ListValues().(*array.Struct); ok && st.NumField() == 2 {
			keys, _ = st.Field(0).(*array.String)
			vals, _ = st.Field(1).(*array.String)
		}
	}
	if keys == nil || vals == nil {
		return
	}
	lo, hi := a.ValueOffsets(i)
	hi = min(hi, int64(keys.Len()), int64(vals.Len())) // a corrupt offset reads nothing more
	for j := max(int(lo), 0); j < int(hi); j++ {
		if j < 0 || j >= keys.Len() || j >= vals.Len() || keys.IsNull(j) || vals.IsNull(j) {
			continue
		}
		r.at.Add(record.TierSpan, r.at.KeyOf(view(keys.Value(j))), view(vals.Value(j)), true)
	}
}

func (r *flatRecord) setBinary(c colSpec, b []byte, scratch *[]byte) error {
	switch c.f {
	case fTraceID, fSpanID, fParentID:
		if printable(b) {
			break // an id stored as text in a binary column
		}
		*scratch = hex.AppendEncode((*scratch)[:0], b)
		b = *scratch
	}
	return r.setTyped(c, b)
}

func (r *flatRecord) setFloat(c colSpec, x float64, scratch *[]byte) error {
	if c.f == fWeight {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			r.ignore(fWeight, fmt.Errorf("weight: want a number ≥ 0, got %g", x))
			return nil
		}
		r.sp.Weight = x
		return nil
	}
	return r.setText(c, strconv.AppendFloat((*scratch)[:0], x, 'f', -1, 64))
}
