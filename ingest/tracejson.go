package ingest

// Shared machinery of the three trace JSON formats (OTLP, Jaeger, Zipkin).
//
// Trace exports are often one JSON document holding everything (a 2 GB OTLP
// file is one object), so these decoders never load a document whole. A
// jsonWalker walks the document's outer structure token by token with the
// streaming tokenizer of jsonstream.go, in time linear in the input, and
// takes only the repeated leaves — one span, or one Jaeger trace — as raw
// bytes, which the small scanner of scan.go then reads field by field.
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
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tailscope/tailscope/span"
)

// Reasons a trace JSON record is skipped; they are the skipped_by_reason
// keys, so they stay stable.
const (
	reasonBadJSON      = "bad JSON"
	reasonTruncated    = "truncated JSON"
	reasonBadValue     = "bad value"
	reasonBadDocument  = "bad document"
	reasonNotSpan      = "not a span"
	reasonTooLong      = "record too long"
	reasonNoDuration   = "missing duration"
	reasonNoStart      = "missing start time"
	reasonNoEnd        = "missing end time"
	reasonEndBeforeSta = "end before start"
)

// jsonWalker streams one input of a trace JSON format.
type jsonWalker struct {
	src *Source
	s   *jstream
	// index counts the spans met so far, so that the last one is span
	// number index (1-based) in messages.
	index   int64
	intern  interner
	hopAttr string
	buf     []byte // the record raw returned last
	kbuf    []byte // scratch for keys
	sbuf    []byte // scratch for an OTLP scope
	// attrIntern holds attribute keys and values, apart from intern so
	// that an attribute with a value per span (a URL, a user id) fills
	// only its own table (an interner stops interning when full) and
	// never costs the names their interning.
	attrIntern interner
	// attrBuf is the Attrs of the span emitted last, reused for the next
	// when spans are borrowed (Options.Borrowed).
	attrBuf []span.Attr
	// resyncAt is where the last resync stopped: a resync that finds
	// itself there again skips a line, so that it always moves on.
	resyncAt int64
}

// pos is where a value starts: its byte offset and line.
type pos struct{ off, line int64 }

func newWalker(src *Source) *jsonWalker {
	return &jsonWalker{src: src, s: newJStream(src.R), hopAttr: src.Options().HopAttr(), resyncAt: -1}
}

// offset is the position in the input of the next byte.
func (w *jsonWalker) offset() int64 { return w.s.off }

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
		reason, at := reasonBadJSON, w.here()
		var se *jsonSyntaxError
		switch {
		case errors.As(err, &se):
			at = pos{se.off, se.line}
		case errors.Is(err, io.ErrUnexpectedEOF):
			reason = reasonTruncated
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
	w.src.Skip(at.line, w.index+1, reasonBadDocument, fmt.Sprintf("near byte %d: %s: want %s, got %s", at.off, name, what, byteKind(c)))
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
	w.src.Skip(at.line, w.index, reasonTooLong, fmt.Sprintf("at byte %d: over %d bytes (raise with --max-record)", at.off, w.src.Options().MaxRecord))
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
	if w.src.opt.Borrowed {
		out = w.attrBuf[:0]
	} else {
		out = make([]span.Attr, 0, n)
	}
	out = append(append(append(out, res...), scope...), own...)
	if w.src.opt.Borrowed {
		w.attrBuf = out
	}
	sp.Attrs = out
}

// emit hands a finished span on, counting the values it lost when it is
// used.
func (w *jsonWalker) emit(rec *traceRecord, index int64, at pos) {
	if err := startProblem(&rec.sp); err != nil {
		rec.ignore("start", err) // the duration stands on its own
		rec.sp.Start = 0
	}
	w.src.emitSoft(&rec.sp, at.line, index, rec.soft)
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
		lc.line += int64(bytes.Count(lc.raw[lc.off:off], nl))
		lc.off = off
	}
	return pos{lc.at.off + int64(off), lc.line}
}

