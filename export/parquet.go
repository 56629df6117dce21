package export

import (
	"io"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/tailscope/tailscope/span"
)

// ParquetRow is the flat schema as Parquet columns (exported so that a
// writer of more columns, the bench's wide file, embeds it: parquet-go
// flattens an embedded struct's columns into its own). Optional columns hold
// NULL where the span had nothing (no parent, no code…), which is what SQL
// users expect; strings repeated across spans are dictionary-encoded.
type ParquetRow struct {
	TraceID    string `parquet:"trace_id,optional"`
	SpanID     string `parquet:"span_id,optional"`
	ParentID   string `parquet:"parent_id,optional"`
	Service    string `parquet:"service,optional,dict"`
	Name       string `parquet:"name,optional,dict"`
	Kind       string `parquet:"kind,optional,dict"`
	Hop        string `parquet:"hop,dict"`
	Start      int64  `parquet:"start,optional"`
	DurationNs int64  `parquet:"duration_ns"`
	Status     string `parquet:"status,dict"`
	Timeout    bool   `parquet:"timeout"`
	Code       int32  `parquet:"code,optional"`
	// Attempt is a pointer so that an explicit attempt 0 (a 0-based first
	// attempt) is written as 0, not as NULL; it points into Parquet.att.
	Attempt   *int32  `parquet:"attempt,optional"`
	TimeoutMs float64 `parquet:"timeout_ms,optional"`
	Weight    float64 `parquet:"weight"`
	Peer      string  `parquet:"peer,optional,dict"`
	CodeText  string  `parquet:"code_text,optional,dict"`
}

// parquetSchema is ParquetRow's schema under the root name the files have
// always carried (the type's name before it was exported): exports stay
// byte for byte what they were.
var parquetSchema = parquet.NewSchema("parquetRow", parquet.SchemaOf(ParquetRow{}))

// ParquetRowGroup is the number of spans per row group: large enough for
// fast column scans, small enough that a writer buffers tens of MB, not
// the whole input.
const ParquetRowGroup = 256 << 10

// Parquet writes the flat schema to a zstd-compressed Parquet file.
type Parquet struct {
	w    *parquet.GenericWriter[ParquetRow]
	rows []ParquetRow
	att  []int32 // the attempts of rows, which their Attempt points at
}

// NewParquet returns a Parquet writer to w.
func NewParquet(w io.Writer) *Parquet {
	return &Parquet{
		w: parquet.NewGenericWriter[ParquetRow](w, parquetSchema,
			parquet.Compression(&zstd.Codec{}),
			parquet.MaxRowsPerRowGroup(ParquetRowGroup),
			parquet.CreatedBy("tailscope", "", "")),
		rows: make([]ParquetRow, 0, 4096),
		att:  make([]int32, 4096),
	}
}

func (p *Parquet) Write(sp *span.Span) error {
	i := len(p.rows)
	p.rows = append(p.rows, ParquetRow{})
	p.rows[i].Fill(sp, &p.att[i])
	if len(p.rows) == cap(p.rows) {
		return p.flush()
	}
	return nil
}

// Fill sets r to sp's columns. An attempt the span sets is kept in *att,
// which r.Attempt then points at, so that an explicit attempt 0 (a
// 0-based first attempt) is written as 0, not as NULL.
func (r *ParquetRow) Fill(sp *span.Span, att *int32) {
	w := sp.Weight
	if w == 0 {
		w = 1
	}
	*r = ParquetRow{
		TraceID: sp.TraceID, SpanID: sp.SpanID, ParentID: sp.ParentID,
		Service: sp.Service, Name: sp.Name, Kind: sp.Kind, Hop: sp.Hop,
		Start: sp.Start, DurationNs: sp.Duration, Status: sp.Status.String(), Timeout: sp.Timeout,
		Code: int32(sp.Code), TimeoutMs: timeoutMs(sp.TimeoutInForce), Weight: w,
		Peer: sp.Peer, CodeText: sp.CodeText,
	}
	if sp.AttemptSet || sp.Attempt != 0 {
		*att = int32(sp.Attempt)
		r.Attempt = att
	}
}

func (p *Parquet) flush() error {
	if len(p.rows) == 0 {
		return nil
	}
	_, err := p.w.Write(p.rows)
	clear(p.rows)
	p.rows = p.rows[:0]
	return err
}

// Close writes the buffered rows and the footer.
func (p *Parquet) Close() error {
	if err := p.flush(); err != nil {
		return err
	}
	return p.w.Close()
}
