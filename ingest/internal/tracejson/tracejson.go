package tracejson

// Shared machinery of the three trace JSON formats (OTLP, Jaeger, Zipkin).
//
// Trace exports are often one JSON document holding everything (a 2 GB OTLP
// file is one object), so these decoders never load a document whole. A
// jsonWalker walks the document's outer structure token by token with the
// streaming tokenizer of jsonstream.go, in time linear in the input, and
// takes only the repeated leaves — one span, or one Jaeger trace — as raw
// bytes, which the small scanner of jsonscan.Scanner then reads field by field.
// Memory is bounded by --max-record (the largest span or trace kept), not
// by the file; a leaf over it is skipped as it streams by, counted, and
// the walk goes on with the next one.
//
// A syntax error ends what can be read of a document's structure. The
// walker then records one positioned skip and resynchronises at the next
// line that starts with '{' or '[' in column 0: for one-document-per-line
// files (the collector's file exporter) only the broken line is lost; in a
// pretty-printed document the rest of that document is.
//
// Positions are the line and the span's index in the input ("file:12:
// span 7: …"), with the byte offset in the detail.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tailscope/tailscope/ingest/internal/jsonscan"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/span"
)

// jsonWalker streams one input of a trace JSON format.
type jsonWalker struct {
	src *record.Source
	s   *jstream
	// index counts the spans met so far, so that the last one is span
	// number index (1-based) in messages.
	index   int64
	intern  record.Interner
	hopAttr string
	buf     []byte // the record raw returned last
	kbuf    []byte // scratch for keys
	sbuf    []byte // scratch for an OTLP scope
	// attrIntern holds attribute keys and values, apart from intern so
	// that an attribute with a value per span (a URL, a user id) fills
	// only its own table (an interner stops interning when full) and
	// never costs the names their interning.
	attrIntern record.Interner
	// attrBuf is the Attrs of the span emitted last, reused for the next
	// when spans are borrowed (Options.Borrowed).
	attrBuf []span.Attr
	// resyncAt is where the last resync stopped: a resync that finds
	// itself there again skips a line, so that it always moves on.
	resyncAt int64
	// jaeger is the Jaeger fast path's state (jaegerfast.go).
	jaeger *jaegerFast
}

// pos is where a value starts: its byte offset and line.
type pos struct{ off, line int64 }

func newWalker(src *record.Source) *jsonWalker {
	return &jsonWalker{src: src, s: newJStream(src.R), hopAttr: src.Options().HopAttr(), resyncAt: -1}
}

// here is the position of the next byte.
func (w *jsonWalker) here() pos { return pos{w.s.off, w.s.line} }

// run reads top-level documents with doc until the input ends. Syntax
// errors become skips followed by a resync; I/O errors end the run.
func (w *jsonWalker) run(doc func() error) error {
	for {
		err := doc()
		if err == nil {
			continue
		}
		if w.s.err != nil {
			return fmt.Errorf("line %d, near byte %d: %w", w.s.line, w.s.off, w.s.err)
		}
		if err == io.EOF {
			return nil
		}
		reason, at := record.ReasonBadJSON, w.here()
		var se *jsonSyntaxError
		switch {
		case errors.As(err, &se):
			at = pos{se.off, se.line}
		case errors.Is(err, io.ErrUnexpectedEOF):
			reason = record.ReasonTruncated
		}
		w.src.Skip(at.line, w.index+1, reason, fmt.Sprintf("at byte %d: %v; the rest of this document cannot be read", at.off, err))
		if !w.resync() {
			if w.s.err != nil {
				return fmt.Errorf("line %d, near byte %d: %w", w.s.line, w.s.off, w.s.err)
			}
			return nil
		}
	}
}

// resync moves to the next line that starts a JSON value in column 0 (for
// one-document-per-line files, only the broken line is lost). An error
// found at the very start of such a line (the line before ended inside a
// document) keeps that line.
func (w *jsonWalker) resync() bool {
	if w.s.off == w.s.lineStart && w.s.off != w.resyncAt {
		if c, ok := w.s.peekRaw(); ok && (c == '{' || c == '[') {
			w.resyncAt = w.s.off
			return true
		}
	}
	for {
		if !w.s.skipLine() {
			return false
		}
		c, ok := w.s.peekRaw()
		if !ok {
			return false
		}
		if c == '{' || c == '[' {
			w.resyncAt = w.s.off
			return true
		}
	}
}

// next returns the first byte of the next value, not consumed; the end
// of the input inside a document is an error.
func (w *jsonWalker) next() (byte, error) {
	c, err := w.s.ws()
	if err == io.EOF {
		return 0, io.ErrUnexpectedEOF
	}
	return c, err
}

// top returns the first byte of the next top-level document, not
// consumed, or io.EOF at the end of the input.
func (w *jsonWalker) top() (byte, error) { return w.s.ws() }