// traceRecord accumulates one span of a trace format before it becomes a
// span.Span. The attribute conventions (OpenTelemetry semantic conventions,
// OpenTracing tags, Envoy) are shared by all three formats, so that the
// same facts give the same span whatever the encoding.
type traceRecord struct {
	sp span.Span

	status    span.Status
	statusSet bool
	errFlag   bool
	message   string // status message, error tag text, exception type/message

	httpCode, grpcCode int
	hasHTTP, hasGRPC   bool
	timeout            bool // an attribute said so outright

	peer     []byte
	peerRank int // lower wins: see addAttr

	weightSet  bool
	traceState string

	hop    string
	hopSet bool

	// codeText is a status code that is not a number tailscope knows
	// (see codes.go); errType the error.type, which stands for it when
	// no code is given.
	codeText, errType string
	// grpcNamed: the gRPC code was a name other than OK (UNAVAILABLE),
	// which says the call failed.
	grpcNamed bool
	// soft are the values tailscope could not read: the span is kept
	// without them (Stats.Ignored).
	soft []softErr
	// attrs are the span's own scalar attributes (tags), in input order;
	// the emit puts its resource's (process, local endpoint) before them
	// into sp.Attrs.
	attrs []span.Attr
}

func (r *traceRecord) reset() {
	*r = traceRecord{soft: r.soft[:0], attrs: r.attrs[:0], peer: r.peer[:0]}
}

// keepAttr records a scalar attribute for span.Span.Attrs (see attrKept).
func (r *traceRecord) keepAttr(in *interner, key string, v []byte) {
	if attrKept(key) {
		r.attrs = append(r.attrs, span.Attr{Key: in.get([]byte(key)), Value: in.get(v)})
	}
}

// attrKept says which attributes become span.Span.Attrs: every scalar one
// a span or its resource carries, whether or not a field of the span took
// it too (a status code is both the span's Code and something the tail may
// concentrate on), except those that restate what one format writes as a
// structural field and another as an attribute — the service (OTLP's
// service.name; Jaeger's serviceName), the kind (Jaeger's span.kind tag;
// OTLP's kind) and the outcome (error, otel.status_code and
// otel.status_description tags; OTLP's status). So the same span gives the
// same Attrs from OTLP, Jaeger or Zipkin, and attribution, which compares
// failed attempts with the rest, is not handed the failure itself as an
// attribute.
func attrKept(key string) bool {
	switch key {
	case "", "service.name", "span.kind", "error", "otel.status_code", "otel.status_description":
		return false
	}
	return true
}

// ignore records a value that could not be read; the span goes on.
func (r *traceRecord) ignore(field string, err error) {
	r.soft = append(r.soft, softErr{field, err.Error()})
}

// setPeer keeps the most specific peer name seen, in the record's own
// buffer (reused from span to span: no allocation per span).
func (r *traceRecord) setPeer(v []byte, rank int) {
	if len(v) > 0 && (len(r.peer) == 0 || rank < r.peerRank) {
		r.peer, r.peerRank = append(r.peer[:0], v...), rank
	}
}

