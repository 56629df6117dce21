// Package pool is the one worker pool of ingest's parallel readers
// (Ordered): the flat JSON-lines, OTLP JSON-lines, flat Parquet and Tempo
// readers decode on every core through it and still hand spans, skips and
// the first error on in input order, as a sequential read would. It also
// sets the readers' shared sizes: how many goroutines decode (Workers) and
// how large a block of lines is (BlockSize).
//
// It is apart from ingest/internal/record because it is scheduling, not
// the record model: it knows neither spans nor sources, only tasks in
// order and their outputs.
package pool
