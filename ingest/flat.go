package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// The flat span schema (docs/DESIGN.md §3) is shared by JSON lines, CSV, Parquet
// and Arrow: one record per span with the canonical field names below.
// Aliases cover the spellings met in the wild; --map FIELD=KEY adds more.

type field uint8

const (
	fNone field = iota
	fTraceID
	fSpanID
	fParentID
	fService
	fName
	fKind
	fHop
	fStart    // unix ns, or RFC 3339
	fStartMs  // unix ms
	fStartUs  // unix µs
	fStartS   // unix seconds
	fEnd      // unix ns, or RFC 3339
	fDuration // Go duration string ("1.5s") or integer ns
	fDurationMs
	fDurationUs
	fDurationNs
	fDurationS
	fStatus
	fTimeout // bool: cut by a timeout
	fCode
	fAttempt
	fResendCount // 0-based: attempt = count + 1
	fTimeoutMs   // the timeout in force, ms
	fWeight
	fError     // bool or non-empty string: failed
	fErrorType // "timeout" marks a timeout
	fNested    // an attributes object whose members are fields too
	fPeer      // the remote side of a client span (--hop-by peer)
	fCodeText  // an error kind kept as text (span.CodeText), as export writes it
	fResource  // like fNested, and its attributes are the resource's
)

// FlatFields lists the canonical field names, for --help and --map checks.
var FlatFields = []string{
	"trace_id", "span_id", "parent_id", "service", "name", "kind", "hop",
	"start", "start_ms", "start_us", "start_s", "end", "duration", "duration_ms", "duration_us", "duration_ns", "duration_s",
	"status", "timeout", "code", "attempt", "timeout_ms", "weight", "error", "error_type", "peer", "code_text",
}

var flatKeys = map[string]field{
	"trace_id": fTraceID, "traceId": fTraceID, "traceID": fTraceID, "trace": fTraceID,
	"span_id": fSpanID, "spanId": fSpanID, "spanID": fSpanID,
	"parent_id": fParentID, "parentId": fParentID, "parent_span_id": fParentID, "parentSpanId": fParentID, "parentSpanID": fParentID,
	"service": fService, "service.name": fService, "service_name": fService, "serviceName": fService,
	"name": fName, "operation": fName, "operationName": fName, "span_name": fName,
	"kind": fKind, "span_kind": fKind, "span.kind": fKind,
	"hop":   fHop,
	"start": fStart, "start_time": fStart, "startTimeUnixNano": fStart, "start_ns": fStart, "timestamp": fStart,
	"start_ms": fStartMs, "start_us": fStartUs, "start_s": fStartS,
	"end": fEnd, "end_time": fEnd, "endTimeUnixNano": fEnd, "end_ns": fEnd,
	"duration": fDuration, "duration_ms": fDurationMs, "latency_ms": fDurationMs, "elapsed_ms": fDurationMs,
	"duration_us": fDurationUs, "duration_ns": fDurationNs, "duration_s": fDurationS,
	"status": fStatus, "status_code": fStatus, "otel.status_code": fStatus, "outcome": fStatus,
	"timeout": fTimeout, "timed_out": fTimeout,
	"code": fCode, "http.status_code": fCode, "http.response.status_code": fCode, "rpc.grpc.status_code": fCode, "grpc_code": fCode,
	"attempt": fAttempt, "retry.attempt": fAttempt, "x-envoy-attempt-count": fAttempt, "retry_attempt": fAttempt, "attempt_number": fAttempt,
	"try": fAttempt, "try_number": fAttempt,
	"http.request.resend_count": fResendCount, "http.resend_count": fResendCount, "grpc-previous-rpc-attempts": fResendCount,
	"grpc.previous_rpc_attempts": fResendCount, "retry_count": fResendCount, "previous_attempts": fResendCount,
	"timeout_ms": fTimeoutMs,
	"weight":     fWeight, "sampling.weight": fWeight, "adjusted_count": fWeight,
	"error": fError, "error.type": fErrorType, "error_type": fErrorType,
	"attributes": fNested, "attrs": fNested, "tags": fNested, "labels": fNested,
	"resource": fResource, "resource.attributes": fResource,
	"peer": fPeer, "peer.service": fPeer, "server.address": fPeer,
	"code_text": fCodeText,
}