// open consumes the byte next() returned.
func (w *jsonWalker) open() { w.s.br.Discard(1); w.s.off++ }

// skipValue skips the next value, however large, without holding it.
func (w *jsonWalker) skipValue() error { return w.s.skip() }

// byteKind names the kind of value that starts with c.
func byteKind(c byte) string {
	switch {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	}
	return "a number"
}

// enter opens the next value when it is the container want. A null gives
// ok=false with no complaint; any other value is skipped and reported as a
// bad document under name.
func (w *jsonWalker) enter(want byte, name string) (bool, error) {
	c, err := w.next()
	if err != nil {
		return false, err
	}
	if c == want {
		w.open()
		return true, nil
	}
	at := w.here()
	if c == 'n' {
		lit, err := w.s.value(w.kbuf[:0], 8)
		if err != nil && err != errTooLong {
			return false, err
		}
		w.kbuf = lit[:0]
		if string(lit) == "null" {
			return false, nil
		}
	} else if err := w.s.skip(); err != nil {
		return false, err
	}
	what := map[byte]string{'{': "an object", '[': "an array"}[want]
	w.src.Skip(at.line, w.index+1, record.ReasonBadDocument, fmt.Sprintf("near byte %d: %s: want %s, got %s", at.off, name, what, byteKind(c)))
	return false, nil
}

// array calls elem for each element of the array that comes next.
func (w *jsonWalker) array(name string, elem func() error) error {
	ok, err := w.enter('[', name)
	if !ok || err != nil {
		return err
	}
	return w.elements(elem)
}

// elements is array after its '[' has been read.
func (w *jsonWalker) elements(elem func() error) error {
	for first := true; ; first = false {
		c, err := w.next()
		if err != nil {
			return err
		}
		if c == ']' {
			w.open()
			return nil
		}
		if !first {
			if c != ',' {
				return w.s.syntax("want ',' or ']' after an array element, got %q", c)
			}
			w.open()
		}
		if err := elem(); err != nil {
			return err
		}
	}
}

// object calls member for each key of the object that comes next; member
// must consume the value.
func (w *jsonWalker) object(name string, member func(key string) error) error {
	ok, err := w.enter('{', name)
	if !ok || err != nil {
		return err
	}
	return w.members(member)
}

// members is object after its '{' has been read.
func (w *jsonWalker) members(member func(key string) error) error {
	for first := true; ; first = false {
		c, err := w.next()
		if err != nil {
			return err
		}
		if c == '}' {
			w.open()
			return nil
		}
		if !first {
			if c != ',' {
				return w.s.syntax("want ',' or '}' after an object member, got %q", c)
			}
			w.open()
		}
		k, err := w.s.key(w.kbuf)
		if err != nil {
			return err
		}
		if err := member(k); err != nil {
			return err
		}
	}
}

// raw reads the next value into dst (reused) and reports where it
// started. A value over --max-record is consumed without being kept:
// raw then returns errTooLong, for the caller to count it and go on.
func (w *jsonWalker) raw(dst []byte) ([]byte, pos, error) {
	if _, err := w.next(); err != nil {
		return dst[:0], w.here(), err
	}
	at := w.here()
	b, err := w.s.value(dst[:0], w.src.Options().MaxRecord)
	return b, at, err
}

// tooLong counts a record over --max-record (consumed by raw).
func (w *jsonWalker) tooLong(at pos) {
	w.index++
	o := w.src.Options()
	w.src.Skip(at.line, w.index, record.ReasonTooLong, fmt.Sprintf("at byte %d: over %d bytes (raise with %s)", at.off, o.MaxRecord, o.Names.Of(option.MaxRecord)))
}

// setAttrs makes sp.Attrs the resource's attributes res, the scope's
// (OTLP) and the span's own, in that order: in a slice of the span's own,
// or, when spans are borrowed (Options.Borrowed), in the walker's buffer,
// valid until the next span. The strings are the walker's (interned),
// never aliases of its buffers.
func (w *jsonWalker) setAttrs(sp *span.Span, res, scope, own []span.Attr) {
	n := len(res) + len(scope) + len(own)
	if n == 0 {
		sp.Attrs = nil
		return
	}
	var out []span.Attr
	if w.src.Options().Borrowed {
		out = w.attrBuf[:0]
	} else {
		out = make([]span.Attr, 0, n)
	}
	out = append(append(append(out, res...), scope...), own...)
	if w.src.Options().Borrowed {
		w.attrBuf = out
	}
	sp.Attrs = out
}

// emit hands a finished span on, counting the values it lost when it is
// used.
func (w *jsonWalker) emit(rec *record.TraceRecord, index int64, at pos) {
	if err := record.StartProblem(&rec.Span); err != nil {
		rec.Ignore("start", err) // the duration stands on its own
		rec.Span.Start = 0
	}
	w.src.EmitSoft(&rec.Span, at.line, index, rec.Soft)
}

