package tracejson

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"
	"sync/atomic"

	"github.com/tailscope/tailscope/ingest/internal/jsonscan"
	"github.com/tailscope/tailscope/ingest/internal/pool"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
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

	// With a Fork (see otlpTakeBlock): prev tells, once the block before
	// was parsed, whether the spans of every line before this block may
	// be taken on the workers; ready tells the same of the lines up to
	// this block's end, for the next block.
	prev, ready chan bool
	batches     []record.Batch // the taken lines' spans and events (nb of them in use)
	nb          int
	attrs       []span.Attr // the borrowed spans' attributes in batches (their Attrs alias it)
}

// otlpLineResult is one line of a block as a worker parsed it.
type otlpLineResult struct {
	start, end int // the line in buf, with its newline
	from, n    int // its records in st.recs, when ok
	ok         bool
	// taken: a worker took the line's spans (otlpTakeLine), and
	// batches[batch] holds what Deliver must see of them.
	taken bool
	batch int
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
	// With a Fork the workers also take the spans of the lines they
	// parsed (otlpTakeBlock), and this goroutine gives the spans it reads
	// itself to a Branch of its own (Source.Branched), so that every span
	// goes through a Branch.
	fork := src.Fork()
	var branches []record.Branch
	var last chan bool // the ready of the block sent last
	if fork != nil {
		branches = append(branches, fork.Branch())
		w.src = src.Branched(branches[0])
		for range parsers {
			branches = append(branches, fork.Branch())
		}
		last = make(chan bool, 1)
		last <- true // nothing before the first block
	}
	run := pool.Start(workers, cap(free), 1,
		func(send func(*otlpBlock) bool, stop <-chan struct{}) {
			otlpSplit(src.R, w.s.off, free, stop, func(b *otlpBlock) bool {
				if fork != nil {
					b.prev, b.ready = last, make(chan bool, 1)
					last = b.ready
				}
				return send(b)
			})
		},
		func(i int, b *otlpBlock, out chan<- *otlpBlock, stop <-chan struct{}) bool {
			if !seq.Load() {
				parsers[i].otlpParseBlock(b)
			}
			if fork != nil && !parsers[i].otlpTakeBlock(b, branches[1+i], stop) {
				return false
			}
			select {
			case out <- b:
				return true
			case <-stop:
				return false
			}
		})
	defer func() {
		run.Stop()
		for _, br := range branches {
			br.Close()
		}
	}()

	lr := &bytes.Reader{}
	lbr := bufio.NewReaderSize(lr, 1<<16)
	resyncing := false
	recycle := func(b *otlpBlock) {
		b.st.recs, b.st.res, b.lines = b.st.recs[:0], b.st.res[:0], b.lines[:0]
		b.nb, b.attrs, b.prev, b.ready = 0, b.attrs[:0], nil, nil
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
				if l.taken {
					bt := &b.batches[l.batch]
					bt.IndexBase = w.index
					src.Deliver(bt)
					w.index += int64(l.n)
				} else {
					w.otlpFastCommit(&b.st, l.from, l.n)
				}
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

// otlpTakeBlock does on a worker, with a Fork, what the goroutine that
// called Read would do with the lines of b the worker parsed
// (otlpFastCommit): each span's last steps (otlpFinish, checkStart,
// Source.Accept) and its hand-off, to br; what Deliver must see of a line
// (skips, filtered spans, lost values, the spans br hands back) goes to a
// Batch of the line's, placed by line and by index in the line, to which
// that goroutine adds the spans before (Batch.IndexBase).
//
// Only lines that the sequential reader cannot read again are taken. That
// goroutine leaves the workers' records at the first line that is not
// self-contained (neither parsed by the fast path nor balanced, see
// lineContained), and at a rest block, and reads the rest of the input
// with the sequential reader, which may read the lines after it in other
// ways than the fast path did; so a worker takes a block's lines only when
// every block before it has no such line (prev), and those of its own
// before the first such line, and tells the next block whether it may
// (ready). Every block is parsed before it waits, in order, so the chain
// always moves. It reports false when the run stopped while it waited.
func (w *jsonWalker) otlpTakeBlock(b *otlpBlock, br record.Branch, stop <-chan struct{}) bool {
	cut := len(b.lines)
	if b.rest {
		cut = 0
	}
	for i := range b.lines[:cut] {
		if l := &b.lines[i]; !l.ok && !lineContained(b.buf[l.start:l.end]) {
			cut = i
			break
		}
	}
	var prev bool
	select {
	case prev = <-b.prev:
	case <-stop:
		return false
	}
	if prev {
		for i := range b.lines[:cut] {
			if l := &b.lines[i]; l.ok {
				w.otlpTakeLine(b, l, br)
			}
		}
	}
	b.ready <- prev && !b.rest && cut == len(b.lines)
	return true
}

// otlpTakeLine takes the spans of line l of b, in otlpFastCommit's order;
// see otlpTakeBlock.
func (w *jsonWalker) otlpTakeLine(b *otlpBlock, l *otlpLineResult, br record.Branch) {
	if b.nb == len(b.batches) {
		b.batches = append(b.batches, record.Batch{})
	}
	bt := &b.batches[b.nb]
	bt.Reset()
	l.taken, l.batch = true, b.nb
	b.nb++
	st := &b.st
	borrow := w.src.Options().Borrowed
	for i, end := l.from, l.from+l.n; i < end; {
		r := st.recs[i].res
		j := i
		for j < end && st.recs[j].res == r {
			j++
		}
		for _, late := range [2]bool{false, true} {
			for k := i; k < j; k++ {
				fr := &st.recs[k]
				if fr.late != late {
					continue
				}
				rec := &fr.rec
				w.otlpFinish(rec, &st.res[r], fr.scope)
				checkStart(rec)
				sp := &rec.Span
				index := int64(k-l.from) + 1
				if reason, detail := w.src.Accept(sp); reason != "" {
					bt.RejectAt(sp, fr.at.line, index, reason, detail)
					continue
				}
				bt.Used++
				if len(rec.Soft) > 0 {
					bt.Events = append(bt.Events, record.Event{Before: len(bt.Spans), At: fr.at.line, Index: index, Soft: slices.Clone(rec.Soft), Taken: true})
				}
				if !br.Take(sp) {
					continue
				}
				bt.Spans = append(bt.Spans, *sp)
				if borrow && len(sp.Attrs) > 0 {
					// The walker reuses its list for the next span, and the
					// line's spans reach Ordered after the whole block.
					s := len(b.attrs)
					b.attrs = append(b.attrs, sp.Attrs...)
					bt.Spans[len(bt.Spans)-1].Attrs = b.attrs[s:len(b.attrs):len(b.attrs)]
				}
			}
		}
		i = j
	}
}

// otlpSplit cuts r, from input offset off, into blocks that end at a
// newline and passes them to send in order, until send reports the run
// stopped. A line longer than otlpLineBuffer, or an I/O error, ends the
// splitting with a rest block.
func otlpSplit(r *bufio.Reader, off int64, free chan *otlpBlock, stop <-chan struct{}, send func(*otlpBlock) bool) {
	var carry []byte
	line := int64(1)
	for {
		var b *otlpBlock
		select {
		case b = <-free:
		case <-stop:
			return
		}
		size := max(pool.BlockSize, len(carry)+pool.BlockSize/2)
		if cap(b.buf) < size || cap(b.buf) > 4*pool.BlockSize && len(carry) < pool.BlockSize {
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