var canonicalField = map[string]field{}

func init() {
	for _, n := range FlatFields {
		canonicalField[n] = flatKeys[n]
	}
}

// fieldTable resolves input keys to fields, honouring --map.
type fieldTable struct {
	keys    map[string]field
	hopAttr string
}

// ParseMap checks --map FIELD=KEY pairs against the canonical fields.
func ParseMap(pairs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, p := range pairs {
		for _, kv := range strings.Split(p, ",") {
			f, k, ok := strings.Cut(kv, "=")
			f, k = strings.TrimSpace(f), strings.TrimSpace(k)
			if !ok || f == "" || k == "" {
				return nil, fmt.Errorf("--map %q: want FIELD=KEY", kv)
			}
			if _, known := canonicalField[f]; !known {
				return nil, fmt.Errorf("--map %q: unknown field %q (fields: %s)", kv, f, strings.Join(FlatFields, ", "))
			}
			m[f] = k
		}
	}
	return m, nil
}

func newFieldTable(opt *record.Options) *fieldTable {
	t := &fieldTable{keys: flatKeys, hopAttr: opt.HopAttr()}
	if len(opt.Map) > 0 {
		t.keys = make(map[string]field, len(flatKeys)+len(opt.Map))
		mapped := map[string]bool{}
		for _, k := range opt.Map {
			mapped[k] = true
		}
		for k, f := range flatKeys {
			if !mapped[k] {
				t.keys[k] = f
			}
		}
		// A mapped field is read only from its mapped key.
		for f, k := range opt.Map {
			for k2, f2 := range t.keys {
				if f2 == canonicalField[f] && k2 != k {
					delete(t.keys, k2)
				}
			}
			t.keys[k] = canonicalField[f]
		}
	}
	return t
}

// flatRecord accumulates the fields of one record before they become a span.
type flatRecord struct {
	sp                                    span.Span
	hasDur, hasStart, hasEnd, hasStatus   bool
	end                                   int64
	errFlag, errTimeout, codeSet, timeout bool
	status                                span.Status
	// lazySvc and lazyName are the text of service and name while the
	// fast path defers interning them (see lazy and materialize).
	lazySvc, lazyName []byte
	// lazy lets the fast path defer service and name: when hops are not
	// named by them, only the spans that go on need them.
	lazy   bool
	intern *record.Interner
	// block is the buffer the record's text lies in when ids may alias
	// it (Options.Borrowed; see idString).
	block []byte
	// keys caches the fields of the keys seen at each position (lookup).
	keys []keySlot
	// codeText is a code kept as text (see codes.go); errType the
	// error.type, which stands for it when no code is given.
	codeText, errType string
	// codeNamed: the code is a gRPC name other than OK (UNAVAILABLE),
	// which says the call failed.
	codeNamed bool
	// badTime is an unreadable start or end: only an error when the
	// duration has to come from them.
	badTime error
	// soft are the values of optional fields that could not be read: the
	// span is kept without them, and they are counted (Stats.Ignored).
	soft []record.SoftErr
	// durField is the field the duration came from in a unit it names
	// (fNone for a Go duration string, which names its own), for the
	// unit checks (units.go), which units gathers when it is set; durKey
	// is that field's key in the input, found only when probing (probe).
	durField field
	units    *unitStats
	durKey   string
	probe    bool
	// at gathers the attributes (attrs.go): the fields no span field
	// took, and the members of attribute objects.
	at record.AttrSet
	// top marks the fields the line set itself (bit fieldGroup(f)):
	// a member of an attribute object does not override them.
	top uint64
	// nested are the line's attribute objects, decoded after its own
	// members (decodeObject).
	nested []nestedObj
}

func (r *flatRecord) reset() {
	in, b, k, l, soft, u, p, at, n := r.intern, r.block, r.keys, r.lazy, r.soft[:0], r.units, r.probe, r.at, r.nested[:0]
	at.Reset()
	*r = flatRecord{intern: in, block: b, keys: k, lazy: l, soft: soft, units: u, probe: p, at: at, nested: n}
}

// fieldGroup is the bit of r.top that stands for f: the fields that fill
// the same part of a span share one.
func fieldGroup(f field) uint64 {
	switch f {
	case fStartMs, fStartUs, fStartS:
		f = fStart
	case fDurationMs, fDurationUs, fDurationNs, fDurationS:
		f = fDuration
	case fResendCount:
		f = fAttempt
	}
	return 1 << (f & 63)
}

