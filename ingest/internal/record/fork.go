package record

import (
	"github.com/tailscope/tailscope/span"
)

// Fork is a Sink that does most of its work on the reader's decoding
// goroutines. A reader that decodes in parallel asks it for one Branch per
// goroutine and gives each span that passes Emit's checks to
// the Branch of the goroutine that decoded it, in no particular order
// across goroutines; the spans a Branch asks to see again reach Ordered in
// input order, on the goroutine that called Read, instead of Sink.Span.
// Readers that decode on one goroutine ignore Fork and call Span for
// every span, so the Span of a Sink that is a Fork must still do the
// whole work.
type Fork interface {
	// Branch returns the consumer of one decoding goroutine. It is
	// called on the goroutine that called Read.
	Branch() Branch
	// Ordered receives, in input order, the spans a Branch.Take asked to
	// see again. Like Span's, the span is valid only during the call.
	Ordered(sp *span.Span)
}

// Branch consumes the spans of one decoding goroutine.
type Branch interface {
	// Take consumes a span that passed the reader's checks (its hop is
	// derived, its weight and outcome are set) and reports whether
	// Ordered must see it too. The span, and with Options.Borrowed its id
	// strings, are valid only during the call. Its Service and Name may
	// be empty when they do not name the hop, and its SpanID, ParentID,
	// Kind and Peer when the reader reads them only for the spans
	// that go on to Ordered (Parquet's fast rows): a Branch decides from
	// the hop, the times, the outcome and the trace id.
	Take(sp *span.Span) (again bool)
	// Close is called once after the branch's last Take, on the goroutine
	// that called Read, before Read moves on to the next input.
	Close()
}

// AttrIgnorer is a Branch that can tell a reader which attribute values
// its Take no longer reads, so that the reader need not decode, spell and
// hand over values no one will look at (a column with a distinct value a
// row, such as a start time beside the start, costs the Parquet reader
// more than its hop and duration together).
//
// Reading stays free of the Branch's decisions: a reader may leave an
// ignored attribute off a span it gives Take and on no other span — the
// spans Take asks to see again, and those a reader builds for Take
// through its record path, carry every attribute (unless the Fork is an
// OrderedKeys that does not read it) — so what a Branch accumulates, and
// what Ordered reads, is the same whether a reader asks or not, and
// whatever order it reads in.
type AttrIgnorer interface {
	// AttrIgnored reports whether Take ignores the value of attribute key
	// on every later span of hop it takes. Once true it stays true for
	// the Branch's life, so a reader may remember it; it is called on
	// the Branch's decoding goroutine, between Takes.
	AttrIgnored(hop, key string) bool
}

// OrderedKeys is a Fork whose Ordered reads only some attribute keys of
// the spans it is given (the analysis's trace sample keeps only those
// that map a hop to its endpoint). With it, a reader may leave off a
// span that goes on to Ordered, once its Branch's Take is done with it,
// every attribute whose key OrderedReads rejects: a reader that holds
// such spans until Ordered's turn (the Parquet reader's chunks) holds
// only what Ordered reads. And it may leave such an attribute off a span
// before Take too, when the span's hop is one its Branch ignores that
// key on (AttrIgnorer): so a column that every hop of a stretch ignores
// need not be read at all there. Nothing either reads changes: Take
// still sees every value it does not ignore, a span whose hop is derived
// (none in its hop column) every value, and Ordered every value of the
// keys it reads.
type OrderedKeys interface {
	// OrderedReads reports whether Ordered reads attribute key. It is
	// called once per key, on the goroutine that called Read or a
	// decoding goroutine, and must not change during a read.
	OrderedReads(key string) bool
}
