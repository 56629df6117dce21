// Package record is the record model every ingest decoder writes into:
// the read Options, the Stats a read counts, the positioned RecordError,
// and Source, one opened input whose Emit validates a span, derives its
// hop, applies the filters and hands it on. It also declares the parallel
// consumer protocol (Fork, Branch) that the multi-core readers feed and
// the Batch they deliver in input order, and the parts of a record more
// than one format family shares: the string interner and attribute set,
// status-code words, value parsing, sanitizing, and the trace-format span
// record (TraceRecord, used by trace JSON and Tempo blocks).
//
// What the readers share that is not the model lives beside it: the JSON
// scanner (jsonscan), the ordered worker pool (pool), the spill to a
// temporary file (spill) and the Parquet guards (pqguard). record imports
// none of them and no third-party decoder, so a reader links only what
// it uses.
//
// It is separate so that the format families (ingest/internal/flat,
// tracejson, tempo) depend on it and never on each other or on the ingest
// face, which imports them all: the import graph stays one-way.
package record
