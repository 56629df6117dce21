package tracejson

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/tailscope/tailscope/ingest/internal/jsonscan"
	"github.com/tailscope/tailscope/ingest/internal/pool"
	"github.com/tailscope/tailscope/ingest/internal/record"
)

// Parallel OTLP JSON lines.
//
// The fast path's parsing (otlpFastDecode) is most of what reading a
// collector file costs, and lines are independent: so, as for flat JSON
// lines, a splitter cuts the input into blocks of whole lines and workers
// parse the blocks on all cores into span records. Nothing a worker does is
// visible: the goroutine that called Read takes the blocks in input order
// and, line by line, either commits a line's records (otlpFastCommit: the
// emission, its counts, index and positions, exactly as the sequential
// fast path does) or, for a line a worker could not parse, runs the
// general walker over that line, in the state the line left it in. Order
// and every decision stay on one goroutine, so the result is the
// sequential reader's; the workers only save it the parsing.
//
// The general walker reads one line at a time here, which is what it does
// over the whole input only when the line is self-contained: when its
// brackets balance (outside strings) and it ends outside a string, the
// walker, started at the line's start, ends its work on the line by the
// line's end (a syntax error resynchronises at the next line), so the line
// alone gives what the whole input gives. Two things carry over from one
// line to the next, and are carried: the positions, and a resync in
// progress (it passes over the lines that do not start with '{' or '['). A
// line that is not self-contained (the first line of a pretty-printed
// document, a line cut in the middle) ends the parallel reading: from that
// line on the rest of the input goes through the sequential reader, as it
// would have without the workers (the workers' records for it are never
// used). So does a line longer than otlpLineBuffer.

// otlpBlock is a run of whole lines and, once parsed, their records.
type otlpBlock struct {
	buf       []byte
	firstLine int64 // the line of buf[0]
	off       int64 // the input offset of buf[0]
	// rest marks the last block: buf is the start of a line the splitter
	// did not cut (too long), or what was read before err; the rest of
	// the input is read sequentially after it.
	rest bool
	err  error

	st    otlpFastState
	lines []otlpLineResult
}

// otlpLineResult is one line of a block as a worker parsed it.
type otlpLineResult struct {
	start, end int // the line in buf, with its newline
	from, n    int // its records in st.recs, when ok
	ok         bool
}

// decodeOTLPParallel reads src with the workers; see above. The blocks go
// through the one ordered pool (pool.Start): the splitter produces them,
// the workers parse them, and this goroutine takes them in input order.
// The fallback to the sequential reader takes the blocks still queued
// from the same run, in order, as the start of the rest of its input.
func decodeOTLPParallel(src *record.Source, workers int) error {
	w := newWalker(src)
	// The walker's positions start after a byte order mark, which
	// newWalker consumed.
	free := make(chan *otlpBlock, 2*workers+2)
	for range cap(free) {
		free <- &otlpBlock{}
	}
	var seq atomic.Bool // the rest is read sequentially: no more parsing
	parsers := make([]*jsonWalker, workers)
	for i := range parsers {
		parsers[i] = &jsonWalker{src: src, hopAttr: w.hopAttr}
	}
	run := pool.Start(workers, cap(free), 1,
		func(send func(*otlpBlock) bool, stop <-chan struct{}) {
			otlpSplit(src.R, w.s.off, src.Options().Paths.Block(), free, stop, send)
		},
		func(i int, b *otlpBlock, out chan<- *otlpBlock, stop <-chan struct{}) bool {
			if !seq.Load() {
				parsers[i].otlpParseBlock(b)
			}
			select {
			case out <- b:
				return true
			case <-stop:
				return false
			}
		})
	defer run.Stop()

	lr := &bytes.Reader{}
	lbr := bufio.NewReaderSize(lr, 1<<16)
	resyncing := false
	recycle := func(b *otlpBlock) {
		b.st.recs, b.st.res, b.lines = b.st.recs[:0], b.st.res[:0], b.lines[:0]
		select {
		case free <- b:
		default:
		}
	}
	for {
		b, ok := run.Next()
		if !ok {
			return nil
		}
		if b.rest {
			seq.Store(true)
			return w.otlpSequential(io.MultiReader(bytes.NewReader(b.buf), otlpRestReader(src.R, b.err)), b.off, b.firstLine, resyncing)
		}
		for i := range b.lines {
			l := &b.lines[i]
			line := b.buf[l.start:l.end]
			w.s.off, w.s.line, w.s.lineStart = b.off+int64(l.start), b.firstLine+int64(i), b.off+int64(l.start)
			if resyncing && line[0] != '{' && line[0] != '[' {
				continue // a resync passes over it, silently
			}
			if l.ok {
				resyncing = false
				w.otlpFastCommit(&b.st, l.from, l.n)
				continue
			}
			if !lineContained(line) {
				// The general walker would read on into the next lines:
				// the rest of the input is read sequentially.
				seq.Store(true)
				r := &otlpBlockReader{cur: b, buf: b.buf[l.start:], next: run.Next, recycle: recycle, src: src.R}
				return w.otlpSequential(r, w.s.off, w.s.line, resyncing)
			}
			lr.Reset(line)
			lbr.Reset(lr)
			w.s.br = lbr
			var err error
			if resyncing, err = w.runLine(); err != nil {
				return err
			}
		}
		recycle(b)
	}
}

// otlpBlockReader reads the blocks still to come, in order (next), from a
// point in the current one, recycling each once read, then the rest of
// the input after a rest block.
type otlpBlockReader struct {
	cur     *otlpBlock
	buf     []byte // what is left of cur
	next    func() (*otlpBlock, bool)
	recycle func(*otlpBlock)
	src     io.Reader
	rest    io.Reader // after a rest block
}

