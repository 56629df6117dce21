package flat

import (
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
	"github.com/tailscope/tailscope/ingest/internal/pqguard"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/span"
)

// Parquet files come in two shapes that tailscope reads:
//
//   - flat tables, one row per span, whose top-level columns are named like
//     flat JSON keys (what `tailscope convert` writes; any other naming via
//     --map);
//   - Grafana Tempo blocks (vParquet … vParquet4, see ingest/internal/tempo), one row per
//     trace with the spans nested inside.
//
// Either way only the columns tailscope uses are read (projection), page by
// page, so a file far larger than memory streams through. Parquet keeps its
// index in a footer, so it needs random access: a plain file is read in
// place; stdin or a gzip/zstd-compressed input is first spilled to a
// temporary file (removed afterwards), which costs disk, not memory.
//
// Flat tables take the batch reader (parquet_batch.go: typed page data,
// row groups in parallel); the row path below, value by value through
// parquet.Value, remains for physical types the batch reader does not
// decode (INT96, nested leaves) and as the reference the batch reader is
// tested against.

// flatCol is one projected column of a flat Parquet table.
type flatCol struct {
	name  string
	idx   int
	spec  colSpec
	text  bool  // a byte array annotated as text (else ids may be binary)
	scale int64 // ns per unit of an integer timestamp column (1 when plain)
	// attr marks a column no span field takes: its values are the
	// span's attributes (span.Span.Attrs), keyed by the column's name.
	attr bool
}

// DecodeParquet reads a flat Parquet table: its columns are projected
// and typed once, then the rows go through the batch reader, or the row
// path below when the batch reader cannot decode a column.
func DecodeParquet(src *record.Source, pf *parquet.File) (err error) {
	src.SetDefaultHopBy("hop")
	tab := newFieldTable(src.Options())
	defer func() {
		if err == nil {
			tab.noteUnmapped(src)
		}
	}()
	cols, have := tab.flatColumns(pf)
	if !hasDurationColumn(have) {
		var names []string
		for _, p := range pf.Schema().Columns() {
			names = append(names, columnPath(p))
		}
		return fmt.Errorf("a flat Parquet table needs a duration column (duration_ns, duration_ms, …, or start and end); columns: %s; name one with %s", truncList(names, 30), src.Options().Names.Of(option.Map))
	}
	src.Expect(pf.NumRows(), true)
	if batchable(pf, cols) && !src.Options().Paths.Rows {
		return decodeFlatBatch(src, pf, cols)
	}
	return decodeFlatRows(src, pf, cols)
}

// flatColumns projects the table: the top-level, unrepeated columns a
// span field takes, and those no field takes that can be attributes.
// have says which span fields some column takes.
func (tab *fieldTable) flatColumns(pf *parquet.File) (cols []flatCol, have map[field]bool) {
	have = map[field]bool{}
	for _, path := range pf.Schema().Columns() {
		if len(path) != 1 {
			continue // nested columns are not part of a flat table
		}
		leaf, ok := pf.Schema().Lookup(path...)
		if !ok || leaf.MaxRepetitionLevel > 0 {
			continue
		}
		spec := tab.column(path[0])
		typ := leaf.Node.Type()
		attr := !spec.used()
		if attr && (leaf.MaxDefinitionLevel > 1 || !scalarKind(typ.Kind()) || !record.AttrKept(path[0])) {
			continue
		}
		c := flatCol{name: path[0], idx: leaf.ColumnIndex, spec: spec, scale: 1, attr: attr}
		c.annotate(typ)
		if !attr {
			have[spec.f] = true
		}
		cols = append(cols, c)
	}
	return cols, have
}

// annotate reads what the column's type says beyond its physical kind:
// whether a byte array is text, and the unit of a timestamp. The logical
// type is read first and the legacy converted type after it, which
// writers set alongside for older readers.
func (c *flatCol) annotate(typ parquet.Type) {
	if lt := typ.LogicalType(); lt != nil {
		switch t := lt.Value.(type) {
		case *format.TimestampType:
			switch t.Unit.Value.(type) {
			case *format.MilliSeconds:
				c.scale = 1e6
			case *format.MicroSeconds:
				c.scale = 1e3
			}
		case *format.StringType, *format.EnumType, *format.JsonType:
			c.text = true
		}
	}
	if ct := typ.ConvertedType(); ct != nil {
		switch *ct {
		case deprecated.UTF8, deprecated.Enum, deprecated.Json:
			c.text = true
		case deprecated.TimestampMillis:
			c.scale = 1e6
		case deprecated.TimestampMicros:
			c.scale = 1e3
		}
	}
}

