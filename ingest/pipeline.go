package ingest

import (
	"fmt"

	"github.com/tailscope/tailscope/span"
)

// A decoder that cannot split its input (a Parquet row group is read by
// sequential column cursors) still gains a core by pipelining: it decodes
// in its own goroutine into blocks of spans, and the calling goroutine
// validates, filters and hands them on (Source.Emit, and whatever the
// caller's emit does) in the same order. Memory is bounded by
// pipelineBlocks blocks of rowsPerBlock spans.

const (
	rowsPerBlock   = 4096
	pipelineBlocks = 4
)

// rowSink is the decoding side of a pipeline: Emit and Skip in the shape
// of Source's, positioned by record index.
type rowSink struct {
	cur  *block
	out  chan<- *block
	free <-chan *block
	stop <-chan struct{}
	done bool
}

func (s *rowSink) emit(sp *span.Span, index int64) {
	s.cur.spans = append(s.cur.spans, *sp)
	s.cur.lines = append(s.cur.lines, index)
	if len(s.cur.spans) >= rowsPerBlock {
		s.flush()
	}
}

func (s *rowSink) skip(index int64, reason, detail string) {
	s.cur.events = append(s.cur.events, lineEvent{before: len(s.cur.spans), line: index, reason: reason, detail: detail})
}

// flush hands the current block on and takes a free one; after the
// consumer stopped (an error) it drops the block.
func (s *rowSink) flush() {
	if s.done {
		s.cur.spans, s.cur.lines, s.cur.events = s.cur.spans[:0], s.cur.lines[:0], s.cur.events[:0]
		return
	}
	select {
	case s.out <- s.cur:
	case <-s.stop:
		s.done = true
		return
	}
	select {
	case s.cur = <-s.free:
	case <-s.stop:
		s.done = true
		s.cur = &block{byIndex: true}
	}
}

// pipelined runs produce in a goroutine and delivers what it emits from
// the calling one. A panic in produce (a third-party decoder on corrupt
// input) becomes an error, as noPanic does for the calling goroutine.
func pipelined(src *Source, what string, produce func(*rowSink) error) error {
	free := make(chan *block, pipelineBlocks)
	for range pipelineBlocks {
		free <- &block{byIndex: true}
	}
	out := make(chan *block, pipelineBlocks)
	stop := make(chan struct{})
	var perr error
	go func() {
		defer close(out)
		s := &rowSink{cur: <-free, out: out, free: free, stop: stop}
		defer func() {
			if r := recover(); r != nil {
				perr = fmt.Errorf("corrupt %s file: %v", what, r)
			}
			if perr == nil || len(s.cur.spans)+len(s.cur.events) > 0 {
				s.flush() // what was decoded before an error is delivered first
			}
		}()
		perr = produce(s)
	}()
	var err error
	for b := range out {
		if err == nil {
			if err = deliver(src, b); err != nil {
				close(stop)
			}
		}
		b.spans, b.lines, b.events = b.spans[:0], b.lines[:0], b.events[:0]
		select {
		case free <- b:
		default:
		}
	}
	if err == nil {
		err = perr
	}
	return err
}
