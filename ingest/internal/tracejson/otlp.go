package tracejson

// OTLP JSON: the protobuf JSON mapping of OpenTelemetry's TracesData.
//
//	{"resourceSpans":[{"resource":{"attributes":[…]},
//	                   "scopeSpans":[{"scope":{…},"spans":[{…},…]}]}]}
//
// Checked against opentelemetry-proto docs/specification.md ("JSON Protobuf
// Encoding") and the proto3 JSON mapping it amends: ids are hex (any case)
// in OTLP/JSON and base64 in generic protojson, both read; 64-bit integers
// come as decimal strings or numbers; enums as integers (OTLP/JSON) or names
// (protojson); lowerCamelCase keys and the original snake_case names are
// both accepted, as protojson parsers do; unknown fields are ignored.
//
// Variants met in the wild and read here: instrumentationLibrarySpans (the
// pre-1.0 name of scopeSpans), Tempo's /api/traces {"batches":[…]} and
// /api/v2/traces {"trace":{…}} responses, Jaeger v3's {"result":{…}}
// wrapper (one per line when streamed), the collector's file exporter (one
// TracesData per line, so several top-level documents), a top-level array
// of TracesData. A missing status is UNSET; the pre-0.7 status (a gRPC-like
// code, kept as deprecatedCode until OTLP 0.9) is read too, its
// DEADLINE_EXCEEDED as a timeout. Attribute values are read when they are
// scalars (stringValue, intValue, doubleValue, boolValue); arrayValue,
// kvlistValue and bytesValue carry nothing tailscope uses and are passed
// over.
//
// span.Span.Attrs are the resource's scalar attributes in the order
// written, then otel.scope.name and otel.scope.version (see otlpScope),
// then the span's: each value as its text (a string unescaped, an int64 as
// its digits whether written as a string or a number, a double or bool as
// its literal), but for those attrKept leaves to the span's fields
// (service.name is the Service). Event attributes are not the span's.
//
// The walk streams: resource attributes stay in scope while the spans of
// that resource are decoded one at a time. When a producer writes
// "resource" after "scopeSpans" (protojson does not fix the order), the
// spans of that one resource are held until its resource has been read.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tailscope/tailscope/ingest/internal/jsonscan"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/span"
)

func DecodeOTLP(src *record.Source) error {
	if otlpFastEnabled {
		if n := otlpWorkers(); n > 1 {
			return decodeOTLPParallel(src, n)
		}
		return decodeOTLPFast(src)
	}
	w := newWalker(src)
	return w.run(w.otlpTop)
}

// otlpTop reads one top-level document.
func (w *jsonWalker) otlpTop() error {
	c, err := w.top()
	if err != nil {
		return err // io.EOF at the end of the input
	}
	at := w.here()
	switch c {
	case '{':
		w.open()
		return w.otlpTracesData(at, true, 0)
	case '[':
		return w.array("top-level array", func() error {
			at := w.here()
			ok, err := w.enter('{', "top-level array element")
			if !ok || err != nil {
				return err
			}
			return w.otlpTracesData(at, true, 0)
		})
	}
	if err := w.skipValue(); err != nil {
		return err
	}
	w.src.Skip(at.line, w.index+1, record.ReasonBadDocument, fmt.Sprintf("at byte %d: want an OTLP object, got %s", at.off, byteKind(c)))
	return nil
}

// ReasonNotOTLP is the skip of a document without any OTLP content: a flat
// span line, a bare span among TracesData lines, any other object.
const ReasonNotOTLP = "not an OTLP document"

// maxOTLPWrap bounds the nesting of "result" and "trace" wrappers.
const maxOTLPWrap = 4