// addAttr applies one span attribute or tag. v is the value's text (a
// string unescaped, a number or boolean literal); str says whether it was
// a JSON string. Keys it does not know are ignored. A value it cannot
// read for a key it knows is recorded (ignore) and the span kept: an
// optional attribute never costs the span.
func (r *traceRecord) addAttr(key string, v []byte, str bool, hopAttr string) {
	if hopAttr != "" && key == hopAttr {
		r.hop, r.hopSet = string(v), true
	}
	switch key {
	case "http.status_code", "http.response.status_code":
		if n, err := attrInt(key, v); err == nil {
			r.httpCode, r.hasHTTP = n, true
			return
		}
		// "503 Service Unavailable", or no number at all (ECONNRESET).
		switch c, to, text := parseCode(v); {
		case text != nil:
			r.codeText = string(text)
			r.timeout = r.timeout || to
		case c >= 100 && c < 600:
			r.httpCode, r.hasHTTP = c, true
		default:
			r.ignore("code", fmt.Errorf("%s: want an HTTP status, got %q", key, shortValue(v)))
		}
	case "rpc.grpc.status_code", "grpc.status_code":
		n, err := attrInt(key, v)
		if err != nil {
			c, to, text, named := parseCodeNamed(v)
			switch {
			case text != nil:
				r.codeText = string(text)
				r.timeout = r.timeout || to
				return
			case c >= 100 && c < 600 && !r.hasHTTP:
				// "HTTP 503" where a gRPC code was expected: no gRPC
				// code is that large.
				r.httpCode, r.hasHTTP = c, true
				return
			}
			n, r.grpcNamed = c, named && c != 0
		}
		r.grpcCode, r.hasGRPC = n, true
	case "error.type":
		if len(v) > 0 {
			r.errFlag = true
			if isTimeoutWord(v) {
				r.timeout = true
			}
			if t := codeTextOf(v); len(t) > 0 && r.errType == "" {
				r.errType = string(t)
			}
		}
	case "otel.status_code":
		switch strings.ToUpper(string(v)) {
		case "ERROR":
			r.status, r.statusSet = span.Error, true
		case "OK":
			r.status, r.statusSet = span.OK, true
		case "UNSET", "":
		default:
			r.ignore(key, fmt.Errorf("%s: want OK, ERROR or UNSET, got %q", key, shortValue(v)))
		}
	case "otel.status_description":
		r.message = string(v)
	case "response_flags", "envoy.response_flags", "upstream.response_flags":
		// Envoy's flags are comma-separated codes; UT is "upstream request
		// timeout", the router's per-try or route timeout.
		for _, f := range strings.Split(string(v), ",") {
			if strings.TrimSpace(f) == "UT" {
				r.timeout = true
			}
		}
	case "http.request.resend_count", "http.resend_count", "grpc-previous-rpc-attempts", "grpc.previous_rpc_attempts", "retry_count", "previous_attempts":
		// Counts of earlier tries (absent or 0 on the first): the attempt
		// is one more.
		n, err := attrInt(key, v)
		if err != nil || n < 0 || n >= math.MaxInt32 {
			r.ignore("attempt", fmt.Errorf("%s: want a count ≥ 0, got %q", key, shortValue(v)))
			return
		}
		r.sp.Attempt, r.sp.AttemptSet = n+1, true
	case "retry.attempt", "x-envoy-attempt-count", "attempt", "retry_attempt", "attempt_number", "try", "try_number":
		// The number as logged: whether it counts from 0 or 1 is decided
		// from a call's siblings (span.AttemptIndex).
		n, err := attrInt(key, v)
		if err != nil || n < 0 || n > math.MaxInt32 {
			r.ignore("attempt", fmt.Errorf("%s: want an attempt number ≥ 0, got %q", key, shortValue(v)))
			return
		}
		r.sp.Attempt, r.sp.AttemptSet = n, true
	case "peer.service":
		r.setPeer(v, 1)
	case "server.address":
		r.setPeer(v, 2)
	case "net.peer.name":
		r.setPeer(v, 3)
	case "timeout_ms", "rpc.timeout_ms":
		x, err := strconv.ParseFloat(string(v), 64)
		if err != nil || x < 0 || !finiteNs(x*1e6) {
			r.ignore("timeout_ms", fmt.Errorf("%s: want milliseconds ≥ 0, got %q", key, shortValue(v)))
			return
		}
		r.sp.TimeoutInForce = int64(math.Round(x * 1e6))
	case "sampling.weight", "sampling.adjusted_count", "adjusted_count":
		x, err := strconv.ParseFloat(string(v), 64)
		if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
			r.ignore("weight", fmt.Errorf("%s: want a number ≥ 0, got %q", key, shortValue(v)))
			return
		}
		r.sp.Weight, r.weightSet = x, true
	}
}

