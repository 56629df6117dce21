package flat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"unsafe"

	"github.com/tailscope/tailscope/ingest/internal/jsonscan"
	"github.com/tailscope/tailscope/ingest/internal/pool"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/span"
)

// Parallel JSON lines.
//
// Flat JSON lines are the format users produce in bulk (tens of millions
// of spans an hour), and decoding, not I/O, is what costs: so the reader
// splits the stream into blocks of whole lines, decodes the blocks on all
// cores, and hands the spans on in input order from the calling
// goroutine. Order is what keeps results deterministic (the first copy of
// a duplicated span wins, the first positioned errors are the first in the
// file), and per-block line numbers keep every error position exact.
//
// Memory stays bounded: at most 2×workers+2 blocks are in flight, each
// about blockSize (larger only for a line longer than that, up to
// --max-record).
//
// With a Fork sink (Source.Fork) the workers also do what Source.Emit does (validate,
// derive the hop, filter) and hand each span to their own Branch, so only
// the spans a Branch asks to see again, and the skipped records, go
// through the ordered hand-off: the one goroutine that must see spans in
// order then sees a small share of them.

// block is a run of whole lines and, once decoded, its spans.
type block struct {
	buf       []byte
	firstLine int64 // line number of buf's first line
	// tooLong marks a line longer than --max-record, found by the splitter
	// (buf is empty then).
	tooLong int64
	err     error // an I/O error after the lines of buf

	record.Batch             // its spans with their lines, and its skips
	attrs        []span.Attr // the borrowed spans' attributes (their Attrs alias it)
}

// decodeJSONLParallel reads src in blocks and decodes them concurrently.
func decodeJSONLParallel(src *record.Source, tab *fieldTable) error {
	workers := pool.Workers()
	free := make(chan *block, 2*workers+2)
	for range cap(free) {
		free <- &block{}
	}
	expectLines(src)
	var branches []record.Branch
	var decoders []*blockDecoder
	for range workers {
		d := &blockDecoder{tab: tab, rec: &flatRecord{intern: &record.Interner{}, units: &unitStats{}, at: record.AttrSet{Borrow: src.Options().Borrowed}}, borrow: src.Options().Borrowed, max: src.Options().MaxRecord, names: src.Options().Names}
		decoders = append(decoders, d)
		if src.Fork() != nil {
			d.src, d.branch = src, src.Fork().Branch()
			branches = append(branches, d.branch)
			// Service and name matter to a span a Branch takes and does
			// not hand back only when they name its hop (an empty hop is
			// named by them too: see materialize in decode).
			hopBy := src.Options().HopBy
			if hopBy == "" {
				hopBy = src.DefaultHopBy()
			}
			switch hopBy {
			case "service", "name", "service+name":
			default:
				d.rec.lazy = true
			}
		}
	}
	err := pool.Ordered(workers, cap(free), 1,
		func(send func(*block) bool, stop <-chan struct{}) { splitLines(src, free, stop, send) },
		func(w int, b *block, out chan<- *block, stop <-chan struct{}) bool {
			decoders[w].decode(b)
			select {
			case out <- b:
				return true
			case <-stop:
				return false
			}
		},
		func(b *block) error {
			src.Deliver(&b.Batch)
			if b.tooLong > 0 {
				src.Skip(b.tooLong, 0, "record too long", tooLong(src.Options().MaxRecord, src.Options().Names))
			}
			err := b.err
			// Spans may alias buf (Options.Borrowed): recycle only now.
			b.Reset()
			b.attrs, b.err, b.tooLong = b.attrs[:0], nil, 0
			if cap(b.buf) > 4*src.Options().Paths.Block() {
				b.buf = nil // a long line's buffer: not kept in the pool
			}
			select {
			case free <- b:
			default:
			}
			return err
		})
	for _, br := range branches {
		br.Close()
	}
	u := &unitStats{}
	for _, d := range decoders {
		u.merge(d.rec.units)
	}
	unitNotes(src, u, false) // durations were checked before (probeUnits)
	return err
}

// expectLines estimates the lines of a plain file from its size and the
// mean length of the lines already buffered (the format's sniff read
// them), for an ExpectSink.
func expectLines(src *record.Source) {
	if src.File == nil || !src.Expects() {
		return
	}
	fi, err := src.File.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	head, _ := src.R.Peek(record.SniffWindow)
	if cut := bytes.LastIndexByte(head, '\n'); cut >= 0 {
		head = head[:cut+1]
	}
	if n := bytes.Count(head, jsonscan.Newline); n >= 16 {
		src.Expect(int64(float64(fi.Size())*float64(n)/float64(len(head))), false)
	}
}

