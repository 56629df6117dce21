package flat

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/option"
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
	// mapped holds, for each key --map names, whether a record had it
	// (set by lookup, from every decoding goroutine).
	mapped map[string]*atomic.Bool
	pairs  map[string]string // field → key, as --map gave them
}

// fieldOf is the field key reads into, noting that a record had a mapped
// key. Decoders cache what it returns per key, so it runs once per key
// and position, not per record.
func (t *fieldTable) fieldOf(key string) field {
	if b := t.mapped[key]; b != nil && !b.Load() {
		b.Store(true)
	}
	return t.keys[key]
}

// noteUnmapped adds a note for every --map key that no record of the
// file had: --map trace_id=TraceId on a file whose records say TraceID
// reads every span without a trace id (each its own request), and that
// must not pass without a word.
func (t *fieldTable) noteUnmapped(src *record.Source) {
	fields := make([]string, 0, len(t.pairs))
	for f := range t.pairs {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	for _, f := range fields {
		k := t.pairs[f]
		if t.mapped[k].Load() {
			continue
		}
		st := src.Stats()
		m := src.Options().Names.Of(option.Map)
		st.Unmapped = append(st.Unmapped, fmt.Sprintf("%s: %s %s=%s", src.Name, m, f, k))
		st.Notes = append(st.Notes, fmt.Sprintf("%s: %s %s=%s: no record has the key %q, so no %s was read from it (keys are case-sensitive)", src.Name, m, f, k, k, f))
	}
}

// ParseMap checks --map FIELD=KEY pairs against the canonical fields. An
// error names the pair at fault, not the setting it came from: the caller
// puts its own name for Map before it (the flag package's way with a
// value it cannot parse).
func ParseMap(pairs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, p := range pairs {
		for _, kv := range strings.Split(p, ",") {
			f, k, ok := strings.Cut(kv, "=")
			f, k = strings.TrimSpace(f), strings.TrimSpace(k)
			if !ok || f == "" || k == "" {
				return nil, fmt.Errorf("%q: want FIELD=KEY", kv)
			}
			if _, known := canonicalField[f]; !known {
				return nil, fmt.Errorf("%q: unknown field %q (fields: %s)", kv, f, strings.Join(FlatFields, ", "))
			}
			m[f] = k
		}
	}
	return m, nil
}

func newFieldTable(opt *record.Options) *fieldTable {
	t := &fieldTable{keys: flatKeys, hopAttr: opt.HopAttr()}
	if len(opt.Map) > 0 {
		t.mapped, t.pairs = map[string]*atomic.Bool{}, opt.Map
		for _, k := range opt.Map {
			t.mapped[k] = &atomic.Bool{}
		}
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
	// hops fronts intern for the hop names (hopintern.go), and names for
	// services and span names: the Interner's own front is keyed by a
	// name's first 8 bytes, which a log's names share ("orders-3.List",
	// "orders-4.List"), so most of them went to its map.
	hops, names hopIntern
	// block is the buffer the record's text lies in when ids may alias
	// it (Options.Borrowed; see idString).
	block []byte
	// keys caches the fields of the keys seen at each position (lookup).
	keys []keySlot
	// codeText is a code kept as text (see codes.go in ingest/internal/record); errType the
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
	// at gathers the attributes (record.AttrSet): the fields no span field
	// took, and the members of attribute objects.
	at record.AttrSet
	// top marks the fields the line set itself (bit fieldGroup(f)):
	// a member of an attribute object does not override them.
	top uint64
	// nested are the line's attribute objects, decoded after its own
	// members (decodeObject).
	nested []nestedObj
}

// reset clears what one line sets and keeps the state carried across lines
// (intern, hops, block, keys, lazy, units, probe, the buffers of soft, at and
// nested). It clears field by field, in place: assigning a whole new
// record (680 bytes) built it on the stack and copied it over, a quarter
// of the fast path's own cost. TestRecordReset fails for a field added
// without a line here.
func (r *flatRecord) reset() {
	r.sp = span.Span{}
	r.hasDur, r.hasStart, r.hasEnd, r.hasStatus = false, false, false, false
	r.end = 0
	r.errFlag, r.errTimeout, r.codeSet, r.timeout = false, false, false, false
	r.status = 0
	r.lazySvc, r.lazyName = nil, nil
	r.codeText, r.errType = "", ""
	r.codeNamed = false
	r.badTime = nil
	r.soft = r.soft[:0]
	r.durField = fNone
	r.durKey = ""
	r.at.Reset()
	r.top = 0
	r.nested = r.nested[:0]
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
		r.sp.Service, r.lazySvc = r.names.get(r.intern, r.lazySvc), nil
	}
	if r.lazyName != nil {
		r.sp.Name, r.lazyName = r.names.get(r.intern, r.lazyName), nil
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
		sp.Service, r.lazySvc = r.names.get(r.intern, v), nil
	case fName:
		sp.Name, r.lazyName = r.names.get(r.intern, v), nil
	case fKind:
		sp.Kind = record.NormKind(v)
	case fHop:
		sp.Hop = r.hops.get(r.intern, v)
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
	case fError, fCodeText, fErrorType:
		r.setFailure(f, str, v)
	}
	return nil
}

// setFailure stores the fields that say whether and how a call failed
// beyond its status and code: the error tag, the code's text and
// OpenTelemetry's error.type.
func (r *flatRecord) setFailure(f field, str bool, v []byte) {
	switch f {
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
		// Any value says the call failed, and names the failure (the
		// first one kept).
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
	} else if r.hasEnd && r.hasStart && r.badTime == nil {
		// Both a duration and an end: the duration is used, and an end
		// that contradicts it is noted (counted as an ignored value), not
		// passed over: one of the two is wrong, or in another unit.
		tol := max(int64(1e6), sp.Duration/100)
		switch d := r.end - sp.Start; {
		case r.end < sp.Start:
			r.soft = append(r.soft, record.SoftErr{Field: "end", Detail: fmt.Sprintf("end %d ns is before start %d ns; the duration given was used", r.end, sp.Start)})
		case d-sp.Duration > tol || sp.Duration-d > tol:
			r.soft = append(r.soft, record.SoftErr{Field: "end", Detail: fmt.Sprintf("end − start is %d ns but the duration is %d ns; the duration given was used", d, sp.Duration)})
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

// tooLong is the detail of a record skipped for being over max bytes:
// how to read it anyway, by the caller's name for MaxRecord.
func tooLong(max int, names option.Names) string {
	return fmt.Sprintf("over %d bytes (raise with %s)", max, names.Of(option.MaxRecord))
}
