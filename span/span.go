// Package span holds tailscope's model of what the logs say: spans, and the
// calls, attempts and requests rebuilt from them (docs/DESIGN.md §3).
//
// Everything downstream — analysis, replay, recommendation — sees only these
// types, never an input format. The package must not know about any file
// format and must not compute statistics; it only assembles the tree.
package span

// Status is a span's outcome as the tracer recorded it.
type Status uint8

const (
	// Unset means the tracer did not say; tailscope treats it as success,
	// as OpenTelemetry does.
	Unset Status = iota
	OK
	Error
)

func (s Status) String() string {
	switch s {
	case OK:
		return "ok"
	case Error:
		return "error"
	}
	return "unset"
}

// Span is one timed operation from the logs, in canonical form.
//
// Times are nanoseconds. Start is unix ns (0 when the log gave none);
// Duration is always ≥ 0 once a reader has validated the span.
type Span struct {
	TraceID  string
	SpanID   string
	ParentID string
	Service  string
	Name     string
	Kind     string // client, server, internal, producer, consumer or ""
	Hop      string // the bucket the span falls in (see --hop-by)
	// Peer is the remote side of a CLIENT span (peer.service,
	// server.address, Zipkin remoteEndpoint), for --hop-by peer.
	Peer string

	Start    int64
	Duration int64

	Status Status
	// Timeout is true when the span says it was cut by a timeout (status or
	// error.type timeout, gRPC DEADLINE_EXCEEDED, HTTP 408/504, Envoy UT).
	// Its Duration is then a censoring point: the true latency was ≥ it.
	Timeout bool
	// Code is the HTTP or gRPC status code, 0 when absent.
	Code int
	// CodeText is the error kind when the log gives one that is not a
	// number tailscope knows (ECONNRESET, EPIPE, "connection reset", an
	// error.type): kept as written so that the report can count it like a
	// code. Empty when absent, or when Code says it (gRPC names such as
	// UNAVAILABLE are read into Code).
	CodeText string
	// Attempt is the attempt number as the log gives it when AttemptSet;
	// readers turn counts of earlier tries (http.request.resend_count,
	// grpc-previous-rpc-attempts) into 1-based numbers. Whether a plain
	// "attempt" field counts from 0 or from 1 is not known per span: the
	// tree decides it from a call's siblings (see AttemptIndex).
	Attempt int
	// AttemptSet is true when the log gave an attempt number, so that an
	// explicit 0 (a 0-based first attempt) differs from none.
	AttemptSet bool
	// TimeoutInForce is the per-attempt timeout the caller had configured,
	// when the span carries it (0 when unknown).
	TimeoutInForce int64
	// Weight is the adjusted count of a sampled span (1 when unsampled).
	Weight float64
	// Duplicate is set by Assemble on a later copy of a span id already
	// seen in the same trace; statistics skip it.
	Duplicate bool
	// StableAttrs is set by a reader whose Attrs keys and values are
	// strings it never writes again (column names, interned dictionary
	// entries), and that gives one text as one string: a consumer may hold
	// them past the call without a copy, and find a text it has met by
	// its address. The slice itself is still the reader's.
	StableAttrs bool
	// SharedAttrs is set, with StableAttrs, by a reader that also gives
	// one list of attributes as one slice it never writes again (an
	// interned attribute set, shared by every span that has it): a
	// consumer may hold the slice past the call without a copy, and find
	// a list it has met by the slice's address and length alone.
	SharedAttrs bool
	// Attrs are the span's other attributes, resource attributes first
	// (service.instance.id, k8s.pod.name, host.name, zone, version …), then
	// the span's own (http.route, peer address …), and, in flat logs, the
	// columns or fields that no span field took. Values are scalar values
	// as text; arrays and maps are left out. They are what attribution
	// compares slow and failed attempts over (where in the fleet the tail
	// is), so a reader gives every scalar attribute it meets, and the
	// analysis decides which are low-cardinality enough to use.
	//
	// Attrs follow the span's ids: when the reader was asked for borrowed
	// spans (ingest.Options.Borrowed), the slice and its strings may alias
	// the reader's buffers and are valid only until its next span; whoever
	// keeps such a span copies them (or drops them).
	Attrs []Attr
}

// Attr is one attribute of a span, its value as the log wrote it.
type Attr struct {
	Key, Value string
}

// CallerSide reports whether a span of this kind is the caller's record of
// a call (client, producer, or a flat log that does not say), as opposed to
// the callee's own record (server, consumer, internal). A timeout and its
// retries are the caller's: a policy's default governs caller-side calls,
// and callee-side spans are bounded only through the call above them.
func CallerSide(kind string) bool {
	switch kind {
	case "server", "consumer", "internal":
		return false
	}
	return true
}

// End returns the span's end time in unix ns.
func (s *Span) End() int64 { return s.Start + s.Duration }

// Failed reports whether the span ended in an error.
func (s *Span) Failed() bool { return s.Status == Error || s.Timeout }