// splitLines cuts src.R into blocks that end at a newline and passes them
// to send in order. A line longer than a block is gathered apart, up to
// --max-record: it becomes a block of its own, and one longer than that is
// skipped to its end without being kept, so rejecting it costs about
// --max-record of memory, once.
func splitLines(src *record.Source, free chan *block, stop <-chan struct{}, send func(*block) bool) {
	r := src.R
	maxRec, size := src.Options().MaxRecord, src.Options().Paths.Block()
	var carry []byte // the start of a line continued in the next block (shorter than a block)
	var long []byte  // a whole line longer than a block, gathered apart
	line := int64(1)
	// A UTF-8 byte order mark before the first line is no part of it.
	if b, err := r.Peek(3); err == nil && string(b) == "\xef\xbb\xbf" {
		r.Discard(3)
	}
	for {
		var b *block
		select {
		case b = <-free:
		case <-stop:
			return
		}
		if long != nil {
			// The gathered line is a block of its own, in its own buffer.
			b.buf, long = long, nil
			b.firstLine = line
			line++
			if !send(b) {
				return
			}
			continue
		}
		if need := len(carry) + size/2; cap(b.buf) < max(size, need) {
			b.buf = make([]byte, 0, max(size, len(carry)+size))
		}
		b.buf = append(b.buf[:0], carry...)
		carry = carry[:0]
		n, err := jsonscan.ReadFull(r, b.buf[len(b.buf):cap(b.buf)])
		b.buf = b.buf[:len(b.buf)+n]
		eof := err == io.EOF
		if err != nil && !eof {
			b.err = fmt.Errorf("line %d: %w", line+int64(bytes.Count(b.buf, jsonscan.Newline)), err)
			b.firstLine = line
			send(b)
			return
		}
		if !eof {
			cut := bytes.LastIndexByte(b.buf, '\n')
			if cut < 0 {
				// One line fills the block: gather the rest of it apart.
				var tooLong bool
				long, tooLong, err = gatherLine(r, b.buf, maxRec)
				b.buf = b.buf[:0]
				if err != nil && err != io.EOF {
					b.err = fmt.Errorf("line %d: %w", line, err)
					b.firstLine = line
					long = nil
					send(b)
					return
				}
				if tooLong {
					b.firstLine, b.tooLong = line, line
					line++
					if !send(b) {
						return
					}
					if err == io.EOF {
						return
					}
					continue
				}
				free <- b // the next round sends the gathered line
				continue
			}
			carry = append(carry, b.buf[cut+1:]...)
			b.buf = b.buf[:cut+1]
		}
		b.firstLine = line
		line += int64(bytes.Count(b.buf, jsonscan.Newline))
		if !send(b) {
			return
		}
		if eof {
			return
		}
	}
}

// gatherLine reads the rest of a line whose start is head (a block's
// worth, with no newline) into a buffer of its own, of at most limit+1
// bytes. The line is kept in pieces while it is read and joined only once
// it has ended within the limit, so a line over the limit, read to its end
// and dropped (tooLong), costs about the limit of memory, not a multiple
// of it. err is io.EOF when the input ended with the line.
func gatherLine(r *bufio.Reader, head []byte, limit int) (line []byte, tooLong bool, err error) {
	if len(head) > limit+1 {
		return nil, true, jsonscan.SkipLine(r)
	}
	const piece = 1 << 20
	pieces := [][]byte{append(make([]byte, 0, max(len(head), piece)), head...)}
	n := len(head)
	for {
		chunk, err := r.ReadSlice('\n')
		if n+len(chunk) > limit+1 {
			// Too long: stop keeping it, and read to its end.
			if err == bufio.ErrBufferFull {
				err = jsonscan.SkipLine(r)
			}
			return nil, true, err
		}
		n += len(chunk)
		for len(chunk) > 0 {
			last := &pieces[len(pieces)-1]
			if len(*last) == cap(*last) {
				pieces = append(pieces, make([]byte, 0, piece))
				last = &pieces[len(pieces)-1]
			}
			k := min(len(chunk), cap(*last)-len(*last))
			*last = append(*last, chunk[:k]...)
			chunk = chunk[k:]
		}
		switch err {
		case nil, io.EOF:
			line = make([]byte, 0, n)
			for _, p := range pieces {
				line = append(line, p...)
			}
			return line, false, err
		case bufio.ErrBufferFull:
			continue
		default:
			return nil, false, err
		}
	}
}

// blockDecoder is one worker's state: its own record, interner, key
// layout and scanner, so workers share nothing but the read-only field
// table (and, with a Fork, the read-only options of src).
type blockDecoder struct {
	tab    *fieldTable
	rec    *flatRecord
	sc     jsonscan.Scanner
	lay    layout
	borrow bool
	max    int
	names  option.Names   // for the record-too-long detail (MaxRecord)
	src    *record.Source // with a Fork: for accept
	branch record.Branch  // with a Fork: this worker's consumer
}

