package record

import "github.com/tailscope/tailscope/span"

// Sink is the one consumer of a read: every span the reader keeps goes to
// Span, in input order, on the goroutine that called Read.
//
// What a consumer can do beyond taking spans is optional, and a reader
// discovers it by type assertion on the Sink: ProgressSink (bytes read),
// FileSink (which file the next spans come from), ExpectSink (how many
// spans are coming) and Fork (do the per-span work on the decoding
// goroutines). They are optional because most consumers need none of
// them — a sink that collects or counts spans, a converter, a test —, and
// because offering one has a cost the reader pays only for the consumers
// that ask: progress wraps every input in a counting reader and sizes the
// files up front, the expected-count hint makes the JSON-lines reader
// measure the lines it sniffed, and a Fork moves the work onto the
// workers. One interface with every method would make each consumer
// write no-op methods and each reader pay for them; a callback field per
// capability in Options, as before, hid the consumer's shape from the
// code that reads (only the caller that filled them knew they belonged
// together).
//
// The hot path is the same as a callback's: one call per span kept on
// the sequential readers, and on the parallel ones none per span on the
// ordered goroutine beyond Fork.Ordered for the spans a Branch hands back.
type Sink interface {
	// Span receives a span kept (validated, its hop named, past the
	// filters). The span, and with Options.Borrowed its id strings, are
	// valid only during the call: a sink copies what it keeps.
	Span(sp *span.Span)
}

// SinkFunc is a Sink that is one function and offers nothing else.
type SinkFunc func(sp *span.Span)

// Span calls f.
func (f SinkFunc) Span(sp *span.Span) { f(sp) }

// ProgressSink is a Sink that shows progress. Progress is called as input
// is consumed with the bytes read so far and the total size of the inputs
// (0 when unknown, e.g. stdin); it is called often and must be cheap, and
// it may run on a reading goroutine other than the one calling Span.
type ProgressSink interface {
	Progress(read, total int64)
}

// FileSink is a Sink that wants to know which input its spans come from.
// File is called before the spans of each file are delivered, with its
// index in Stats.Files (a partial summary records which file each sampled
// span came from).
type FileSink interface {
	File(i int)
}

// ExpectSink is a Sink that can use the number of spans an input holds.
// Expect is called before the input's first span, by the readers that know
// it (a Parquet file's row count, exact) or can estimate it cheaply (a
// plain JSON-lines file's size over the mean length of its first lines),
// on the goroutine that calls Span and Fork.Ordered. A sink may only use
// it as a hint (analyze.Accum.Expect).
type ExpectSink interface {
	Expect(spans int64, exact bool)
}