// otlpTracesData reads a TracesData object after its '{'. A document
// (doc) that holds none of the keys of TracesData or of its wrappers is
// not passed over silently: it is a record that was read and skipped.
//
// Wrappers nest to a small fixed depth in every producer; deeper nesting
// is skipped, so that the walk's depth never follows the input's.
func (w *jsonWalker) otlpTracesData(at pos, doc bool, depth int) error {
	found := false
	var keys []string
	err := w.members(func(key string) error {
		switch key {
		case "resourceSpans", "resource_spans", "batches":
			found = true
			return w.array(key, func() error {
				ok, err := w.enter('{', key+" element")
				if !ok || err != nil {
					return err
				}
				return w.otlpResourceSpans()
			})
		case "result", "trace":
			found = true
			inner := w.here()
			if depth >= maxOTLPWrap {
				if err := w.skipValue(); err != nil {
					return err
				}
				w.src.Skip(inner.line, w.index+1, record.ReasonBadDocument, fmt.Sprintf("at byte %d: %s: wrappers nested deeper than %d", inner.off, key, maxOTLPWrap))
				return nil
			}
			ok, err := w.enter('{', key)
			if !ok || err != nil {
				return err
			}
			return w.otlpTracesData(inner, false, depth+1)
		}
		if len(keys) < 6 {
			keys = append(keys, strconv.Quote(key))
		}
		return w.skipValue()
	})
	if err != nil || found || !doc {
		return err
	}
	what := "an object without resourceSpans"
	if len(keys) > 0 {
		what += " (keys " + strings.Join(keys, ", ") + ")"
	}
	w.src.Skip(at.line, w.index+1, ReasonNotOTLP, fmt.Sprintf("at byte %d: %s (a flat span line or a bare span is not read among OTLP documents)", at.off, what))
	return nil
}

// otlpResource is what a resource contributes to its spans.
type otlpResource struct {
	seen    bool
	service string
	hop     string // the --hop-by attr:KEY value, when the resource has it
	hopSet  bool
	bad     error // a resource that could not be read whole
	// attrs are its scalar attributes, service.name included: they come
	// first in each of its spans' Attrs.
	attrs []span.Attr
}

// otlpPending is a span read before its resource.
type otlpPending struct {
	rec   record.TraceRecord
	scope []span.Attr
	index int64
	at    pos
}

// otlpResourceSpans reads one ResourceSpans after its '{'.
func (w *jsonWalker) otlpResourceSpans() error {
	var res otlpResource
	var pending []otlpPending
	err := w.members(func(key string) error {
		switch key {
		case "resource":
			raw, at, err := w.raw(w.buf)
			w.buf = raw
			switch {
			case err == errTooLong:
				o := w.src.Options()
				res.bad = fmt.Errorf("resource at byte %d: over %d bytes (raise with %s)", at.off, o.MaxRecord, o.Names.Of(option.MaxRecord))
			case err != nil:
				return err
			default:
				if err := w.otlpReadResource(raw, &res); err != nil {
					// The spans are kept (their service may be missing):
					// each counts the value it lost.
					res.bad = fmt.Errorf("resource at line %d, byte %d: %v", at.line, at.off, err)
				}
			}
			res.seen = true
			return nil
		case "scopeSpans", "scope_spans", "instrumentationLibrarySpans", "instrumentation_library_spans":
			return w.array(key, func() error {
				var scope []span.Attr
				return w.object(key+" element", func(k string) error {
					switch k {
					case "scope", "instrumentationLibrary", "instrumentation_library":
						raw, _, err := w.raw(w.sbuf)
						w.sbuf = raw
						switch {
						case err == errTooLong:
							return nil
						case err != nil:
							return err
						}
						scope = w.otlpScope(raw)
						return nil
					case "spans":
					default:
						return w.skipValue()
					}
					return w.array("spans", func() error {
						var rec record.TraceRecord
						_, at, ok, err := w.nextOTLPSpan(&rec)
						if !ok {
							return err
						}
						if !res.seen {
							pending = append(pending, otlpPending{rec: rec, scope: scope, index: w.index, at: at})
							return nil
						}
						w.otlpEmit(&rec, &res, scope, w.index, at)
						return nil
					})
				})
			})
		}
		return w.skipValue()
	})
	for i := range pending {
		w.otlpEmit(&pending[i].rec, &res, pending[i].scope, pending[i].index, pending[i].at)
	}
	return err
}