// skipSpan records a bad span at its index and position.
func (w *jsonWalker) skipSpan(index int64, at pos, reason, detail string) {
	w.src.Skip(at.line, index, reason, fmt.Sprintf("at byte %d: %s", at.off, detail))
}

// lineCounter finds the lines of offsets into a record that starts on a
// known line, counting each newline once however many offsets are asked
// for (in increasing order).
type lineCounter struct {
	raw  []byte
	at   pos
	off  int // raw[:off] is counted
	line int64
}

func newLineCounter(raw []byte, at pos) *lineCounter {
	return &lineCounter{raw: raw, at: at, line: at.line}
}

// pos is the position of raw[off:].
func (lc *lineCounter) pos(off int) pos {
	if off > lc.off {
		lc.line += int64(bytes.Count(lc.raw[lc.off:off], jsonscan.Newline))
		lc.off = off
	}
	return pos{lc.at.off + int64(off), lc.line}
}

// parseUnixNano reads a protojson fixed64 time: a decimal string or
// number of ns (a float like 1.7e18 is accepted too, to the precision it
// carries).
func parseUnixNano(name string, v []byte) (int64, error) {
	s := strings.TrimSpace(string(v))
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		if n > math.MaxInt64 {
			return 0, fmt.Errorf("%s: %s is out of range", name, s)
		}
		return int64(n), nil
	}
	if x, err := strconv.ParseFloat(s, 64); err == nil && x >= 0 && x < 9.2e18 {
		return int64(x), nil
	}
	return 0, fmt.Errorf("%s: want unix nanoseconds, got %q", name, v)
}

// parseMicros reads a µs count (Jaeger, Zipkin) into ns. Jaeger's
// protobuf JSON (api_v2) writes times as RFC 3339 and durations as "1.5s"
// strings; those are accepted too.
func parseMicros(name string, v []byte, isDuration bool) (int64, error) {
	s := strings.TrimSpace(string(v))
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			return 0, fmt.Errorf("%s: %s µs is out of range", name, s)
		}
		return n * 1000, nil
	}
	if x, err := strconv.ParseFloat(s, 64); err == nil {
		x *= 1000
		if !record.FiniteNs(x) {
			return 0, fmt.Errorf("%s: %s µs is out of range", name, s)
		}
		return int64(math.Round(x)), nil
	}
	if isDuration {
		if d, err := time.ParseDuration(s); err == nil {
			return int64(d), nil
		}
	} else if t, err := record.ParseRFC3339(s); err == nil {
		return t.UnixNano(), nil
	}
	return 0, fmt.Errorf("%s: want microseconds, got %q", name, v)
}

// startMicros reads a start time member (Jaeger's startTime, Zipkin's
// timestamp) into *start: a value of the wrong JSON kind leaves it as it
// was, one that is no time zeroes it.
func startMicros(key string, k jsonscan.JSONKind, v []byte, start *int64) error {
	if k != jsonscan.KNumber && k != jsonscan.KString {
		return fmt.Errorf("%s: want µs, got %s", key, kindName(k))
	}
	var err error
	*start, err = parseMicros(key, v, false)
	return err
}

// objectMembers walks an in-memory JSON object with the scanner, giving
// each member's key as a string (copied: the scanner reuses its buffers).
func objectMembers(raw []byte, f func(key string, k jsonscan.JSONKind, v []byte) error) error {
	sc := jsonscan.Scanner{Buf: raw}
	return sc.Object(func(key []byte, k jsonscan.JSONKind, v []byte) error {
		return f(string(key), k, v)
	})
}

// arrayElems walks an in-memory JSON array with the scanner. Elements come
// as raw text for objects and arrays, unescaped text for strings; off is
// the element's byte offset in raw.
func arrayElems(raw []byte, f func(k jsonscan.JSONKind, v []byte, off int) error) error {
	sc := jsonscan.Scanner{Buf: raw}
	sc.Ws()
	if !sc.Eat('[') {
		return errors.New("not a JSON array")
	}
	sc.Ws()
	if sc.Eat(']') {
		return nil
	}
	for {
		sc.Ws()
		off := sc.Pos
		k, v, err := sc.Value()
		if err != nil {
			return err
		}
		if err := f(k, v, off); err != nil {
			return err
		}
		sc.Ws()
		if sc.Eat(',') {
			continue
		}
		if sc.Eat(']') {
			return nil
		}
		return errors.New("missing ',' or ']'")
	}
}

// kindName names a scanner kind for messages.
func kindName(k jsonscan.JSONKind) string {
	return [...]string{jsonscan.KNull: "null", jsonscan.KBool: "a boolean", jsonscan.KNumber: "a number", jsonscan.KString: "a string", jsonscan.KObject: "an object", jsonscan.KArray: "an array"}[k]
}