// exceptionAttr applies one attribute of an "exception" event: its type
// or message is what tells a timeout (java.net.SocketTimeoutException,
// context deadline exceeded) when the status message does not. It counts
// only on a span whose status is an error, like the status message.
func (r *traceRecord) exceptionAttr(key string, v []byte) {
	if (key == "exception.type" || key == "exception.message") && isTimeoutWord(v) && !isTimeoutWord([]byte(r.message)) {
		r.message = string(v)
	}
}

// grpcCodeNames are the gRPC status names that matter to tailscope, for
// tracers that record the name instead of the number.
var grpcCodeNames = map[string]int{
	"OK": 0, "CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3, "DEADLINE_EXCEEDED": 4,
	"NOT_FOUND": 5, "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8,
	"FAILED_PRECONDITION": 9, "ABORTED": 10, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12,
	"INTERNAL": 13, "UNAVAILABLE": 14, "DATA_LOSS": 15, "UNAUTHENTICATED": 16,
}

// attrInt reads an integer attribute given as a number, a numeric string,
// or an integral float ("200.0", as some exporters write every number).
func attrInt(key string, v []byte) (int, error) {
	s := strings.TrimSpace(string(v))
	if n, err := strconv.Atoi(s); err == nil {
		return n, nil
	}
	if x, err := strconv.ParseFloat(s, 64); err == nil && x == math.Trunc(x) && math.Abs(x) < 1e9 {
		return int(x), nil
	}
	return 0, fmt.Errorf("%s: want an integer, got %q", key, v)
}

// finish derives the span's outcome from what the record said.
//
// A timeout is what the span says outright (Envoy UT, error.type), gRPC
// DEADLINE_EXCEEDED, HTTP 408/504, or an error whose message names a
// timeout or deadline. A timed-out span is an error. HTTP 5xx without an
// error status is left as the tracer recorded it: OpenTelemetry leaves a
// server's 4xx unset on purpose, and a format reader must not second-guess
// the instrumentation.
func (r *traceRecord) finish(in *interner) {
	sp := &r.sp
	switch {
	case r.hasHTTP:
		sp.Code = r.httpCode
	case r.hasGRPC:
		sp.Code = r.grpcCode
	}
	if sp.Code == 0 {
		text := r.codeText
		if text == "" {
			text = r.errType // the error kind stands for the code
		}
		if text != "" {
			sp.CodeText = in.get([]byte(text))
		}
	}
	if r.statusSet {
		sp.Status = r.status
	}
	if r.errFlag {
		sp.Status = span.Error
	}
	if !r.statusSet && ((r.codeText != "" && sp.Code == 0 && !okWord([]byte(r.codeText))) || (r.grpcNamed && !r.hasHTTP)) {
		// No status: an error kind or a gRPC error name where the code
		// should be says it failed.
		sp.Status = span.Error
	}
	to := r.timeout ||
		(r.hasHTTP && (r.httpCode == 408 || r.httpCode == 504)) ||
		(r.hasGRPC && r.grpcCode == 4) ||
		(sp.Status == span.Error && r.message != "" && isTimeoutWord([]byte(r.message)))
	if to {
		sp.Timeout = true
		sp.Status = span.Error
	}
	if len(r.peer) > 0 {
		sp.Peer = in.get(r.peer)
	}
	if !r.weightSet && r.traceState != "" {
		if wgt, ok := weightFromTraceState(r.traceState); ok {
			sp.Weight = wgt
		}
	}
	if r.hopSet {
		sp.Hop = in.get([]byte(r.hop))
	}
}

