package record

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tailscope/tailscope/span"
)

// Reasons a trace JSON record is skipped; they are the skipped_by_reason
// keys, so they stay stable.
const (
	ReasonBadJSON        = "bad JSON"
	ReasonTruncated      = "truncated JSON"
	ReasonBadValue       = "bad value"
	ReasonBadDocument    = "bad document"
	ReasonNotSpan        = "not a span"
	ReasonTooLong        = "record too long"
	ReasonNoDuration     = "missing duration"
	ReasonNoStart        = "missing start time"
	ReasonNoEnd          = "missing end time"
	ReasonEndBeforeStart = "end before start"
)

// TraceRecord accumulates one span of a trace format before it becomes a
// span.Span. The attribute conventions (OpenTelemetry semantic conventions,
// OpenTracing tags, Envoy) are shared by all three formats, so that the
// same facts give the same span whatever the encoding.
type TraceRecord struct {
	Span span.Span

	Status    span.Status
	StatusSet bool
	ErrFlag   bool
	Message   string // status message, error tag text, exception type/message

	httpCode, grpcCode int
	hasHTTP, hasGRPC   bool
	Timeout            bool // an attribute said so outright

	peer     []byte
	peerRank int // lower wins: see addAttr

	weightSet bool
	// priorityKept is a sampling.priority of 1 or more: weight 1 unless
	// a weight or a tracestate threshold is given.
	priorityKept bool
	TraceState   string

	Hop    string
	HopSet bool

	// codeText is a status code that is not a number tailscope knows
	// (see codes.go); errType the error.type, which stands for it when
	// no code is given.
	codeText, errType string
	// grpcNamed: the gRPC code was a name other than OK (UNAVAILABLE),
	// which says the call failed.
	grpcNamed bool
	// Soft are the values tailscope could not read: the span is kept
	// without them (Stats.Ignored).
	Soft []SoftErr
	// Attrs are the span's own scalar attributes (tags), in input order;
	// the emit puts its resource's (process, local endpoint) before them
	// into sp.Attrs.
	Attrs []span.Attr
}

func (r *TraceRecord) Reset() {
	*r = TraceRecord{Soft: r.Soft[:0], Attrs: r.Attrs[:0], peer: r.peer[:0]}
}

// KeepAttr records a scalar attribute for span.Span.Attrs (see KeepValue).
func (r *TraceRecord) KeepAttr(in *Interner, key string, v []byte) {
	if KeepValue(key, v) {
		r.Attrs = append(r.Attrs, span.Attr{Key: in.Get([]byte(key)), Value: in.Get(v)})
	}
}

// AttrKept says which attributes become span.Span.Attrs: every scalar one
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
func AttrKept(key string) bool {
	switch key {
	case "", "service.name", "span.kind", "error", "otel.status_code", "otel.status_description":
		return false
	}
	return true
}

// Ignore records a value that could not be read; the span goes on.
func (r *TraceRecord) Ignore(field string, err error) {
	r.Soft = append(r.Soft, SoftErr{field, err.Error()})
}

// SetPeer keeps the most specific peer name seen, in the record's own
// buffer (reused from span to span: no allocation per span).
func (r *TraceRecord) SetPeer(v []byte, rank int) {
	if len(v) > 0 && (len(r.peer) == 0 || rank < r.peerRank) {
		r.peer, r.peerRank = append(r.peer[:0], v...), rank
	}
}