func (r *otlpBlockReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.rest != nil {
			return r.rest.Read(p)
		}
		if r.cur != nil {
			r.recycle(r.cur)
			r.cur = nil
		}
		b, ok := r.next()
		if !ok {
			return 0, io.EOF
		}
		r.buf = b.buf
		if b.rest {
			r.rest = otlpRestReader(r.src, b.err) // b is not recycled: the splitter has stopped
		} else {
			r.cur = b
		}
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// otlpRestReader is the input after the splitter stopped: src.R itself,
// or the I/O error the splitter met.
func otlpRestReader(r io.Reader, err error) io.Reader {
	if err != nil {
		return errReader{err}
	}
	return r
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// otlpSequential reads r, which starts at the start of a line at offset
// off, with the sequential reader (fast lines, general walker), in a
// resync when resyncing.
func (w *jsonWalker) otlpSequential(r io.Reader, off, line int64, resyncing bool) error {
	br := bufio.NewReaderSize(r, 1<<16)
	w.s.br = br
	w.s.off, w.s.line, w.s.lineStart = off, line, off
	if resyncing && !w.resync() {
		if w.s.err != nil {
			return fmt.Errorf("line %d, near byte %d: %w", w.s.line, w.s.off, w.s.err)
		}
		return nil
	}
	st := &otlpFastState{br: br}
	return w.run(func() error {
		c, err := w.top()
		if err == nil && c == '{' && w.s.off == w.s.lineStart && w.otlpFastLine(st) {
			return nil
		}
		return w.otlpTop()
	})
}

// runLine is run over one self-contained line (the walker's reader ends
// with it); resyncing reports that a syntax error's resync reached the end
// of the line, and so goes on past the next lines that do not start a
// value in column 0.
func (w *jsonWalker) runLine() (resyncing bool, err error) {
	resyncing = false
	err = w.run(func() error {
		err := w.otlpTop()
		if err != nil && err != io.EOF && w.s.err == nil {
			resyncing = true
		}
		if err == nil {
			resyncing = false
		}
		return err
	})
	return resyncing, err
}

// lineContained reports whether the general walker, started at the start
// of line (with its newline), reads nothing past it: the brackets balance
// outside strings, never below zero, and no string goes on past the
// newline (an escaped newline continues it).
func lineContained(line []byte) bool {
	depth := 0
	inStr, esc := false, false
	for _, c := range line {
		if inStr {
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return false
			}
		}
	}
	if line[len(line)-1] != '\n' {
		return true // the last line: what follows it is the end either way
	}
	return depth == 0 && !(inStr && esc)
}

// otlpParseBlock parses each line of b that starts with '{' with the fast
// path, keeping the records in b.
func (w *jsonWalker) otlpParseBlock(b *otlpBlock) {
	if b.rest {
		return
	}
	line := b.firstLine
	for i := 0; i < len(b.buf); {
		j := bytes.IndexByte(b.buf[i:], '\n')
		end := len(b.buf)
		if j >= 0 {
			end = i + j + 1
		}
		r := otlpLineResult{start: i, end: end}
		if b.buf[i] == '{' {
			r.from = len(b.st.recs)
			r.n, r.ok = w.otlpFastDecode(&b.st, b.buf[i:end], pos{b.off + int64(i), line})
		}
		b.lines = append(b.lines, r)
		i = end
		line++
	}
}

// otlpSplit cuts r, from input offset off, into blocks that end at a
// newline and passes them to send in order, until send reports the run
// stopped; a block holds about block bytes. A line longer than
// otlpLineBuffer, or an I/O error, ends the splitting with a rest block.
func otlpSplit(r *bufio.Reader, off int64, block int, free chan *otlpBlock, stop <-chan struct{}, send func(*otlpBlock) bool) {
	var carry []byte
	line := int64(1)
	for {
		var b *otlpBlock
		select {
		case b = <-free:
		case <-stop:
			return
		}
		size := max(block, len(carry)+block/2)
		if cap(b.buf) < size || cap(b.buf) > 4*block && len(carry) < block {
			b.buf = make([]byte, 0, size)
		}
		b.buf = append(b.buf[:0], carry...)
		carry = carry[:0]
		b.off, b.firstLine, b.rest, b.err = off, line, false, nil
		for {
			n, err := jsonscan.ReadFull(r, b.buf[len(b.buf):cap(b.buf)])
			b.buf = b.buf[:len(b.buf)+n]
			if err != nil && err != io.EOF {
				b.rest, b.err = true, err
				send(b)
				return
			}
			eof := err == io.EOF
			if eof {
				if len(b.buf) > 0 {
					line += int64(bytes.Count(b.buf, jsonscan.Newline))
					send(b)
				}
				return
			}
			cut := bytes.LastIndexByte(b.buf, '\n')
			if cut >= 0 {
				carry = append(carry, b.buf[cut+1:]...)
				b.buf = b.buf[:cut+1]
				break
			}
			// One line fills the block: a larger buffer, up to the
			// limit; past it the rest is read sequentially.
			if cap(b.buf) >= otlpLineBuffer {
				b.rest = true
				send(b)
				return
			}
			nb := make([]byte, len(b.buf), min(2*cap(b.buf), otlpLineBuffer))
			copy(nb, b.buf)
			b.buf = nb
		}
		n := int64(len(b.buf))
		line += int64(bytes.Count(b.buf, jsonscan.Newline))
		off += n
		if !send(b) {
			return
		}
	}
}