// decodeFlatRows is the row path: value by value through parquet.Value,
// one row group after another.
func decodeFlatRows(src *record.Source, pf *parquet.File, cols []flatCol) error {
	rec := &flatRecord{intern: &record.Interner{}, units: &unitStats{}}
	defer func() { unitNotes(src, rec.units, true) }()
	var row int64
	var scratch []byte
	var attrs []span.Attr
	for _, rg := range pf.RowGroups() {
		chunks := rg.ColumnChunks()
		curs := make([]*pqguard.Cursor, len(cols))
		for i, c := range cols {
			curs[i] = pqguard.NewCursor(chunks[c.idx])
		}
		n := rg.NumRows()
		for r := int64(0); r < n; r++ {
			row++
			rec.reset()
			attrs = attrs[:0]
			var bad error
			for i, c := range cols {
				v, ok := curs[i].Next()
				if !ok {
					closeAll(curs)
					if curs[i].Err != nil {
						return fmt.Errorf("row %d, column %s: %v", row, c.name, curs[i].Err)
					}
					return fmt.Errorf("row %d, column %s: the column ends before the row group (corrupt file)", row, c.name)
				}
				if bad != nil || v.IsNull() {
					continue
				}
				if c.attr {
					if b := attrValue(&c, v, &scratch); len(b) > 0 && len(b) <= record.MaxAttrValue {
						attrs = append(attrs, span.Attr{Key: c.name, Value: attrString(rec.intern, b)})
					}
					continue
				}
				if err := rec.setParquet(&c, v, &scratch); err != nil {
					bad = fmt.Errorf("column %s: %v", c.name, err)
				}
			}
			if bad != nil {
				src.Skip(0, row, "bad value", bad.Error())
				continue
			}
			if reason, detail := rec.finish(); reason != "" {
				src.Skip(0, row, reason, detail)
				continue
			}
			if len(attrs) > 0 {
				rec.sp.Attrs = attrs
				if !src.Options().Borrowed {
					rec.sp.Attrs = slices.Clone(attrs) // the span keeps its own
				}
			}
			src.EmitSoft(&rec.sp, 0, row, rec.soft)
		}
		closeAll(curs)
	}
	return nil
}

func closeAll(cs []*pqguard.Cursor) {
	for _, c := range cs {
		c.Close()
	}
}

func columnPath(p []string) string {
	s := ""
	for i, x := range p {
		if i > 0 {
			s += "."
		}
		s += x
	}
	return s
}

func truncList(xs []string, n int) string {
	s := ""
	for i, x := range xs {
		if i == n {
			return s + fmt.Sprintf(", … (%d more)", len(xs)-n)
		}
		if i > 0 {
			s += ", "
		}
		s += x
	}
	return s
}

// setParquet stores one typed value. The columns tailscope itself writes
// (integer ns times and durations, codes, floats, bools) take a direct
// path; the rest go through the same text parsing as CSV so that every
// format accepts the same values. The typed setters below are shared with
// the batch reader (parquet_batch.go), so both paths give the same spans
// and the same errors.
func (r *flatRecord) setParquet(c *flatCol, v parquet.Value, scratch *[]byte) error {
	switch v.Kind() {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		b := v.ByteArray()
		if c.isID() {
			b = c.idText(b, (*scratch)[:0])
			*scratch = b
		}
		return r.setTyped(c.spec, b)
	case parquet.Boolean:
		return r.setParquetBool(c, v.Boolean(), scratch)
	case parquet.Int32:
		return r.setParquetInt(c, int64(v.Int32()), scratch)
	case parquet.Int64:
		return r.setParquetInt(c, v.Int64(), scratch)
	case parquet.Float:
		return r.setParquetFloat(c, float64(v.Float()), scratch)
	case parquet.Double:
		return r.setParquetFloat(c, v.Double(), scratch)
	}
	return r.unsupported(c.spec, fmt.Errorf("unsupported Parquet type %s", v.Kind()))
}

// unsupported is a value of a type a flat column cannot hold: it costs
// the span only in a required column.
func (r *flatRecord) unsupported(c colSpec, err error) error {
	switch {
	case required(c.f) || c.hopAttr:
		return err
	case c.f == fStart || c.f == fStartMs || c.f == fStartUs || c.f == fEnd:
		if r.badTime == nil {
			r.badTime = err
		}
	default:
		r.ignore(c.f, err)
	}
	return nil
}

