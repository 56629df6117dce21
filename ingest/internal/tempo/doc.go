// Package tempo reads Grafana Tempo blocks (vParquet … vParquet5): the
// data.parquet of a block, one row per trace with the spans nested
// resource → scope → span (layout.go: which schema, its columns; attrs.go:
// the generic and dedicated attribute columns and meta.json; read.go: row
// groups to spans), and which files of a block folder are Tempo's
// bookkeeping rather than spans (block.go, used by the ingest face's
// directory walk).
//
// It is separate because it is its own columnar world: nested repeated
// columns read in lockstep, not the flat table of ingest/internal/flat. It
// shares only the core (ingest/internal/record): the Parquet guards, the
// trace-format span record and its attribute rules, which keep a span
// read from Tempo the same as the span read from OTLP.
package tempo
