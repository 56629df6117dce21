package record

import "github.com/tailscope/tailscope/span"

// Event is a record of a Batch that does not become a span (a skip, or a
// span a filter left out), or the values a kept span lost. It is placed
// before span Before of its batch, so that Deliver reports it where the
// sequential reader would have: errors and counts come out in input order
// whichever worker decoded the batch.
type Event struct {
	Before int
	At     int64 // the record's line (Batch.Rows false) or row (true)
	Reason string
	Detail string
	ID     uint64    // a filtered span's key (FilteredKey)
	Soft   []SoftErr // values the span before Before lost (or, Taken, the span taken)
	Taken  bool      // Soft: the span was taken by a Branch (used whatever Emit says)
}

// Batch is a run of consecutive records decoded off the reading goroutine
// (a block of JSON lines, a chunk of Parquet rows): the parallel readers
// fill one per unit of work and hand it to Deliver in input order.
type Batch struct {
	Spans  []span.Span
	At     []int64 // line or row of each span
	Events []Event
	Used   int64 // spans a Branch took on the worker (Source.Fork)
	// Rows says At holds 1-based row numbers (columnar formats) rather
	// than line numbers: positions print as "row N" instead of "line N".
	Rows bool
}

// Reset empties the batch for reuse, keeping its capacity.
func (b *Batch) Reset() {
	b.Spans, b.At, b.Events, b.Used = b.Spans[:0], b.At[:0], b.Events[:0], 0
}

// Reject places a record that became no span before the batch's next
// span: a span a filter left out, counted by its key (FilteredKey), or a
// skipped record with its reason and detail.
func (b *Batch) Reject(sp *span.Span, at int64, reason, detail string) {
	e := Event{Before: len(b.Spans), At: at, Reason: reason, Detail: detail}
	if IsFilter(reason) {
		e.ID, e.Detail = FilteredKey(sp), ""
	}
	b.Events = append(b.Events, e)
}

// pos is an At value as Source's (line, index) pair.
func (b *Batch) pos(at int64) (line, index int64) {
	if b.Rows {
		return 0, at
	}
	return at, 0
}

// Deliver hands a decoded batch's spans and events on, in input order.
// With a Fork the batch's spans were checked and taken by a Branch on the
// worker already: they are counted here, and those the Branch asked to
// see again go to Fork.Ordered.
func (s *Source) Deliver(b *Batch) {
	ev := b.Events
	fork := s.fork
	used := false // whether the last span emitted was used
	event := func(e *Event) {
		line, index := b.pos(e.At)
		switch {
		case e.Soft != nil:
			if e.Taken || used {
				s.st.Ignore(s.Name, line, index, e.Soft, s.opt.MaxErrors)
			}
		case IsFilter(e.Reason):
			s.st.Filter(e.Reason, e.ID)
		default:
			s.Skip(line, index, e.Reason, e.Detail)
		}
	}
	for i := range b.Spans {
		for len(ev) > 0 && ev[0].Before <= i {
			event(&ev[0])
			ev = ev[1:]
		}
		if fork != nil {
			fork.Ordered(&b.Spans[i])
		} else {
			line, index := b.pos(b.At[i])
			used = s.Emit(&b.Spans[i], line, index)
		}
	}
	s.st.Read += b.Used
	s.st.Used += b.Used
	for i := range ev {
		event(&ev[i])
	}
}
