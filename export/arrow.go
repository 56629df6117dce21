package export

import (
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/tailscope/tailscope/span"
)

// arrowSchema is the flat schema as Arrow fields: the same names and
// nullability as the Parquet columns.
var arrowSchema = arrow.NewSchema([]arrow.Field{
	{Name: "trace_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "span_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "parent_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "service", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "hop", Type: arrow.BinaryTypes.String},
	{Name: "start", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "duration_ns", Type: arrow.PrimitiveTypes.Int64},
	{Name: "status", Type: arrow.BinaryTypes.String},
	{Name: "timeout", Type: arrow.FixedWidthTypes.Boolean},
	{Name: "code", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "attempt", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "timeout_ms", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "weight", Type: arrow.PrimitiveTypes.Float64},
	{Name: "peer", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "code_text", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "attributes", Type: attrsType, Nullable: true},
}, nil)

// attrsType holds a span's attributes (span.Span.Attrs) in order, as
// key/value pairs: a list rather than a map, which would promise unique
// keys.
var attrsType = arrow.ListOf(arrow.StructOf(
	arrow.Field{Name: "key", Type: arrow.BinaryTypes.String},
	arrow.Field{Name: "value", Type: arrow.BinaryTypes.String},
))

// ArrowBatch is the number of spans per record batch.
const ArrowBatch = 64 << 10

// Arrow writes the flat schema as an Arrow IPC file (the "Feather v2"
// format pandas, Polars and DuckDB open directly).
type Arrow struct {
	fw *ipc.FileWriter
	b  *array.RecordBuilder
	n  int
}

// NewArrow returns an Arrow IPC file writer to w.
func NewArrow(w io.Writer) (*Arrow, error) {
	mem := memory.NewGoAllocator()
	fw, err := ipc.NewFileWriter(w, ipc.WithSchema(arrowSchema), ipc.WithAllocator(mem))
	if err != nil {
		return nil, err
	}
	return &Arrow{fw: fw, b: array.NewRecordBuilder(mem, arrowSchema)}, nil
}

func (a *Arrow) Write(sp *span.Span) error {
	f := a.b.Fields()
	optStr := func(i int, s string) {
		if s == "" {
			f[i].AppendNull()
		} else {
			f[i].(*array.StringBuilder).Append(s)
		}
	}
	optStr(0, sp.TraceID)
	optStr(1, sp.SpanID)
	optStr(2, sp.ParentID)
	optStr(3, sp.Service)
	optStr(4, sp.Name)
	optStr(5, sp.Kind)
	f[6].(*array.StringBuilder).Append(sp.Hop)
	if sp.Start != 0 {
		f[7].(*array.Int64Builder).Append(sp.Start)
	} else {
		f[7].AppendNull()
	}
	f[8].(*array.Int64Builder).Append(sp.Duration)
	f[9].(*array.StringBuilder).Append(sp.Status.String())
	f[10].(*array.BooleanBuilder).Append(sp.Timeout)
	optInt := func(i int, v int) {
		if v == 0 {
			f[i].AppendNull()
		} else {
			f[i].(*array.Int32Builder).Append(int32(v))
		}
	}
	optInt(11, sp.Code)
	if sp.AttemptSet || sp.Attempt != 0 { // an explicit attempt 0 is kept
		f[12].(*array.Int32Builder).Append(int32(sp.Attempt))
	} else {
		f[12].AppendNull()
	}
	if sp.TimeoutInForce != 0 {
		f[13].(*array.Float64Builder).Append(timeoutMs(sp.TimeoutInForce))
	} else {
		f[13].AppendNull()
	}
	w := sp.Weight
	if w == 0 {
		w = 1
	}
	f[14].(*array.Float64Builder).Append(w)
	optStr(15, sp.Peer)
	optStr(16, sp.CodeText)
	if lb := f[17].(*array.ListBuilder); len(sp.Attrs) == 0 {
		lb.AppendNull()
	} else {
		lb.Append(true)
		sb := lb.ValueBuilder().(*array.StructBuilder)
		keys, vals := sb.FieldBuilder(0).(*array.StringBuilder), sb.FieldBuilder(1).(*array.StringBuilder)
		for _, at := range sp.Attrs {
			sb.Append(true)
			keys.Append(at.Key)
			vals.Append(at.Value)
		}
	}
	a.n++
	if a.n == ArrowBatch {
		return a.flush()
	}
	return nil
}

func (a *Arrow) flush() error {
	if a.n == 0 {
		return nil
	}
	rec := a.b.NewRecordBatch()
	defer rec.Release()
	a.n = 0
	return a.fw.Write(rec)
}

// Close writes the last batch and the file footer.
func (a *Arrow) Close() error {
	err := a.flush()
	a.b.Release()
	if cerr := a.fw.Close(); err == nil {
		err = cerr
	}
	return err
}