// AddAttr applies one span attribute or tag. v is the value's text (a
// string unescaped, a number or boolean literal); str says whether it was
// a JSON string. Keys it does not know are ignored. A value it cannot
// read for a key it knows is recorded (ignore) and the span kept: an
// optional attribute never costs the span.
func (r *TraceRecord) AddAttr(key string, v []byte, str bool, hopAttr string) {
	if hopAttr != "" && key == hopAttr {
		r.Hop, r.HopSet = string(v), true
	}
	switch key {
	case "http.status_code", "http.response.status_code":
		if n, err := attrInt(key, v); err == nil {
			r.httpCode, r.hasHTTP = n, true
		} else {
			r.httpStatusText(key, v)
		}
	case "rpc.grpc.status_code", "grpc.status_code":
		if n, err := attrInt(key, v); err == nil {
			r.grpcCode, r.hasGRPC = n, true
		} else {
			r.grpcStatusText(v)
		}
	case "error.type":
		if len(v) > 0 {
			r.ErrFlag = true
			if IsTimeoutWord(v) {
				r.Timeout = true
			}
			if t := CodeTextOf(v); len(t) > 0 && r.errType == "" {
				r.errType = string(t)
			}
		}
	case "otel.status_code":
		switch strings.ToUpper(string(v)) {
		case "ERROR":
			r.Status, r.StatusSet = span.Error, true
		case "OK":
			r.Status, r.StatusSet = span.OK, true
		case "UNSET", "":
		default:
			r.Ignore(key, fmt.Errorf("%s: want OK, ERROR or UNSET, got %q", key, ShortValue(v)))
		}
	case "otel.status_description":
		r.Message = string(v)
	case "response_flags", "envoy.response_flags", "upstream.response_flags":
		// Envoy's flags are comma-separated codes; UT is "upstream request
		// timeout", the router's per-try or route timeout.
		for _, f := range strings.Split(string(v), ",") {
			if strings.TrimSpace(f) == "UT" {
				r.Timeout = true
			}
		}
	case "http.request.resend_count", "http.resend_count", "grpc-previous-rpc-attempts", "grpc.previous_rpc_attempts", "retry_count", "previous_attempts":
		// Counts of earlier tries (absent or 0 on the first): the attempt
		// is one more.
		n, err := attrInt(key, v)
		if err != nil || n < 0 || n >= math.MaxInt32 {
			r.Ignore("attempt", fmt.Errorf("%s: want a count ≥ 0, got %q", key, ShortValue(v)))
			return
		}
		r.Span.Attempt, r.Span.AttemptSet = n+1, true
	case "retry.attempt", "x-envoy-attempt-count", "attempt", "retry_attempt", "attempt_number", "try", "try_number":
		// The number as logged: whether it counts from 0 or 1 is decided
		// from a call's siblings (span.AttemptIndex).
		n, err := attrInt(key, v)
		if err != nil || n < 0 || n > math.MaxInt32 {
			r.Ignore("attempt", fmt.Errorf("%s: want an attempt number ≥ 0, got %q", key, ShortValue(v)))
			return
		}
		r.Span.Attempt, r.Span.AttemptSet = n, true
	case "peer.service":
		r.SetPeer(v, 1)
	case "server.address":
		r.SetPeer(v, 2)
	case "net.peer.name":
		r.SetPeer(v, 3)
	case "timeout_ms", "rpc.timeout_ms":
		x, err := strconv.ParseFloat(string(v), 64)
		if err != nil || x < 0 || !FiniteNs(x*1e6) {
			r.Ignore("timeout_ms", fmt.Errorf("%s: want milliseconds ≥ 0, got %q", key, ShortValue(v)))
			return
		}
		r.Span.TimeoutInForce = int64(math.Round(x * 1e6))
	case "w3c.tracestate", "tracestate":
		// Jaeger and Zipkin carry an OpenTelemetry span's W3C tracestate
		// as a tag; its "ot" member's th gives the sampling weight, as an
		// OTLP span's traceState does.
		if r.TraceState == "" {
			r.TraceState = string(v)
		}
	case "sampling.priority":
		r.addSamplingPriority(key, v)
	case "sampling.weight", "sampling.adjusted_count", "adjusted_count":
		r.addSamplingWeight(key, v)
	}
}

// httpStatusText applies an HTTP status attribute that is not a plain
// number: a number with its reason ("503 Service Unavailable"), or an
// error kind in its place (ECONNRESET), kept as the code's text. The
// plain number, nearly every span's, is read in AddAttr.
func (r *TraceRecord) httpStatusText(key string, v []byte) {
	switch c, to, text := parseCode(v); {
	case text != nil:
		r.codeText = string(text)
		r.Timeout = r.Timeout || to
	case c >= 100 && c < 600:
		r.httpCode, r.hasHTTP = c, true
	default:
		r.Ignore("code", fmt.Errorf("%s: want an HTTP status, got %q", key, ShortValue(v)))
	}
}

// grpcStatusText applies a gRPC status attribute that is not a plain
// number: a code name (UNAVAILABLE), an error kind kept as the code's
// text, or an HTTP status where a gRPC code was expected. The plain
// number is read in AddAttr.
func (r *TraceRecord) grpcStatusText(v []byte) {
	c, to, text, named := ParseCodeNamed(v)
	switch {
	case text != nil:
		r.codeText = string(text)
		r.Timeout = r.Timeout || to
		return
	case c >= 100 && c < 600 && !r.hasHTTP:
		// "HTTP 503" where a gRPC code was expected: no gRPC code is
		// that large.
		r.httpCode, r.hasHTTP = c, true
		return
	}
	r.grpcCode, r.hasGRPC, r.grpcNamed = c, true, named && c != 0
}