func (d *blockDecoder) decode(b *block) {
	buf := b.buf
	line := b.firstLine
	rec := d.rec
	if d.borrow {
		rec.block = buf
	}
	for len(buf) > 0 {
		ln := line
		line++
		// The usual line starts with '{' and takes the fast path, which
		// finds its end as it goes (fastEnd); any other line is cut at
		// its newline first.
		var l []byte
		fast := false
		if buf[0] == '{' {
			if end := d.tab.fastEnd(rec, &d.lay, buf); end >= 0 {
				end = min(end+1, len(buf)) // with its newline
				l, buf, fast = buf[:end], buf[end:], true
			}
		}
		if !fast {
			if i := bytes.IndexByte(buf, '\n'); i >= 0 {
				l, buf = buf[:i+1], buf[i+1:]
			} else {
				l, buf = buf, nil
			}
		}
		if len(l) > d.max+1 {
			b.Events = append(b.Events, record.Event{Before: len(b.Spans), At: ln, Reason: "record too long", Detail: tooLong(d.max, d.names)})
			continue
		}
		var reason, detail string
		if fast {
			reason, detail = rec.finish()
			if rec.sp.Hop == "" {
				rec.materialize() // the hop may be named by service and name
			}
		} else {
			// The fast path did not take it (or it does not start with
			// '{'): the fast path would not take it cut at its newline
			// either (fastEnd), so it goes to the general one.
			if l = trimEOL(l); isBlank(l) {
				continue
			}
			reason, detail = d.tab.decodeLine(&d.sc, rec, l)
		}
		if reason == "" && d.branch != nil {
			reason, detail = d.src.Accept(&rec.sp)
		}
		if reason != "" {
			b.Reject(&rec.sp, ln, reason, detail)
			continue
		}
		if d.branch != nil {
			b.Used++
			if len(rec.soft) > 0 {
				b.Events = append(b.Events, record.Event{Before: len(b.Spans), At: ln, Soft: slices.Clone(rec.soft), Taken: true})
			}
			if !d.branch.Take(&rec.sp) {
				continue
			}
			rec.materialize()
		}
		b.Spans = append(b.Spans, rec.sp)
		if d.borrow && len(rec.sp.Attrs) > 0 {
			// The record reuses its list on the next line, and the block's
			// spans are handed on after the whole block: they keep theirs
			// in the block (owned records gave each span its own).
			s := len(b.attrs)
			b.attrs = append(b.attrs, rec.sp.Attrs...)
			b.Spans[len(b.Spans)-1].Attrs = b.attrs[s:len(b.attrs):len(b.attrs)]
		}
		b.At = append(b.At, ln)
		if d.branch == nil && len(rec.soft) > 0 {
			b.Events = append(b.Events, record.Event{Before: len(b.Spans), At: ln, Soft: slices.Clone(rec.soft)})
		}
	}
	rec.block = nil
}

// trimEOL is bytes.TrimRight(l, "\r\n") without building a set per call.
func trimEOL(l []byte) []byte {
	for len(l) > 0 && (l[len(l)-1] == '\n' || l[len(l)-1] == '\r') {
		l = l[:len(l)-1]
	}
	return l
}

func isBlank(l []byte) bool {
	for _, c := range l {
		switch c {
		case ' ', '\t', '\r', '\n', '\v', '\f':
		default:
			return len(bytes.TrimSpace(l)) == 0
		}
	}
	return true
}

// decodeLine decodes one non-blank line into rec; a non-empty reason
// says why it was skipped.
func (t *fieldTable) decodeLine(sc *jsonscan.Scanner, rec *flatRecord, line []byte) (reason, detail string) {
	rec.reset()
	sc.Buf, sc.Pos = line, 0
	if err := t.decodeObject(sc, rec, 0, record.TierField); err != nil {
		reason := "bad JSON"
		if errors.As(err, new(fieldError)) {
			reason = "bad value"
		}
		return reason, err.Error()
	}
	sc.Ws()
	if sc.Pos != len(sc.Buf) {
		return "bad JSON", "trailing data after the object"
	}
	return rec.finish()
}

// idString returns an id as a string: aliasing the block (no copy) when
// the reader may lend its buffers and v lies in the block, a copy
// otherwise (an unescaped id lives in scratch space).
func (r *flatRecord) idString(v []byte) string {
	if len(v) == 0 {
		return ""
	}
	if b := r.block; len(b) > 0 {
		p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(v))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		if p >= lo && p+uintptr(len(v)) <= lo+uintptr(len(b)) {
			return unsafe.String(unsafe.SliceData(v), len(v))
		}
	}
	return string(v)
}
