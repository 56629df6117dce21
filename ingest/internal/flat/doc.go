// Package flat reads the flat span formats, one record per span under the
// canonical field names (flat.go: the schema, --map, the record a decoder
// fills; values.go: durations, times and numbers): JSON lines
// (jsonobject.go: the general object decoder; flatfast.go: the one-pass
// line reader; jsonl.go: blocks of lines decoded on all cores), CSV,
// Arrow IPC (arrow.go, with arrowcheck.go's guards), and flat Parquet
// (parquet.go: the row path; parquet_batch.go, parquet_apply.go,
// parquet_cursor.go: the column-batch reader on all cores;
// parquet_fast.go: fast rows for a Fork). units.go probes the time units
// of unlabelled numbers.
//
// It is separate from the trace formats (ingest/internal/tracejson,
// tempo) because its model is a table, not a nested document: every
// reader here maps columns or keys to one record's fields. What it shares
// with them lives in ingest/internal/record.
package flat