// addSamplingPriority applies OpenTracing's sampling.priority: a priority
// of 1 or more kept the span whatever the sampler's odds, so it stands
// for itself (weight 1) unless a weight or a threshold says otherwise; 0
// or less says nothing.
func (r *TraceRecord) addSamplingPriority(key string, v []byte) {
	n, err := attrInt(key, v)
	if err != nil {
		r.Ignore("weight", fmt.Errorf("%s: want an integer, got %q", key, ShortValue(v)))
		return
	}
	if n >= 1 && !r.weightSet {
		r.priorityKept = true
	}
}

// addSamplingWeight applies a span's sampling weight (adjusted count):
// how many spans it stands for.
func (r *TraceRecord) addSamplingWeight(key string, v []byte) {
	x, err := strconv.ParseFloat(string(v), 64)
	if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		r.Ignore("weight", fmt.Errorf("%s: want a number ≥ 0, got %q", key, ShortValue(v)))
		return
	}
	r.Span.Weight, r.weightSet = x, true
}

// ExceptionAttr applies one attribute of an "exception" event: its type
// or message is what tells a timeout (java.net.SocketTimeoutException,
// context deadline exceeded) when the status message does not. It counts
// only on a span whose status is an error, like the status message.
func (r *TraceRecord) ExceptionAttr(key string, v []byte) {
	if (key == "exception.type" || key == "exception.message") && IsTimeoutWord(v) && !IsTimeoutWord([]byte(r.Message)) {
		r.Message = string(v)
	}
}

// grpcCodeNames are the gRPC status names that matter to tailscope, for
// tracers that record the name instead of the number.
var GRPCCodeNames = map[string]int{
	"OK": 0, "CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3, "DEADLINE_EXCEEDED": 4,
	"NOT_FOUND": 5, "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8,
	"FAILED_PRECONDITION": 9, "ABORTED": 10, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12,
	"INTERNAL": 13, "UNAVAILABLE": 14, "DATA_LOSS": 15, "UNAUTHENTICATED": 16,
}

// Finish derives the span's outcome from what the record said.
//
// A timeout is what the span says outright (Envoy UT, error.type), gRPC
// DEADLINE_EXCEEDED, HTTP 408/504, or an error whose message names a
// timeout or deadline. A timed-out span is an error. HTTP 5xx without an
// error status is left as the tracer recorded it: OpenTelemetry leaves a
// server's 4xx unset on purpose, and a format reader must not second-guess
// the instrumentation.
func (r *TraceRecord) Finish(in *Interner) {
	sp := &r.Span
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
			sp.CodeText = in.Get([]byte(text))
		}
	}
	if r.StatusSet {
		sp.Status = r.Status
	}
	if r.ErrFlag {
		sp.Status = span.Error
	}
	if !r.StatusSet && ((r.codeText != "" && sp.Code == 0 && !OkWord([]byte(r.codeText))) || (r.grpcNamed && !r.hasHTTP)) {
		// No status: an error kind or a gRPC error name where the code
		// should be says it failed.
		sp.Status = span.Error
	}
	to := r.Timeout ||
		(r.hasHTTP && (r.httpCode == 408 || r.httpCode == 504)) ||
		(r.hasGRPC && r.grpcCode == 4) ||
		(sp.Status == span.Error && r.Message != "" && IsTimeoutWord([]byte(r.Message)))
	if to {
		sp.Timeout = true
		sp.Status = span.Error
	}
	if len(r.peer) > 0 {
		sp.Peer = in.Get(r.peer)
	}
	if !r.weightSet && r.TraceState != "" {
		if wgt, ok := weightFromTraceState(r.TraceState); ok {
			sp.Weight, r.weightSet = wgt, true
		}
	}
	if !r.weightSet && r.priorityKept {
		sp.Weight = 1
	}
	if r.HopSet {
		sp.Hop = in.Get([]byte(r.Hop))
	}
}

// NormID turns a trace or span id into lowercase hex of width hex digits
// (32 for traces, 16 for spans), so that the same span reads the same
// from every format: hex in any case is lowercased and left-padded with
// zeros (Jaeger drops leading zeros, 64-bit trace ids are 16 digits where
// OTLP has 32); protojson's base64 of 16 or 8 bytes is decoded to hex.
// An all-zero id is the protocol's "no id". Anything else is kept as it is.
func NormID(v []byte, width int) string {
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
