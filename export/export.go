// Package export writes spans in tailscope's flat span schema, so that
// what tailscope read from any format (OTLP, Jaeger, Zipkin, CSV, Tempo
// blocks…) can be taken further in DuckDB, pandas or Polars, and read back
// by tailscope itself with the same result.
//
// The schema is one record per span with these columns (Columns): trace_id,
// span_id, parent_id, service, name, kind, hop, start (unix ns), duration_ns,
// status ("ok", "error" or "unset"), timeout, code, attempt (written
// whenever the log gave one, 0 included: a 0-based first attempt),
// timeout_ms (the per-attempt timeout in force, ms), weight, peer and
// code_text (an error kind that is not a numeric code: ECONNRESET). Every writer streams:
// JSON lines record by record, Parquet by row groups, Arrow by record
// batches; none holds the whole input.
//
// The package only encodes: it must not filter, derive or compute anything
// about the spans it is given (the reader has done that), and it must not
// know about input formats.
package export

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/tailscope/tailscope/span"
)

// Columns are the flat schema's column names, in the order written.
var Columns = []string{
	"trace_id", "span_id", "parent_id", "service", "name", "kind", "hop",
	"start", "duration_ns", "status", "timeout", "code", "attempt", "timeout_ms", "weight", "peer", "code_text",
}

// Formats are the output formats, as --to names them.
var Formats = []string{"jsonl", "parquet", "arrow"}

// Writer receives spans one at a time. Close flushes what is buffered and
// finishes the file (Parquet and Arrow footers); it does not close the
// underlying io.Writer. A Writer is not safe for concurrent use.
type Writer interface {
	Write(sp *span.Span) error
	Close() error
}

// CarriesAttributes reports whether format writes span attributes
// (span.Span.Attrs). Parquet's schema has no column for them yet: a
// caller asking for attributes in Parquet must refuse rather than write
// a file without them.
func CarriesAttributes(format string) bool { return format == "jsonl" || format == "arrow" }

// New returns a writer of format to w.
func New(format string, w io.Writer) (Writer, error) {
	switch format {
	case "jsonl":
		return NewJSONL(w), nil
	case "parquet":
		return NewParquet(w), nil
	case "arrow":
		return NewArrow(w)
	}
	return nil, fmt.Errorf("unknown output format %q (want %s)", format, strings.Join(Formats, ", "))
}

// FormatOf names the format a file name asks for by its extension
// (.jsonl/.ndjson/.json, .parquet/.pq, .arrow/.feather/.ipc), or "".
func FormatOf(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson", ".json":
		return "jsonl"
	case ".parquet", ".pq":
		return "parquet"
	case ".arrow", ".feather", ".ipc", ".arrows":
		return "arrow"
	}
	return ""
}

// timeoutMs renders the timeout in force in ms, exact to the ns when read
// back (ns/1e6 and back round-trips below 2^53 ns, about 104 days).
func timeoutMs(ns int64) float64 { return float64(ns) / 1e6 }