// otlpScope reads an InstrumentationScope (or the older
// InstrumentationLibrary) into the attributes otel.scope.name and
// otel.scope.version, which is how OpenTelemetry carries the scope into
// formats that have none (the collector's Jaeger and Zipkin exporters
// write these tags), so a span reads the same from OTLP and from their
// output. A scope that is not an object, or that cannot be read, gives
// none: it costs its spans nothing else. Its attributes describe the
// library, not the span, and are left out.
func (w *jsonWalker) otlpScope(raw []byte) []span.Attr {
	var out []span.Attr
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	err := objectMembers(raw, func(key string, k jsonscan.JSONKind, v []byte) error {
		if k != jsonscan.KString || len(v) == 0 {
			return nil
		}
		switch key {
		case "name":
			out = append(out, span.Attr{Key: "otel.scope.name", Value: w.attrIntern.Get(v)})
		case "version":
			out = append(out, span.Attr{Key: "otel.scope.version", Value: w.attrIntern.Get(v)})
		}
		return nil
	})
	if err != nil {
		return nil
	}
	return out
}

func (w *jsonWalker) otlpEmit(rec *record.TraceRecord, res *otlpResource, scope []span.Attr, index int64, at pos) {
	rec.Span.Service = res.service
	if !rec.HopSet && res.hopSet {
		rec.Hop, rec.HopSet = res.hop, true
	}
	if res.bad != nil {
		rec.Ignore("resource", res.bad)
	}
	rec.Finish(&w.intern)
	w.setAttrs(&rec.Span, res.attrs, scope, rec.Attrs)
	w.emit(rec, index, at)
}

func (w *jsonWalker) otlpReadResource(raw []byte, res *otlpResource) error {
	if string(raw) == "null" {
		return nil
	}
	return objectMembers(raw, func(key string, k jsonscan.JSONKind, v []byte) error {
		if key != "attributes" || k != jsonscan.KArray {
			return nil
		}
		return otlpAttributes(v, func(ak string, str bool, av []byte) error {
			if ak == "service.name" {
				res.service = w.intern.Get(av)
			}
			if w.hopAttr != "" && ak == w.hopAttr {
				res.hop, res.hopSet = string(av), true
			}
			if record.KeepValue(ak, av) {
				res.attrs = append(res.attrs, span.Attr{Key: w.attrIntern.Get([]byte(ak)), Value: w.attrIntern.Get(av)})
			}
			return nil
		})
	})
}