// isID reports whether the column holds trace, span or parent ids.
func (c *flatCol) isID() bool {
	switch c.spec.f {
	case fTraceID, fSpanID, fParentID:
		return !c.spec.hopAttr
	}
	return false
}

// idText appends the text of an id to dst: raw id bytes (an unannotated
// byte array that is not printable) become hex, as every other format
// spells ids.
func (c *flatCol) idText(b, dst []byte) []byte {
	if !c.text && !printable(b) {
		return hex.AppendEncode(dst, b)
	}
	return append(dst, b...)
}

func (r *flatRecord) setParquetBool(c *flatCol, b bool, scratch *[]byte) error {
	if c.spec.f == fTimeout { // the flat schema's own column: no text round trip
		r.timeout = r.timeout || b
		return nil
	}
	return r.setText(c.spec, strconv.AppendBool((*scratch)[:0], b))
}

func (r *flatRecord) setParquetInt(c *flatCol, n int64, scratch *[]byte) error {
	if r.setTypedInt(c.spec.f, n, c.scale) {
		return nil
	}
	switch c.spec.f {
	case fCode: // what set does with the decimal text, without it
		r.sp.Code, r.codeSet, r.codeText, r.codeNamed = int(n), true, "", false
		r.errTimeout = r.errTimeout || n == 408 || n == 504
		return nil
	case fAttempt, fResendCount:
		if n >= 0 && n < math.MaxInt32 {
			if c.spec.f == fResendCount {
				n++
			}
			r.sp.Attempt, r.sp.AttemptSet = int(n), true
			return nil
		}
	case fParentID:
		if n == 0 {
			return nil
		}
	}
	return r.setText(c.spec, strconv.AppendInt((*scratch)[:0], n, 10))
}

func (r *flatRecord) setParquetFloat(c *flatCol, x float64, scratch *[]byte) error {
	switch c.spec.f {
	case fTimeoutMs: // as set() does with the text, without the round trip
		if !record.FiniteNs(x*1e6) || x < 0 {
			r.ignore(fTimeoutMs, fmt.Errorf("timeout_ms: want milliseconds ≥ 0, got %g", x))
			return nil
		}
		r.sp.TimeoutInForce = int64(math.Round(x * 1e6))
		return nil
	case fWeight:
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			r.ignore(fWeight, fmt.Errorf("weight: want a number ≥ 0, got %g", x))
			return nil
		}
		r.sp.Weight = x
		return nil
	}
	return r.setText(c.spec, strconv.AppendFloat((*scratch)[:0], x, 'f', -1, 64))
}

// printable reports whether an unannotated byte array is plain ASCII text.
// The choice depends only on the bytes, so a span id and the parent id
// naming it are always spelled alike.
func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// scalarKind reports whether a column of physical type k holds values an
// attribute can take: text, integers, floats and booleans.
func scalarKind(k parquet.Kind) bool {
	switch k {
	case parquet.Boolean, parquet.Int32, parquet.Int64, parquet.Float, parquet.Double, parquet.ByteArray, parquet.FixedLenByteArray:
		return true
	}
	return false
}

// attrValue is the text of an attribute value: byte arrays as they are
// (hex when binary, as ids are spelled), numbers in decimal, booleans as
// true or false. It may be written in scratch.
func attrValue(c *flatCol, v parquet.Value, scratch *[]byte) []byte {
	b := (*scratch)[:0]
	switch v.Kind() {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		b = c.idText(v.ByteArray(), b)
	case parquet.Boolean:
		b = strconv.AppendBool(b, v.Boolean())
	case parquet.Int32:
		b = strconv.AppendInt(b, int64(v.Int32()), 10)
	case parquet.Int64:
		b = strconv.AppendInt(b, v.Int64(), 10)
	case parquet.Float:
		b = strconv.AppendFloat(b, float64(v.Float()), 'g', -1, 32)
	case parquet.Double:
		b = strconv.AppendFloat(b, v.Double(), 'g', -1, 64)
	default:
		return nil
	}
	*scratch = b
	return b
}

// attrString is an attribute value as a string of its own: interned when
// short (values repeat), copied when long (see maxInternValue).
func attrString(in *record.Interner, b []byte) string {
	if len(b) <= record.MaxInternValue {
		return in.Get(b)
	}
	return record.ValidText(b)
}
