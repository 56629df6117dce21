// Package pqguard opens Parquet input for the readers that decode it (flat
// Parquet and Tempo blocks) behind the checks parquet-go does not make: the
// footer and every page header are read and bounded before the library
// decodes anything (a corrupt length would otherwise make it allocate
// gigabytes or panic), and Cursor reads a column chunk page by page,
// giving up on a page reader that makes no progress.
//
// It is apart from ingest/internal/record so that the record model, and
// the JSON readers built on it, do not link parquet-go.
package pqguard