// otlpAttributes walks a KeyValue list, giving each scalar value's text.
// Array, kvlist and bytes values carry nothing tailscope reads and are
// passed over.
//
// An element that is not a well-formed KeyValue does not stop the walk:
// the others are read, and the first such problem is returned at the end.
func otlpAttributes(raw []byte, f func(key string, str bool, v []byte) error) error {
	var first error
	err := arrayElems(raw, func(k jsonscan.JSONKind, elem []byte, _ int) error {
		if err := otlpAttribute(k, elem, f); err != nil && first == nil {
			first = err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return first
}

func otlpAttribute(k jsonscan.JSONKind, elem []byte, f func(key string, str bool, v []byte) error) error {
	{
		if k != jsonscan.KObject {
			return fmt.Errorf("attribute: want an object, got %s", kindName(k))
		}
		var key string
		var val []byte
		if err := objectMembers(elem, func(mk string, k jsonscan.JSONKind, v []byte) error {
			switch mk {
			case "key":
				if k != jsonscan.KString {
					return fmt.Errorf("attribute key: want a string, got %s", kindName(k))
				}
				key = string(v)
			case "value":
				if k == jsonscan.KObject {
					val = v
				}
			}
			return nil
		}); err != nil {
			return err
		}
		if val == nil || key == "" {
			return nil
		}
		var text []byte
		var str, found bool
		if err := objectMembers(val, func(vk string, k jsonscan.JSONKind, v []byte) error {
			switch vk {
			case "stringValue", "string_value":
				text, str, found = append([]byte(nil), v...), true, k == jsonscan.KString
			case "intValue", "int_value", "doubleValue", "double_value", "boolValue", "bool_value":
				// int64 is a string in protojson, a number elsewhere.
				text, str, found = append([]byte(nil), v...), false, k == jsonscan.KString || k == jsonscan.KNumber || k == jsonscan.KBool
			}
			return nil
		}); err != nil {
			return fmt.Errorf("attribute %q: %v", key, err)
		}
		if !found {
			return nil
		}
		if err := f(key, str, text); err != nil {
			return fmt.Errorf("attribute %s", err)
		}
		return nil
	}
}

// otlpSpan reads one span object into rec. The times are required (the
// duration comes from them); a value of any other member that cannot be
// read is recorded in rec.soft and the span kept.
func (w *jsonWalker) otlpSpan(raw []byte, rec *record.TraceRecord) (reason, detail string) {
	var start, end int64
	var hasStart, hasEnd bool
	var badTime error
	sp := &rec.Span
	err := objectMembers(raw, func(key string, k jsonscan.JSONKind, v []byte) error {
		if k == jsonscan.KNull {
			return nil
		}
		var err error
		field := key
		switch key {
		case "traceId", "trace_id":
			sp.TraceID, err = idValue(key, k, v, 32)
			field = "trace_id"
		case "spanId", "span_id":
			sp.SpanID, err = idValue(key, k, v, 16)
			field = "span_id"
		case "parentSpanId", "parent_span_id":
			sp.ParentID, err = idValue(key, k, v, 16)
			field = "parent_id"
		case "name":
			sp.Name, err = w.textValue(key, k, v)
		case "kind":
			sp.Kind, err = otlpKind(k, v)
		case "startTimeUnixNano", "start_time_unix_nano":
			start, err = parseUnixNano(key, v)
			hasStart = err == nil
			if err != nil && badTime == nil {
				badTime = err
			}
			return nil
		case "endTimeUnixNano", "end_time_unix_nano":
			end, err = parseUnixNano(key, v)
			hasEnd = err == nil
			if err != nil && badTime == nil {
				badTime = err
			}
			return nil
		case "traceState", "trace_state":
			if k == jsonscan.KString {
				rec.TraceState = string(v)
			}
		case "attributes":
			if k != jsonscan.KArray {
				err = fmt.Errorf("attributes: want an array, got %s", kindName(k))
				break
			}
			err = otlpAttributes(v, func(ak string, str bool, av []byte) error {
				rec.KeepAttr(&w.attrIntern, ak, av)
				if ak == "error" {
					// An OpenTracing-style boolean error attribute.
					if b, e := record.ParseBool(av); e == nil && b {
						rec.ErrFlag = true
					}
					return nil
				}
				rec.AddAttr(ak, av, str, w.hopAttr)
				return nil
			})
		case "status":
			if k != jsonscan.KObject {
				err = fmt.Errorf("status: want an object, got %s", kindName(k))
				break
			}
			err = otlpStatus(v, rec)
		case "events":
			if k == jsonscan.KArray {
				err = otlpEvents(v, rec)
			}
		}
		if err != nil {
			rec.Ignore(field, err)
		}
		return nil
	})
	if err != nil {
		return record.ReasonBadJSON, err.Error()
	}
	switch {
	case badTime != nil && (!hasStart || !hasEnd):
		return record.ReasonBadValue, badTime.Error()
	case !hasStart && !hasEnd:
		return record.ReasonNoDuration, "no startTimeUnixNano or endTimeUnixNano"
	case !hasStart || start == 0:
		return record.ReasonNoStart, "no startTimeUnixNano"
	case !hasEnd || end == 0:
		return record.ReasonNoEnd, "no endTimeUnixNano"
	case end < start:
		return record.ReasonEndBeforeStart, fmt.Sprintf("end %d < start %d", end, start)
	}
	sp.Start, sp.Duration = start, end-start
	return "", ""
}

// textValue reads a name: a string, or the text of a number or boolean.
func (w *jsonWalker) textValue(key string, k jsonscan.JSONKind, v []byte) (string, error) {
	switch k {
	case jsonscan.KString, jsonscan.KNumber, jsonscan.KBool:
		return w.intern.Get(v), nil
	}
	return "", fmt.Errorf("%s: want a string, got %s", key, kindName(k))
}

// idValue reads a hex or base64 id.
func idValue(key string, k jsonscan.JSONKind, v []byte, width int) (string, error) {
	if k != jsonscan.KString {
		return "", fmt.Errorf("%s: want a string, got %s", key, kindName(k))
	}
	return record.NormID(v, width), nil
}

// otlpKind reads SpanKind as a number or an enum name.
func otlpKind(k jsonscan.JSONKind, v []byte) (string, error) {
	if k != jsonscan.KString && k != jsonscan.KNumber {
		return "", fmt.Errorf("kind: want a number or a SPAN_KIND_ name, got %s", kindName(k))
	}
	switch s := record.NormKind(v); s {
	case "", "internal", "server", "client", "producer", "consumer":
		return s, nil
	}
	if _, err := strconv.Atoi(string(v)); err == nil && k == jsonscan.KNumber {
		// Proto3 enums are open: a number this version does not know
		// is kept by protojson, and says nothing tailscope can use.
		return "", nil
	}
	return "", fmt.Errorf("kind: unknown span kind %q", v)
}

// otlpStatus reads {code, message, deprecatedCode}. Code is 0 unset, 1
// ok, 2 error, or the STATUS_CODE_ names. Before OTLP 0.7 the status code
// was gRPC-like (0 OK, 1 CANCELLED, …, 4 DEADLINE_EXCEEDED, …); 0.7 to 0.9
// kept it as deprecatedCode beside the new code, with the rule that an
// unset code and a deprecated code other than OK mean ERROR. So a number
// above 2, or a gRPC name, is read as that older code: a failure, and a
// timeout for DEADLINE_EXCEEDED.
func otlpStatus(raw []byte, rec *record.TraceRecord) error {
	dep := -1
	var bad error // the first member that could not be read; the others are
	err := objectMembers(raw, func(key string, k jsonscan.JSONKind, v []byte) error {
		switch key {
		case "code":
			if err := otlpStatusCode(k, v, rec); err != nil && bad == nil {
				bad = err
			}
		case "deprecatedCode", "deprecated_code":
			n, ok := otlpGRPCCode(k, v, "DEPRECATED_STATUS_CODE_")
			if !ok {
				if bad == nil {
					bad = fmt.Errorf("status.deprecatedCode: want a number or a DEPRECATED_STATUS_CODE_ name, got %q", record.ShortValue(v))
				}
				return nil
			}
			dep = n
		case "message":
			if k == jsonscan.KString && len(v) > 0 {
				rec.Message = string(v)
			}
		}
		return nil
	})
	if err == nil && dep > 0 && (!rec.StatusSet || rec.Status == span.Unset) {
		rec.Status, rec.StatusSet = span.Error, true
		rec.Timeout = rec.Timeout || dep == 4
	}
	if err == nil {
		err = bad
	}
	return err
}

func otlpStatusCode(k jsonscan.JSONKind, v []byte, rec *record.TraceRecord) error {
	switch string(v) {
	case "0", "STATUS_CODE_UNSET", "UNSET":
		rec.Status, rec.StatusSet = span.Unset, true
		return nil
	case "1", "STATUS_CODE_OK", "OK":
		rec.Status, rec.StatusSet = span.OK, true
		return nil
	case "2", "STATUS_CODE_ERROR", "ERROR":
		rec.Status, rec.StatusSet = span.Error, true
		return nil
	}
	n, ok := otlpGRPCCode(k, v, "STATUS_CODE_")
	switch {
	case !ok:
		return fmt.Errorf("status.code: want 0-2 or a STATUS_CODE_ name, got %q", record.ShortValue(v))
	case n > 0: // the pre-0.7 code: anything but OK failed
		rec.Status, rec.StatusSet = span.Error, true
		rec.Timeout = rec.Timeout || n == 4
	case n == 0 && k == jsonscan.KString: // the pre-0.7 "Ok"
		rec.Status, rec.StatusSet = span.OK, true
	}
	return nil
}

// otlpGRPCCode reads a gRPC-like status code as a number or as a name,
// with or without prefix, upper snake case (DEADLINE_EXCEEDED, the 0.5-0.9
// spelling) or CamelCase (DeadlineExceeded, 0.4). Negative numbers and
// numbers past 16 are open-enum values with no meaning here: -1.
func otlpGRPCCode(k jsonscan.JSONKind, v []byte, prefix string) (int, bool) {
	if k == jsonscan.KNumber || k == jsonscan.KString {
		if n, err := strconv.Atoi(string(v)); err == nil {
			if n < 0 || n > 16 {
				n = -1
			}
			return n, true
		}
	}
	if k != jsonscan.KString {
		return 0, false
	}
	name := strings.TrimPrefix(string(v), prefix)
	if !strings.Contains(name, "_") && strings.ToUpper(name) != name {
		var b strings.Builder
		for i, r := range name {
			if i > 0 && 'A' <= r && r <= 'Z' {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		}
		name = b.String()
	}
	name = strings.ToUpper(name)
	switch name {
	case "UNKNOWN_ERROR":
		name = "UNKNOWN"
	case "INTERNAL_ERROR":
		name = "INTERNAL"
	}
	n, ok := record.GRPCCodeNames[name]
	return n, ok
}

// otlpWrapped reports whether the first object of b wraps TracesData
// under "result" (Jaeger v3) or "trace" (Tempo's /api/v2/traces). Only the
// first keys of the inner object are needed, so a wrapper larger than the
// sniffing window is still recognised; a flat log line with a "trace" or
// "result" field holding a string is not taken for one.
func OTLPWrapped(b []byte) bool {
	sc := jsonscan.Scanner{Buf: b}
	sc.Ws()
	if !sc.Eat('{') {
		return false
	}
	for {
		sc.Ws()
		k, ok := sc.Str()
		if !ok {
			return false
		}
		key := string(k)
		sc.Ws()
		if !sc.Eat(':') {
			return false
		}
		sc.Ws()
		if (key == "result" || key == "trace") && sc.Pos < len(sc.Buf) && sc.Buf[sc.Pos] == '{' {
			inner := jsonscan.TopKeys(sc.Buf[sc.Pos:])
			if inner["resourceSpans"] || inner["resource_spans"] || inner["batches"] {
				return true
			}
		}
		if _, _, err := sc.Value(); err != nil {
			return false
		}
		sc.Ws()
		if !sc.Eat(',') {
			return false
		}
	}
}

// otlpEvents looks for an "exception" event: its type or message is what
// tells a timeout (java.net.SocketTimeoutException, context deadline
// exceeded) when the status message is empty.
func otlpEvents(raw []byte, rec *record.TraceRecord) error {
	return arrayElems(raw, func(k jsonscan.JSONKind, ev []byte, _ int) error {
		if k != jsonscan.KObject {
			return nil
		}
		var name string
		var attrs []byte
		if err := objectMembers(ev, func(key string, k jsonscan.JSONKind, v []byte) error {
			switch {
			case key == "name" && k == jsonscan.KString:
				name = string(v)
			case key == "attributes" && k == jsonscan.KArray:
				attrs = v
			}
			return nil
		}); err != nil {
			return err
		}
		if name != "exception" || attrs == nil {
			return nil
		}
		return otlpAttributes(attrs, func(ak string, _ bool, av []byte) error {
			rec.ExceptionAttr(ak, av)
			return nil
		})
	})
}

// nextOTLPSpan reads the next value as an OTLP span into rec. ok is false
// when there is no span to emit: on err (a syntax or I/O error for the
// walker to handle), or when the value was skipped with its position and
// reason (one over --max-record included). raw is the span's JSON and at
// its position, for callers that read more from it.
func (w *jsonWalker) nextOTLPSpan(rec *record.TraceRecord) (raw []byte, at pos, ok bool, err error) {
	if otlpFastEnabled {
		if raw, at, ok := w.otlpSpanInPlace(rec); ok {
			return raw, at, true, nil
		}
	}
	raw, at, err = w.raw(w.buf)
	w.buf = raw
	if err == errTooLong {
		w.tooLong(at)
		return nil, at, false, nil
	}
	if err != nil {
		return nil, at, false, err
	}
	w.index++
	if len(raw) == 0 || raw[0] != '{' {
		w.skipSpan(w.index, at, record.ReasonNotSpan, "want a span object, got "+record.ShortValue(raw[:min(len(raw), 20)]))
		return nil, at, false, nil
	}
	if otlpFastEnabled {
		if e, ok := w.otlpFastSpan(raw, 0, rec, false); ok && e == len(raw) {
			return raw, at, true, nil
		}
		rec.Reset()
	}
	if reason, detail := w.otlpSpan(raw, rec); reason != "" {
		w.skipSpan(w.index, at, reason, detail)
		return nil, at, false, nil
	}
	return raw, at, true, nil
}
