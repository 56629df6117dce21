package export

import (
	"io"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/tailscope/tailscope/span"
)

// parquetRow is the flat schema as Parquet columns. Optional columns hold
// NULL where the span had nothing (no parent, no code…), which is what SQL
// users expect; strings repeated across spans are dictionary-encoded.
type parquetRow struct {
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

// ParquetRowGroup is the number of spans per row group: large enough for
// fast column scans, small enough that a writer buffers tens of MB, not
// the whole input.
const ParquetRowGroup = 256 << 10

// Parquet writes the flat schema to a zstd-compressed Parquet file.
type Parquet struct {
	w    *parquet.GenericWriter[parquetRow]
	rows []parquetRow
	att  []int32 // the attempts of rows, which their Attempt points at
}

// NewParquet returns a Parquet writer to w.
func NewParquet(w io.Writer) *Parquet {
	return &Parquet{
		w: parquet.NewGenericWriter[parquetRow](w,
			parquet.Compression(&zstd.Codec{}),
			parquet.MaxRowsPerRowGroup(ParquetRowGroup),
			parquet.CreatedBy("tailscope", "", "")),
		rows: make([]parquetRow, 0, 4096),
		att:  make([]int32, 4096),
	}
}

func (p *Parquet) Write(sp *span.Span) error {
	w := sp.Weight
	if w == 0 {
		w = 1
	}
	p.rows = append(p.rows, parquetRow{
		TraceID: sp.TraceID, SpanID: sp.SpanID, ParentID: sp.ParentID,
		Service: sp.Service, Name: sp.Name, Kind: sp.Kind, Hop: sp.Hop,
		Start: sp.Start, DurationNs: sp.Duration, Status: sp.Status.String(), Timeout: sp.Timeout,
		Code: int32(sp.Code), TimeoutMs: timeoutMs(sp.TimeoutInForce), Weight: w,
		Peer: sp.Peer, CodeText: sp.CodeText,
	})
	if sp.AttemptSet || sp.Attempt != 0 {
		i := len(p.rows) - 1
		p.att[i] = int32(sp.Attempt)
		p.rows[i].Attempt = &p.att[i]
	}
	if len(p.rows) == cap(p.rows) {
		return p.flush()
	}
	return nil
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