// ignore records a value of an optional field that could not be read.
func (r *flatRecord) ignore(f field, err error) {
	r.soft = append(r.soft, record.SoftErr{Field: fieldName(f), Detail: err.Error()})
}

// fieldName is the canonical name of a field, for messages and counts.
func fieldName(f field) string {
	switch f {
	case fResendCount:
		return "attempt"
	case fNested, fResource:
		return "attributes"
	case fStartMs, fStartUs, fStartS:
		return "start"
	}
	for _, n := range FlatFields {
		if canonicalField[n] == f {
			return n
		}
	}
	return "field"
}

// required reports whether a bad value of f costs the span: the duration
// and the hop (start and end only when the duration comes from them,
// which finish decides).
func required(f field) bool {
	switch f {
	case fDuration, fDurationMs, fDurationUs, fDurationNs, fDurationS, fHop:
		return true
	}
	return false
}

// materialize interns the service and name the fast path deferred.
func (r *flatRecord) materialize() {
	if r.lazySvc != nil {
		r.sp.Service, r.lazySvc = r.intern.Get(r.lazySvc), nil
	}
	if r.lazyName != nil {
		r.sp.Name, r.lazyName = r.intern.Get(r.lazyName), nil
	}
}

// set stores one value. str says whether the input gave a string (CSV
// always does); v is the text of the value.
func (r *flatRecord) set(f field, str bool, v []byte) error {
	if !str && (len(v) == 4 && string(v) == "null") {
		return nil
	}
	sp := &r.sp
	switch f {
	case fTraceID:
		sp.TraceID = r.idString(v)
	case fSpanID:
		sp.SpanID = r.idString(v)
	case fParentID:
		sp.ParentID = r.idString(v)
	case fService:
		sp.Service, r.lazySvc = r.intern.Get(v), nil
	case fName:
		sp.Name, r.lazyName = r.intern.Get(v), nil
	case fKind:
		sp.Kind = record.NormKind(v)
	case fHop:
		sp.Hop = r.intern.Get(v)
	case fPeer:
		sp.Peer = r.intern.Get(v)
	case fStart, fStartMs, fStartUs, fStartS, fEnd:
		t, err := parseTime(f, str, v)
		if err != nil {
			// Needed only when the duration must come from start and
			// end: finish decides.
			if r.badTime == nil {
				r.badTime = err
			}
			return nil
		}
		if f == fEnd {
			r.end, r.hasEnd = t, true
		} else {
			sp.Start, r.hasStart = t, true
		}
	case fDuration, fDurationMs, fDurationUs, fDurationNs, fDurationS:
		d, err := parseDuration(f, str, v)
		if err != nil {
			return err
		}
		sp.Duration, r.hasDur = d, true
		r.durField = f
		if f == fDuration && !plainInt(v) {
			r.durField = fNone // a Go duration names its unit
		}
	case fStatus:
		st, to, code, text, ok := record.ParseStatus(v)
		if !ok {
			r.ignore(f, fmt.Errorf("status %q: want ok, error, unset, an HTTP or gRPC status or an error kind", record.ShortValue(v)))
			return nil
		}
		r.status, r.hasStatus = st, true
		r.timeout = r.timeout || to
		if code != 0 && !r.codeSet {
			sp.Code = code
		}
		if text != nil && !r.codeSet && r.codeText == "" {
			r.codeText = r.intern.Get(text)
		}
	case fTimeout:
		b, err := record.ParseBool(v)
		if err != nil {
			r.ignore(f, fmt.Errorf("timeout: %v", err))
			return nil
		}
		r.timeout = r.timeout || b
	case fCode:
		c, to, text, named := record.ParseCodeNamed(v)
		r.codeNamed = named && c != 0
		if text != nil {
			// Not a number tailscope knows: an error kind, kept as text.
			r.codeText, r.codeSet = r.intern.Get(text), true
			sp.Code = 0
		} else if len(v) > 0 {
			sp.Code, r.codeSet = c, true
			r.codeText = ""
		}
		r.errTimeout = r.errTimeout || to
	case fAttempt, fResendCount:
		n, err := atoiAlloc(v)
		if err != nil || n < 0 || n > math.MaxInt32 {
			r.ignore(f, fmt.Errorf("attempt: want a non-negative integer, got %q", record.ShortValue(v)))
			return nil
		}
		if f == fResendCount {
			n++
		}
		sp.Attempt, sp.AttemptSet = n, true
	case fTimeoutMs:
		x, err := atofAlloc(v)
		if err != nil || !record.FiniteNs(x*1e6) || x < 0 {
			r.ignore(f, fmt.Errorf("timeout_ms: want milliseconds ≥ 0, got %q", record.ShortValue(v)))
			return nil
		}
		sp.TimeoutInForce = int64(math.Round(x * 1e6))
	case fWeight:
		x, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			r.ignore(f, fmt.Errorf("weight: want a number ≥ 0, got %q", record.ShortValue(v)))
			return nil
		}
		sp.Weight = x
	case fError:
		if str {
			// An error tag's presence means failure, whatever its text,
			// except an explicit "false".
			if !strings.EqualFold(string(v), "false") {
				r.errFlag = true
			}
		} else if b, err := record.ParseBool(v); err == nil {
			r.errFlag = r.errFlag || b
		}
	case fCodeText:
		if t := record.CodeTextOf(v); len(t) > 0 {
			r.codeText = r.intern.Get(t)
		}
	case fErrorType:
		if len(v) > 0 {
			r.errFlag = true
			if t := record.CodeTextOf(v); len(t) > 0 && r.errType == "" {
				r.errType = r.intern.Get(t)
			}
		}
		if record.IsTimeoutWord(v) {
			r.errTimeout = true
		}
	}
	return nil
}

