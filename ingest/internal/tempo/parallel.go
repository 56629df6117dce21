package tempo

import (
	"errors"
	"fmt"
	"slices"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/pool"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// A Tempo block's row groups are decoded in parallel, as a flat table's
// are (ingest/internal/flat/parquet_batch.go): each worker has a tempoReader of its own (its
// column cursors, attribute lists, interners and buffers), takes the next
// row group and hands its spans and skips over in chunks; the goroutine
// that called Read delivers the chunks in row-group order, so spans,
// skips, their positions and the first error are those of the sequential
// reader. A row group's spans are numbered from 1 by its worker, which
// does not know how many spans the row groups before it hold; the
// delivering goroutine adds that count. Memory is bounded by the pages
// being read and tempoChunksPerWorker chunks of tempoChunkSpans spans per
// worker, whatever the row group size.

// tempoChunkSpans is the number of spans (and skips) handed over at
// once: enough that the hand-off costs nothing per span, few enough
// (about 1 MB) to stay in cache.
const tempoChunkSpans = 4096

// tempoChunksPerWorker bounds the chunks a worker has in flight.
const tempoChunksPerWorker = 3

// errStopped ends a worker's row group once the delivering goroutine
// stopped (after an error in an earlier row group).
var errStopped = errors.New("stopped")

// tempoChunk is a run of a row group's spans and skips, in order, each at
// its index in the row group (the delivering goroutine adds the spans of
// the row groups before it).
type tempoChunk struct {
	record.Batch
	attrs []span.Attr // the spans' Attrs (Options.Borrowed: they alias it)
	spans int64       // last chunk of a row group: the spans it numbered
	last  bool
	err   error // last chunk: the row group's error
	owner chan *tempoChunk
}

// chunkOut is a worker's side of the hand-off.
type chunkOut struct {
	free   chan *tempoChunk
	out    chan<- *tempoChunk
	stop   <-chan struct{}
	ch     *tempoChunk
	borrow bool
}

// chunk returns the chunk being filled, waiting for a free one when
// needed; nil once the delivering goroutine stopped.
func (o *chunkOut) chunk() *tempoChunk {
	if o.ch == nil {
		select {
		case o.ch = <-o.free:
		case <-o.stop:
			return nil
		}
	}
	return o.ch
}

// send hands the chunk being filled over.
func (o *chunkOut) send() bool {
	select {
	case o.out <- o.ch:
		o.ch = nil
		return true
	case <-o.stop:
		return false
	}
}

// added hands the chunk being filled over once it is full.
func (o *chunkOut) added() bool {
	if len(o.ch.Spans)+len(o.ch.Events) >= tempoChunkSpans {
		return o.send()
	}
	return true
}

// skip records a span slot that does not give a span.
func (t *tempoReader) skip(index int64, reason, detail string) bool {
	if t.out == nil {
		t.src.Skip(0, index, reason, detail)
		return true
	}
	ch := t.out.chunk()
	if ch == nil {
		return false
	}
	ch.Events = append(ch.Events, record.Event{Before: len(ch.Spans), At: index, Reason: reason, Detail: detail})
	return t.out.added()
}

// emit hands a span on. On one goroutine it goes to Source.EmitSoft. In
// parallel, with a Fork (the analysis), the worker checks it and hands it
// to its own Branch, as the flat readers' workers do, so that the
// per-span accumulation runs on every core; only the spans the Branch asks
// to see again in order, and the skips, go to the delivering goroutine.
// Without a Fork the span waits in the chunk for Source.Emit there. Its
// strings are the reader's own (interned or allocated), but its Attrs
// (with Options.Borrowed) and soft errors are buffers reused for the next
// span, so a span kept in the chunk gets copies.
func (t *tempoReader) emit(rec *record.TraceRecord, index int64) bool {
	if t.out == nil {
		t.src.EmitSoft(&rec.Span, 0, index, rec.Soft)
		return true
	}
	ch := t.out.chunk()
	if ch == nil {
		return false
	}
	if t.branch != nil {
		if reason, detail := t.src.Accept(&rec.Span); reason != "" {
			ch.Reject(&rec.Span, index, reason, detail)
			return t.out.added()
		}
		ch.Used++
		if len(rec.Soft) > 0 {
			ch.Events = append(ch.Events, record.Event{Before: len(ch.Spans), At: index, Soft: slices.Clone(rec.Soft), Taken: true})
		}
		if !t.branch.Take(&rec.Span) {
			return t.out.added()
		}
	}
	sp := rec.Span
	if t.out.borrow && len(sp.Attrs) > 0 {
		// Earlier spans of the chunk keep the backing array they were
		// given if this append moves it: it is only appended to until
		// the chunk is delivered.
		n := len(ch.attrs)
		ch.attrs = append(ch.attrs, sp.Attrs...)
		sp.Attrs = ch.attrs[n:len(ch.attrs):len(ch.attrs)]
	}
	ch.Spans = append(ch.Spans, sp)
	ch.At = append(ch.At, index)
	if t.branch == nil && len(rec.Soft) > 0 {
		ch.Events = append(ch.Events, record.Event{Before: len(ch.Spans), At: index, Soft: slices.Clone(rec.Soft)})
	}
	return t.out.added()
}

// decodeParallel reads the row groups of pf on `workers` goroutines;
// first is the reader Decode planned, the first worker's.
func decodeParallel(src *record.Source, pf *parquet.File, l *tempoLayout, meta *tempoMeta, first *tempoReader, workers int) error {
	rgs := pf.RowGroups()
	readers := []*tempoReader{first}
	for len(readers) < workers {
		t, err := newReader(src, pf.Schema(), l, meta)
		if err != nil {
			return err
		}
		readers = append(readers, t)
	}
	var branches []record.Branch
	for _, t := range readers {
		o := &chunkOut{free: make(chan *tempoChunk, tempoChunksPerWorker), borrow: src.Options().Borrowed}
		for range tempoChunksPerWorker {
			ch := &tempoChunk{owner: o.free}
			ch.Rows = true
			ch.Spans = make([]span.Span, 0, tempoChunkSpans)
			o.free <- ch
		}
		t.out = o
		if fork := src.Fork(); fork != nil {
			t.branch = fork.Branch()
			branches = append(branches, t.branch)
		}
	}
	var base int64
	err := pool.Ordered(workers, workers+1, tempoChunksPerWorker, pool.Tasks(len(rgs)),
		func(w, g int, out chan<- *tempoChunk, stop <-chan struct{}) bool {
			return readers[w].parallelRowGroup(rgs[g], g, out, stop)
		},
		func(ch *tempoChunk) error {
			for i := range ch.At {
				ch.At[i] += base
			}
			for i := range ch.Events {
				ch.Events[i].At += base
			}
			src.Deliver(&ch.Batch)
			var err error
			if ch.last {
				base += ch.spans
				err = ch.err
			}
			clear(ch.Spans) // drop the strings the spans held
			ch.Reset()
			ch.attrs, ch.spans, ch.last, ch.err = ch.attrs[:0], 0, false, nil
			ch.owner <- ch
			return err
		})
	for _, br := range branches {
		br.Close()
	}
	return err
}

// parallelRowGroup decodes row group g (0-based) into chunks on out, the
// last of which carries its span count and error. It reports false when
// the delivering goroutine stopped.
func (t *tempoReader) parallelRowGroup(rg parquet.RowGroup, g int, out chan<- *tempoChunk, stop <-chan struct{}) (ok bool) {
	o := t.out
	o.out, o.stop = out, stop
	var index int64
	finish := func(err error) bool {
		if o.chunk() == nil {
			return false
		}
		o.ch.last, o.ch.spans, o.ch.err = true, index, err
		return o.send()
	}
	// A panic of the Parquet library on a corrupt page ends the read
	// with the error the Parquet decoder makes of it (record.NoPanic) after
	// the spans before it, as on one goroutine.
	defer func() {
		if r := recover(); r != nil {
			finish(fmt.Errorf("corrupt Parquet file: %v", r))
			ok = false
		}
	}()
	err := t.rowGroup(rg, &index)
	switch {
	case err == errStopped:
		return false
	case err != nil:
		finish(fmt.Errorf("row group %d: %v", g+1, err))
		return false
	}
	return finish(nil)
}
