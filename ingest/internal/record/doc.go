// Package record is the core every ingest decoder writes into: the read
// Options, the Stats a read counts, the positioned RecordError, and Source,
// one opened input whose Emit validates a span, derives its hop, applies
// the filters and hands it on. It also declares the parallel consumer
// protocol (Fork, Branch) that the multi-core readers feed, and the pieces
// more than one format family shares: the string interner and attribute
// set, status-code words, the trace-format span record (TraceRecord, used by trace JSON
// and Tempo blocks), the Parquet random-access spill and footer/page
// guards (flat Parquet and Tempo), and the temporary-file registry.
//
// It is separate so that the format families (ingest/internal/flat,
// tracejson, tempo) depend on it and never on each other or on the ingest
// face, which imports them all: the import graph stays one-way.
package record