// weightFromTraceState reads the OpenTelemetry sampling threshold of a W3C
// tracestate (the "ot" member's "th" key, up to 14 hex digits, trailing
// zeros omitted) and returns the adjusted count 2^56 / (2^56 − threshold):
// a span kept with probability p stands for 1/p spans.
func weightFromTraceState(ts string) (float64, bool) {
	for _, member := range strings.Split(ts, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(member), "=")
		if !ok || k != "ot" {
			continue
		}
		for _, kv := range strings.Split(v, ";") {
			th, ok := strings.CutPrefix(kv, "th:")
			if !ok {
				continue
			}
			if th == "" || len(th) > 14 {
				return 0, false
			}
			digits := th + strings.Repeat("0", 14-len(th))
			t, err := strconv.ParseUint(digits, 16, 64)
			if err != nil {
				return 0, false
			}
			const full = float64(uint64(1) << 56)
			return full / (full - float64(t)), true
		}
	}
	return 0, false
}

// normID turns a trace or span id into lowercase hex of width hex digits
// (32 for traces, 16 for spans), so that the same span reads the same
// from every format: hex in any case is lowercased and left-padded with
// zeros (Jaeger drops leading zeros, 64-bit trace ids are 16 digits where
// OTLP has 32); protojson's base64 of 16 or 8 bytes is decoded to hex.
// An all-zero id is the protocol's "no id". Anything else is kept as it is.
func normID(v []byte, width int) string {
	if len(v) == 0 {
		return ""
	}
	if isHex(v) {
		if allZero(v) {
			return ""
		}
		s := strings.ToLower(string(v))
		if len(s) < width {
			s = strings.Repeat("0", width-len(s)) + s
		}
		return s
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(string(v))
		if err == nil && (len(b) == 16 || len(b) == 8) {
			h := hex.EncodeToString(b)
			if allZero([]byte(h)) {
				return ""
			}
			if len(h) < width {
				h = strings.Repeat("0", width-len(h)) + h
			}
			return h
		}
	}
	return string(v)
}

func isHex(v []byte) bool {
	for _, c := range v {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func allZero(v []byte) bool {
	for _, c := range v {
		if c != '0' {
			return false
		}
	}
	return true
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
		if !finiteNs(x) {
			return 0, fmt.Errorf("%s: %s µs is out of range", name, s)
		}
		return int64(math.Round(x)), nil
	}
	if isDuration {
		if d, err := time.ParseDuration(s); err == nil {
			return int64(d), nil
		}
	} else if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixNano(), nil
	}
	return 0, fmt.Errorf("%s: want microseconds, got %q", name, v)
}

// objectMembers walks an in-memory JSON object with the scanner, giving
// each member's key as a string (copied: the scanner reuses its buffers).
func objectMembers(raw []byte, f func(key string, k kind, v []byte) error) error {
	sc := scanner{buf: raw}
	return sc.object(func(key []byte, k kind, v []byte) error {
		return f(string(key), k, v)
	})
}

// arrayElems walks an in-memory JSON array with the scanner. Elements come
// as raw text for objects and arrays, unescaped text for strings; off is
// the element's byte offset in raw.
func arrayElems(raw []byte, f func(k kind, v []byte, off int) error) error {
	sc := scanner{buf: raw}
	sc.ws()
	if !sc.eat('[') {
		return errors.New("not a JSON array")
	}
	sc.ws()
	if sc.eat(']') {
		return nil
	}
	for {
		sc.ws()
		off := sc.pos
		k, v, err := sc.value()
		if err != nil {
			return err
		}
		if err := f(k, v, off); err != nil {
			return err
		}
		sc.ws()
		if sc.eat(',') {
			continue
		}
		if sc.eat(']') {
			return nil
		}
		return errors.New("missing ',' or ']'")
	}
}

// kindName names a scanner kind for messages.
func kindName(k kind) string {
	return [...]string{kNull: "null", kBool: "a boolean", kNumber: "a number", kString: "a string", kObject: "an object", kArray: "an array"}[k]
}