// finish validates the record and fills derived fields.
func (r *flatRecord) finish() (reason, detail string) {
	sp := &r.sp
	if !r.hasDur {
		if r.badTime != nil {
			return "bad value", r.badTime.Error()
		}
		if r.hasEnd && r.hasStart {
			if r.end < sp.Start {
				return "end before start", fmt.Sprintf("end %d < start %d", r.end, sp.Start)
			}
			sp.Duration = r.end - sp.Start
		} else {
			return "missing duration", "no duration, duration_ms/us/ns, or start and end"
		}
	}
	if r.badTime != nil {
		r.soft = append(r.soft, record.SoftErr{Field: "start", Detail: r.badTime.Error()})
	} else if err := record.StartProblem(sp); err != nil {
		// The duration stands on its own: the start is what is lost.
		r.soft = append(r.soft, record.SoftErr{Field: "start", Detail: err.Error()})
		sp.Start = 0
	}
	sp.Timeout = r.timeout || r.errTimeout
	if r.codeText == "" && sp.Code == 0 && r.errType != "" {
		r.codeText = r.errType // the error kind stands for the code
	}
	sp.CodeText = r.codeText
	switch {
	case r.hasStatus:
		sp.Status = r.status
		if r.errFlag || sp.Timeout {
			sp.Status = span.Error
		}
	case r.errFlag || sp.Timeout:
		sp.Status = span.Error
	case sp.Code >= 500 || sp.Code == 429:
		sp.Status = span.Error
	case r.codeText != "" && !record.OkWord([]byte(r.codeText)), r.codeNamed:
		// No status: an error kind or a gRPC error name in the code
		// field says it failed.
		sp.Status = span.Error
	}
	sp.Attrs = r.at.Done()
	if r.units != nil {
		r.units.record(r)
	}
	return "", ""
}

// hasDurationColumn reports whether a table's columns give a duration:
// one in any unit, or a start and an end.
func hasDurationColumn(have map[field]bool) bool {
	return have[fDuration] || have[fDurationMs] || have[fDurationUs] || have[fDurationNs] || have[fDurationS] ||
		(have[fEnd] && (have[fStart] || have[fStartMs] || have[fStartUs] || have[fStartS]))
}

// plainInt reports whether v is an integer with no unit.
func plainInt(v []byte) bool {
	_, ok := record.AtoiBytes(v)
	return ok
}

