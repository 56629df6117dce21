// Package spill gives the readers that need random access (Parquet) an
// input they can seek in: a plain file as it is, a stream (stdin, a
// decompressed input) copied to a temporary file, bounded by --max-spill.
// It also keeps the process's registry of temporary files (TempFiles), so
// that a program ending on a signal removes every spill it made.
//
// It is apart from ingest/internal/record because it is file-system
// bookkeeping, not the record model.
package spill
