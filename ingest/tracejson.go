package ingest

// Shared machinery of the three trace JSON formats (OTLP, Jaeger, Zipkin).
//
// Trace exports are often one JSON document holding everything (a 2 GB OTLP
// file is one object), so these decoders never load a document whole. A
// jsonWalker walks the document's outer structure with encoding/json's
// Decoder.Token and decodes only the repeated leaves — one span, or one
// Jaeger trace — as raw bytes, which the small scanner of scan.go then reads
// field by field. Memory is bounded by the largest span (or trace), not by
// the file.
//
// A syntax error ends what encoding/json can read of a document. The walker
// then records one positioned skip and resynchronises at the next line that
// starts with '{' or '[' in column 0: for one-document-per-line files (the
// collector's file exporter) only the broken line is lost; in a
// pretty-printed document the rest of that document is.

import (
	"bufio"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
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

// rewindReader lets the walker hand bytes the old json.Decoder had buffered
// but not used back to a fresh decoder after a syntax error.
type rewindReader struct {
	pending []byte
	br      *bufio.Reader
	err     error // the first I/O error (not io.EOF) met underneath
	// budget, when ≥ 0, is how many more bytes one record may pull in: it
	// keeps a single huge span or trace from being buffered whole before
	// --max-record could reject it.
	budget int64
}

// errRecordBudget is returned by rewindReader.Read when a record has used
// its budget; it is not an I/O error.
var errRecordBudget = errors.New("record over --max-record")

func (r *rewindReader) Read(p []byte) (int, error) {
	if r.budget >= 0 {
		if r.budget == 0 {
			return 0, errRecordBudget
		}
		if int64(len(p)) > r.budget {
			p = p[:r.budget]
		}
		n, err := r.read(p)
		r.budget -= int64(n)
		return n, err
	}
	return r.read(p)
}

func (r *rewindReader) read(p []byte) (int, error) {
	if len(r.pending) > 0 {
		n := copy(p, r.pending)
		r.pending = r.pending[n:]
		return n, nil
	}
	n, err := r.br.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

// skipLine drops bytes up to and including the next newline and returns
// how many were dropped; eof is true when the input ended first.
func (r *rewindReader) skipLine() (n int64, eof bool) {
	for len(r.pending) > 0 {
		c := r.pending[0]
		r.pending = r.pending[1:]
		n++
		if c == '\n' {
			return n, false
		}
	}
	for {
		chunk, err := r.br.ReadSlice('\n')
		n += int64(len(chunk))
		switch err {
		case nil:
			return n, false
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			return n, true
		default:
			if r.err == nil {
				r.err = err
			}
			return n, true
		}
	}
}

// peekByte returns the next byte without consuming it.
func (r *rewindReader) peekByte() (byte, bool) {
	if len(r.pending) > 0 {
		return r.pending[0], true
	}
	b, err := r.br.Peek(1)
	if err != nil {
		if err != io.EOF && r.err == nil {
			r.err = err
		}
		return 0, false
	}
	return b[0], true
}

// jsonWalker streams one input of a trace JSON format.
type jsonWalker struct {
	src  *Source
	rr   *rewindReader
	dec  *json.Decoder
	base int64 // input bytes consumed by decoders before this one
	// index counts the spans met so far, so that the last one is span
	// number index (1-based) in messages.
	index   int64
	intern  interner
	hopAttr string
	// skipPast is the offset of a record rejected as too long: resync
	// drops lines until it is behind.
	skipPast int64
}

func newWalker(src *Source) *jsonWalker {
	w := &jsonWalker{src: src, rr: &rewindReader{br: src.R, budget: -1}, hopAttr: src.Options().HopAttr()}
	w.dec = json.NewDecoder(w.rr)
	return w
}

// offset is the position in the input of the decoder's next byte.
func (w *jsonWalker) offset() int64 { return w.base + w.dec.InputOffset() }

// run reads top-level documents with doc until the input ends. Syntax
// errors become skips followed by a resync; I/O errors end the run.
func (w *jsonWalker) run(doc func() error) error {
	for {
		err := doc()
		if err == nil {
			continue
		}
		if w.rr.err != nil {
			return fmt.Errorf("near byte %d: %w", w.offset(), w.rr.err)
		}
		if err == io.EOF {
			return nil
		}
		reason, at := reasonBadJSON, w.offset()
		var se *json.SyntaxError
		switch {
		case errors.Is(err, errRecordBudget):
			reason = reasonTooLong
			w.skipPast = at + 1 // resync must leave the line the record started on
			err = fmt.Errorf("a record over %d bytes (raise with --max-record)", w.src.Options().MaxRecord)
		case errors.As(err, &se):
			at = w.base + se.Offset
		case errors.Is(err, io.ErrUnexpectedEOF):
			reason = reasonTruncated
		}
		w.src.Skip(0, w.index+1, reason, fmt.Sprintf("at byte %d: %v; the rest of this document cannot be read", at, err))
		if !w.resync() {
			if w.rr.err != nil {
				return fmt.Errorf("near byte %d: %w", w.offset(), w.rr.err)
			}
			return nil
		}
	}
}

// resync drops the rest of the broken line and any following line that
// does not start a JSON value in column 0, then starts a fresh decoder.
func (w *jsonWalker) resync() bool {
	pos := w.offset()
	rest, _ := io.ReadAll(w.dec.Buffered())
	w.rr.pending = append(rest, w.rr.pending...)
	for {
		n, eof := w.rr.skipLine()
		pos += n
		if eof {
			return false
		}
		if pos <= w.skipPast {
			continue // still before the end of the too-long record's first line
		}
		if c, ok := w.rr.peekByte(); !ok {
			return false
		} else if c == '{' || c == '[' {
			break
		}
	}
	w.base = pos
	w.dec = json.NewDecoder(w.rr)
	return true
}

// peek returns the first byte of the next value, or ok=false at the end of
// the input or of the enclosing container.
func (w *jsonWalker) peek() (byte, bool) {
	if !w.dec.More() {
		return 0, false
	}
	var b [1]byte
	n, _ := w.dec.Buffered().Read(b[:])
	return b[0], n == 1
}

// key reads an object key.
func (w *jsonWalker) key() (string, error) {
	t, err := w.dec.Token()
	if err != nil {
		return "", err
	}
	k, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("want an object key, got %v", t)
	}
	return k, nil
}

// skipValue skips the next value, however large, without holding it.
func (w *jsonWalker) skipValue() error {
	depth := 0
	for {
		t, err := w.dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// enter opens the next value when it is the container want. A null gives
// ok=false with no complaint; any other value is skipped and reported as a
// bad document under name.
func (w *jsonWalker) enter(want json.Delim, name string) (bool, error) {
	t, err := w.dec.Token()
	if err != nil {
		return false, err
	}
	if t == want {
		return true, nil
	}
	if t == nil {
		return false, nil
	}
	at := w.offset()
	if d, ok := t.(json.Delim); ok && (d == '{' || d == '[') {
		// Skip the rest of the container we just opened.
		depth := 1
		for depth > 0 {
			t, err := w.dec.Token()
			if err != nil {
				return false, err
			}
			switch t {
			case json.Delim('{'), json.Delim('['):
				depth++
			case json.Delim('}'), json.Delim(']'):
				depth--
			}
		}
	}
	what := map[json.Delim]string{'{': "an object", '[': "an array"}[want]
	w.src.Skip(0, w.index+1, reasonBadDocument, fmt.Sprintf("near byte %d: %s: want %s, got %s", at, name, what, tokenKind(t)))
	return false, nil
}

func tokenKind(t json.Token) string {
	switch v := t.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

// array calls elem for each element of the array that comes next.
func (w *jsonWalker) array(name string, elem func() error) error {
	ok, err := w.enter('[', name)
	if !ok || err != nil {
		return err
	}
	for w.dec.More() {
		if err := elem(); err != nil {
			return err
		}
	}
	_, err = w.dec.Token() // ]
	return err
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
	for w.dec.More() {
		k, err := w.key()
		if err != nil {
			return err
		}
		if err := member(k); err != nil {
			return err
		}
	}
	_, err := w.dec.Token() // }
	return err
}

// raw decodes the next value as raw bytes and reports where it started.
func (w *jsonWalker) raw() ([]byte, int64, error) {
	var m json.RawMessage
	// The decoder may already hold up to a buffer of read-ahead: allow
	// that on top of the record's own limit.
	w.rr.budget = int64(w.src.Options().MaxRecord) + 1<<16
	err := w.dec.Decode(&m)
	w.rr.budget = -1
	if err != nil {
		return nil, 0, err
	}
	return m, w.offset() - int64(len(m)), nil
}

// tooLong reports (and skips) a record over --max-record.
func (w *jsonWalker) tooLong(b []byte, at int64) bool {
	if len(b) <= w.src.Options().MaxRecord {
		return false
	}
	w.src.Skip(0, w.index, reasonTooLong, fmt.Sprintf("at byte %d: %d bytes, over %d (raise with --max-record)", at, len(b), w.src.Options().MaxRecord))
	return true
}

// emit hands a finished span on, counting the values it lost when it is
// used.
func (w *jsonWalker) emit(rec *traceRecord, index int64) {
	if err := startProblem(&rec.sp); err != nil {
		rec.ignore("start", err) // the duration stands on its own
		rec.sp.Start = 0
	}
	w.src.emitSoft(&rec.sp, 0, index, rec.soft)
}

// skipSpan records a bad span at its index and byte offset.
func (w *jsonWalker) skipSpan(index, at int64, reason, detail string) {
	w.src.Skip(0, index, reason, fmt.Sprintf("at byte %d: %s", at, detail))
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

	peer     string
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
}

func (r *traceRecord) reset() { *r = traceRecord{soft: r.soft[:0]} }

// ignore records a value that could not be read; the span goes on.
func (r *traceRecord) ignore(field string, err error) {
	r.soft = append(r.soft, softErr{field, err.Error()})
}

// setPeer keeps the most specific peer name seen.
func (r *traceRecord) setPeer(v string, rank int) {
	if v != "" && (r.peer == "" || rank < r.peerRank) {
		r.peer, r.peerRank = v, rank
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
			if text != nil {
				r.codeText = string(text)
				r.timeout = r.timeout || to
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
	case "http.request.resend_count", "http.resend_count", "grpc-previous-rpc-attempts", "grpc.previous_rpc_attempts":
		// Counts of earlier tries (absent or 0 on the first): the attempt
		// is one more.
		n, err := attrInt(key, v)
		if err != nil || n < 0 || n >= math.MaxInt32 {
			r.ignore("attempt", fmt.Errorf("%s: want a count ≥ 0, got %q", key, shortValue(v)))
			return
		}
		r.sp.Attempt, r.sp.AttemptSet = n+1, true
	case "retry.attempt", "x-envoy-attempt-count", "attempt", "retry_attempt", "attempt_number":
		// The number as logged: whether it counts from 0 or 1 is decided
		// from a call's siblings (span.AttemptIndex).
		n, err := attrInt(key, v)
		if err != nil || n < 0 || n > math.MaxInt32 {
			r.ignore("attempt", fmt.Errorf("%s: want an attempt number ≥ 0, got %q", key, shortValue(v)))
			return
		}
		r.sp.Attempt, r.sp.AttemptSet = n, true
	case "peer.service":
		r.setPeer(string(v), 1)
	case "server.address":
		r.setPeer(string(v), 2)
	case "net.peer.name":
		r.setPeer(string(v), 3)
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
	if r.peer != "" {
		sp.Peer = in.get([]byte(r.peer))
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