// parseDuration reads a duration into ns. Numbers are in the unit the field
// names; "duration" takes a Go duration string or an integer of ns.
func parseDuration(f field, str bool, v []byte) (int64, error) {
	var name string
	var scale float64
	switch f {
	case fDuration:
		name = "duration"
	case fDurationMs:
		name, scale = "duration_ms", 1e6
	case fDurationUs:
		name, scale = "duration_us", 1e3
	case fDurationS:
		name, scale = "duration_s", 1e9
	default:
		name, scale = "duration_ns", 1
	}
	if f != fDuration {
		// Fast path, no allocation: plain decimals (what loggers write).
		if n, ok := record.AtoiBytes(v); ok {
			x := float64(n) * scale
			if record.FiniteNs(x) {
				if scale == 1 {
					return n, nil
				}
				return int64(math.Round(x)), nil
			}
		} else if x, ok := atofBytes(v); ok {
			if x *= scale; record.FiniteNs(x) {
				return int64(math.Round(x)), nil
			}
		}
	}
	s := string(v)
	if f == fDuration {
		if d, err := time.ParseDuration(s); err == nil {
			return int64(d), nil
		}
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, nil
		}
		return 0, fmt.Errorf("bad %s %q: want a Go duration like 1.5s or integer nanoseconds", name, s)
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		x := float64(n) * scale
		if !record.FiniteNs(x) {
			return 0, fmt.Errorf("bad %s %q: out of range", name, s)
		}
		if scale == 1 {
			return n, nil
		}
		return int64(math.Round(x)), nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("bad %s %q: want a number", name, s)
	}
	x *= scale
	if !record.FiniteNs(x) {
		return 0, fmt.Errorf("bad %s %q: not a finite duration", name, s)
	}
	return int64(math.Round(x)), nil
}

// pow10 are the powers of ten that float64 holds exactly.
var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// atofBytes parses [-]digits.digits without allocating. It only answers
// when the result is exactly what strconv.ParseFloat gives: the digits
// form an integer below 2^53 and the fraction has at most 22 digits, so
// float64(mantissa)/10^k is one correctly rounded IEEE division (the same
// fast path strconv takes). Anything else returns ok=false.
func atofBytes(v []byte) (float64, bool) {
	neg := len(v) > 0 && v[0] == '-'
	if neg {
		v = v[1:]
	}
	var m uint64
	digits, frac, dot := 0, 0, false
	for _, c := range v {
		switch {
		case c >= '0' && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if dot {
				frac++
			}
			if digits > 15 {
				return 0, false
			}
		case c == '.' && !dot:
			dot = true
		default:
			return 0, false
		}
	}
	if digits == 0 || (dot && frac == 0) || frac >= len(pow10) {
		return 0, false
	}
	x := float64(m) / pow10[frac]
	if neg {
		x = -x
	}
	return x, true
}

// parseTime reads a start or end: integer unix ns (or the unit the field
// names), or an RFC 3339 string.
func parseTime(f field, str bool, v []byte) (int64, error) {
	var scale int64 = 1
	switch f {
	case fStartMs:
		scale = 1_000_000
	case fStartUs:
		scale = 1_000
	case fStartS:
		scale = 1_000_000_000
	}
	if n, ok := record.AtoiBytes(v); ok && scale == 1 {
		return n, nil
	}
	s := string(v)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > math.MaxInt64/scale || n < 0 && scale != 1 {
			return 0, fmt.Errorf("bad %s %q: out of range", fieldName(f), s)
		}
		return n * scale, nil
	}
	if x, err := strconv.ParseFloat(s, 64); err == nil {
		x *= float64(scale)
		if !record.FiniteNs(x) {
			return 0, fmt.Errorf("bad time %q: out of range", s)
		}
		return int64(x), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("bad time %q: want unix nanoseconds or RFC 3339", s)
	}
	return t.UnixNano(), nil
}

// lineReader yields lines of at most max bytes; longer lines are reported
// and skipped whole, never buffered whole.
type lineReader struct {
	src  *record.Source
	max  int
	line int64
	buf  []byte
}

var errLineTooLong = errors.New("line too long")

// next returns the next line without its newline, or io.EOF.
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	lr.line++
	tooLong := false
	for {
		chunk, err := lr.src.R.ReadSlice('\n')
		if !tooLong {
			if len(lr.buf)+len(chunk) > lr.max+1 {
				tooLong = true
				lr.buf = lr.buf[:0]
			} else if err == nil && len(lr.buf) == 0 {
				return bytes.TrimRight(chunk, "\r\n"), nil // fast path: no copy
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch err {
		case nil:
			if tooLong {
				return nil, errLineTooLong
			}
			return bytes.TrimRight(lr.buf, "\r\n"), nil
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if tooLong {
				return nil, errLineTooLong
			}
			if len(lr.buf) == 0 {
				return nil, io.EOF
			}
			return bytes.TrimRight(lr.buf, "\r\n"), nil
		default:
			return nil, err
		}
	}
}

func decodeJSONL(src *record.Source) error {
	src.SetDefaultHopBy("hop")
	tab := newFieldTable(src.Options())
	probeUnits(src, tab, false)
	return decodeJSONLParallel(src, tab)
}

// fieldError marks a value that parsed as JSON but is wrong for its field.
type fieldError struct{ err error }

func (e fieldError) Error() string { return e.err.Error() }

// decodeObject decodes the members of a line's object (depth 0) or of an
// attribute object in it (depth 1, tier the attributes' tier): members
// that name fields set them; at depth 0 the others become attributes
// under their own key, at depth 1 every scalar member does (the span's
// attributes, even those that also fill a field), and an object member is
// flattened into dotted keys. A field the line set itself wins over an
// attribute object's member of the same field, wherever it comes.
func (t *fieldTable) decodeObject(sc *record.Scanner, rec *flatRecord, depth int, tier uint8) error {
	if depth == 0 {
		rec.nested = rec.nested[:0]
		if err := t.decodeMembers(sc, rec, 0, record.TierField); err != nil {
			return err
		}
		for _, n := range rec.nested {
			sub := record.Scanner{Buf: n.raw}
			if err := t.decodeMembers(&sub, rec, 1, n.tier); err != nil {
				return err
			}
		}
		return nil
	}
	return t.decodeMembers(sc, rec, depth, tier)
}

// nestedObj is an attribute object of a line, decoded after the line's
// own members: its raw text and its attributes' tier.
type nestedObj struct {
	raw  []byte
	tier uint8
}

func (t *fieldTable) decodeMembers(sc *record.Scanner, rec *flatRecord, depth int, tier uint8) error {
	pos := 0
	return sc.Object(func(key []byte, k record.JSONKind, v []byte) error {
		scalar := k != record.KObject && k != record.KArray && k != record.KNull
		if t.hopAttr != "" && string(key) == t.hopAttr && (k == record.KString || k == record.KNumber) {
			rec.sp.Hop = rec.intern.Get(v)
			if depth > 0 {
				rec.at.Add(tier, rec.at.KeyOf(key), v, record.InBuf(v, rec.block))
			}
			return nil
		}
		f := t.lookup(rec, depth, pos, key)
		pos++
		if f == fNested || f == fResource {
			if k == record.KObject && depth == 0 {
				// After the line's own fields, which win.
				tier := record.TierSpan
				if f == fResource {
					tier = record.TierResource
				}
				rec.nested = append(rec.nested, nestedObj{v, tier})
				return nil
			}
			if depth == 0 {
				return nil
			}
			f = fNone // a nested "attributes" member is an attribute
		}
		if depth > 0 {
			switch {
			case scalar:
				rec.at.Add(tier, rec.at.KeyOf(key), v, record.InBuf(v, rec.block))
			case k == record.KObject && tier == record.TierResource && depth == 1 && (string(key) == "attributes" || string(key) == "attrs"):
				// {"resource":{"attributes":{…}}}, as OTLP nests them.
				sub := record.Scanner{Buf: v}
				return t.decodeMembers(&sub, rec, depth+1, tier)
			case k == record.KObject:
				rec.at.Key = append(rec.at.Key[:0], key...)
				flattenAttrs(v, rec, tier, depth)
			}
			if rec.top&fieldGroup(f) != 0 {
				return nil // the line's own field wins
			}
		}
		if f == fNone {
			if depth == 0 && scalar {
				rec.at.Add(record.TierField, rec.at.KeyOf(key), v, record.InBuf(v, rec.block))
			}
			return nil
		}
		if k == record.KObject || k == record.KArray {
			err := fmt.Errorf("%s: want a scalar, got an %s", key, map[record.JSONKind]string{record.KObject: "object", record.KArray: "array"}[k])
			switch {
			case required(f):
				return fieldError{err}
			case f == fStart || f == fStartMs || f == fStartUs || f == fStartS || f == fEnd:
				if rec.badTime == nil {
					rec.badTime = err
				}
			default:
				rec.ignore(f, err)
			}
			return nil
		}
		if err := rec.set(f, k == record.KString, v); err != nil {
			return fieldError{err}
		}
		if depth == 0 {
			rec.top |= fieldGroup(f)
		}
		if rec.probe && isDurationField(f) {
			rec.durKey = string(key)
		}
		return nil
	})
}

// maxAttrDepth bounds how deep objects inside an attribute object are
// flattened into dotted keys; deeper ones are left out.
const maxAttrDepth = 8

// flattenAttrs adds the scalar members of the object raw as attributes
// under rec.at.key (the dotted path so far) plus ".member". The object was
// validated by the scanner that delimited it; an error here only ends the
// flattening.
func flattenAttrs(raw []byte, rec *flatRecord, tier uint8, depth int) {
	if depth >= maxAttrDepth {
		return
	}
	sc := record.Scanner{Buf: raw}
	n := len(rec.at.Key)
	sc.Object(func(key []byte, k record.JSONKind, v []byte) error {
		rec.at.Key = append(append(rec.at.Key[:n], '.'), key...)
		switch k {
		case record.KObject:
			flattenAttrs(v, rec, tier, depth+1)
		case record.KString, record.KNumber, record.KBool:
			rec.at.Add(tier, rec.at.KeyOf(rec.at.Key), v, record.InBuf(v, rec.block))
		}
		return nil
	})
	rec.at.Key = rec.at.Key[:n]
}

// keySlot remembers which field a key names. Lines of one log repeat the
// same few keys, so a small direct-mapped cache (by length and end bytes)
// compares a few bytes instead of hashing the key for a map lookup; keys
// that appear only on some lines (parent_id, timeout) do not disturb it.
type keySlot struct {
	key []byte
	f   field
}

const keySlots = 256

func (t *fieldTable) lookup(rec *flatRecord, depth, pos int, key []byte) field {
	if rec.keys == nil {
		rec.keys = make([]keySlot, keySlots+posSlots)
	}
	// First guess: the key the previous line had at this position (one
	// comparison when lines share their layout, the common case).
	var ps *keySlot
	if depth == 0 && pos < posSlots {
		ps = &rec.keys[keySlots+pos]
		if ps.key != nil && bytes.Equal(ps.key, key) {
			return ps.f
		}
	}
	f := t.lookupHashed(rec, key)
	if ps != nil {
		ps.key, ps.f = append(ps.key[:0], key...), f
	}
	return f
}

// posSlots is how many leading positions of a line the first guess covers.
const posSlots = 32

func (t *fieldTable) lookupHashed(rec *flatRecord, key []byte) field {
	h := uint32(len(key))
	for _, c := range key {
		h = h*31 + uint32(c)
	}
	i := int(h^h>>9) & (keySlots - 1)
	j := (i + 1) & (keySlots - 1) // two ways: one collision costs nothing
	if ks := &rec.keys[i]; ks.key != nil && bytes.Equal(ks.key, key) {
		return ks.f
	}
	if ks := &rec.keys[j]; ks.key != nil && bytes.Equal(ks.key, key) {
		return ks.f
	}
	f := t.keys[string(key)]
	ks := &rec.keys[i]
	if ks.key != nil && rec.keys[j].key == nil {
		ks = &rec.keys[j]
	}
	ks.key, ks.f = append(ks.key[:0], key...), f
	return f
}

// atoiAlloc is strconv.Atoi that allocates only for unusual input.
func atoiAlloc(v []byte) (int, error) {
	if n, ok := record.AtoiBytes(v); ok {
		return int(n), nil
	}
	return strconv.Atoi(string(v))
}

// atofAlloc is strconv.ParseFloat that allocates only for unusual input.
func atofAlloc(v []byte) (float64, error) {
	if n, ok := record.AtoiBytes(v); ok && n > -(1<<53) && n < 1<<53 {
		return float64(n), nil
	}
	if x, ok := atofBytes(v); ok {
		return x, nil
	}
	return strconv.ParseFloat(string(v), 64)
}
