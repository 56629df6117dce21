package tracejson

// The fast path of OTLP JSON.
//
// The general OTLP reader (otlp.go) walks a document token by token with
// the streaming tokenizer, copies each span out, and reads it member by
// member with callbacks that allocate a key string per member: some forty
// allocations and two copies per span. Almost every span a collector
// writes has the same plain shape (hex ids, plain strings, numeric kind,
// string times, attributes of one scalar value each), and so do almost all
// documents: the file exporter writes one TracesData per line.
//
// So the reader tries two fast paths before the general one:
//
//   - otlpFastLine: at the start of a line that starts with '{', it takes
//     the whole line from the buffer (a line is one document in the file
//     exporter's output) and reads it in one pass over the bytes — the
//     structure resourceSpans → resource, scopeSpans → scope, spans, and
//     each span in place — into records, without copying a span or
//     allocating per member. Only once the whole line has been read
//     without meeting anything unusual are its spans emitted, through the
//     same otlpEmit as the general path, and the line consumed; otherwise
//     nothing has happened, and the general walker reads the line from
//     the same position and state.
//   - otlpFastSpan: the general walker, reading a span it has copied out
//     (one big document, a pretty-printed file), reads it with the same
//     one-pass span decoder before falling back to otlpSpan.
//
// "Unusual" is anything whose handling the general path decides: an
// escaped string, a value of an unexpected type, a duplicated member, a
// span the general path would skip or keep with a value it could not
// read, a status or attribute in a form other than the canonical one, an
// element that is not an object, a wrapper, a record over --max-record,
// trailing data, any syntax the two tokenizers might judge differently.
// The fast paths never decide an error, a skip or a position: they only
// produce, for the inputs they accept, the records the general path
// produces, and the helpers that set a record's fields (addAttr, otlpKind,
// otlpStatus, otlpEvents, otlpReadResource, otlpScope, otlpEmit) are the
// general path's own. The differential tests (otlpfast_test.go) and
// FuzzOTLPFast read every input both ways and compare spans, attributes,
// skips, positions and counts.

import (
	"bufio"
	"bytes"
	"io"
	"unicode/utf8"

	"github.com/tailscope/tailscope/ingest/internal/jsonscan"
	"github.com/tailscope/tailscope/ingest/internal/pool"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// otlpFastEnabled turns the fast paths on; the differential tests turn
// it off to read the same input with the general path alone.
var otlpFastEnabled = true

// otlpWorkers is the number of goroutines that parse lines
// (otlpparallel.go): all cores, or what a test sets in otlpWorkersSet.
func otlpWorkers() int {
	if otlpWorkersSet > 0 {
		return otlpWorkersSet
	}
	return pool.Workers()
}

var otlpWorkersSet int

// otlpLineBuffer is the read buffer of the OTLP reader: a line up to this
// size can be read in place by the fast path (a collector batch of a few
// thousand spans is one to four MB); a longer one is read by the general
// walker, which streams.
var otlpLineBuffer = 8 << 20

// The members of a span the fast path reads, for the duplicate check.
const (
	osTrace = 1 << iota
	osSpan
	osParent
	osName
	osKind
	osStart
	osEnd
	osState
	osAttrs
	osStatus
	osEvents
)

// otlpFastSpan reads the span object at b[i] into rec (reset first) and
// returns the index after it; ok is false when the general path must read
// it (rec is then undefined). With borrow, ids and attributes may alias b.
func (w *jsonWalker) otlpFastSpan(b []byte, i int, rec *record.TraceRecord, borrow bool) (int, bool) {
	rec.Reset()
	sp := &rec.Span
	var startNs, endNs int64
	var seen uint32
	e, ok := fastObject(b, i, func(key []byte, at int) int {
		var f uint32
		switch bstr(key) {
		case "traceId", "trace_id":
			f = osTrace
		case "spanId", "span_id":
			f = osSpan
		case "parentSpanId", "parent_span_id":
			f = osParent
		case "name":
			f = osName
		case "kind":
			f = osKind
		case "startTimeUnixNano", "start_time_unix_nano":
			f = osStart
		case "endTimeUnixNano", "end_time_unix_nano":
			f = osEnd
		case "traceState", "trace_state":
			f = osState
		case "attributes":
			f = osAttrs
			if at < len(b) && b[at] == '[' {
				if seen&f != 0 {
					return -1 // a repeated member: the general path's order rules
				}
				seen |= f
				return w.otlpFastAttrs(b, at, rec, borrow)
			}
		case "status":
			f = osStatus
		case "events":
			f = osEvents
		default:
			return fastSkip(b, at) // passed over by the general path too
		}
		k, v, vend, ok := fastSpanMember(b, at, &seen, f)
		if !ok {
			return vend
		}
		switch f {
		case osTrace, osSpan, osParent:
			if k != jsonscan.KString {
				return -1
			}
			width := 16
			if f == osTrace {
				width = 32
			}
			id := fastHexID(v, width, borrow)
			switch f {
			case osTrace:
				sp.TraceID = id
			case osSpan:
				sp.SpanID = id
			default:
				sp.ParentID = id
			}
		case osName:
			if k != jsonscan.KString && k != jsonscan.KNumber && k != jsonscan.KBool {
				return -1
			}
			sp.Name = w.intern.Get(v)
		case osKind:
			if k == jsonscan.KNumber && len(v) == 1 && v[0] >= '0' && v[0] <= '5' {
				sp.Kind = [...]string{"", "internal", "server", "client", "producer", "consumer"}[v[0]-'0']
				return vend
			}
			kd, err := otlpKind(k, v)
			if err != nil {
				return -1
			}
			sp.Kind = kd
		case osStart, osEnd:
			if k != jsonscan.KString && k != jsonscan.KNumber {
				return -1
			}
			n, ok := fastNanos(v)
			if !ok {
				return -1
			}
			if f == osStart {
				startNs = n
			} else {
				endNs = n
			}
		case osState:
			if k != jsonscan.KString {
				return -1
			}
			rec.TraceState = string(v)
		case osAttrs: // not an array (an array was read above)
			return -1
		case osStatus:
			if k != jsonscan.KObject || !fastStatus(v, rec) {
				return -1
			}
		case osEvents:
			if k != jsonscan.KArray {
				return -1
			}
			if j := fastWS(v, 1); v[j] != ']' && otlpEvents(v, rec) != nil {
				return -1
			}
		}
		return vend
	})
	// The general path skips a span without both times, with a zero time,
	// or ending before it starts; those are its to report.
	if !ok || seen&(osStart|osEnd) != osStart|osEnd || startNs == 0 || endNs == 0 || endNs < startNs {
		return 0, false
	}
	sp.Start, sp.Duration = startNs, endNs-startNs
	return e, true
}

// fastStatus reads the usual status ({} or {"code":0|1|2}) and leaves any
// other to otlpStatus, the general path's reader; ok is false when that
// reports a problem.
func fastStatus(v []byte, rec *record.TraceRecord) bool {
	i := fastWS(v, 1)
	if v[i] == '}' {
		return true
	}
	if jsonscan.HasLit(v, i, `"code":`) {
		j := i + len(`"code":`)
		if j+1 < len(v) && v[j] >= '0' && v[j] <= '2' {
			if e := fastWS(v, j+1); e == len(v)-1 && v[e] == '}' {
				rec.Status, rec.StatusSet = span.Status(v[j]-'0'), true
				return true
			}
		}
	}
	return otlpStatus(v, rec) == nil
}

// otlpFastKVs walks the KeyValue list at b[i] when it has the usual shape
// — each element {"key": plain string, "value": {one member}} — calling f
// with each attribute the general path gives (otlpAttribute): a non-empty
// key with a scalar value, its text, and whether it was a string. It
// returns the index after the list, or -1.
func otlpFastKVs(b []byte, i int, f func(key, text []byte, str bool)) int {
	end, ok := fastElems(b, i, func(at int) int {
		if key, text, str, found, e := compactKV(b, at); e >= 0 {
			if len(key) > 0 && found {
				f(key, text, str)
			}
			return e
		}
		var key, text []byte
		var hasKey, hasVal, str, found bool
		e, ok := fastObject(b, at, func(mk []byte, vat int) int {
			switch bstr(mk) {
			case "key":
				k, v, e, ok := fastValue(b, vat)
				if !ok || k != jsonscan.KString || hasKey {
					return -1
				}
				key, hasKey = v, true
				return e
			case "value":
				if hasVal {
					return -1
				}
				hasVal = true
				members := 0
				e, ok := fastObject(b, vat, func(vk []byte, at int) int {
					members++
					k, v, e, ok := fastValue(b, at)
					if !ok || members > 1 {
						return -1
					}
					switch bstr(vk) {
					case "stringValue", "string_value":
						text, str, found = v, true, k == jsonscan.KString
					case "intValue", "int_value", "doubleValue", "double_value", "boolValue", "bool_value":
						text, str, found = v, false, k == jsonscan.KString || k == jsonscan.KNumber || k == jsonscan.KBool
					}
					return e
				})
				if !ok {
					return -1
				}
				return e
			}
			return -1
		})
		if !ok || !hasKey || !hasVal {
			return -1
		}
		if len(key) > 0 && found {
			f(key, text, str)
		}
		return e
	})
	if !ok {
		return -1
	}
	return end
}

// compactKV reads the KeyValue at b[at] when it is written as the
// collector's file exporter writes every one, {"key":"K","value":{"T":V}}
// with no whitespace and a plain key, and returns what otlpFastKVs's
// general walk of the element gives for it (key, text, str and found)
// and the index after it; end is -1, with nothing decided, for any other
// shape, which the walk then reads. The element's members are matched as
// literal bytes rather than walked with a callback each: three objects'
// worth of keys, every attribute of every span.
func compactKV(b []byte, at int) (key, text []byte, str, found bool, end int) {
	const head, mid = `{"key":"`, `","value":{"`
	if len(b)-at < len(head) || bstr(b[at:at+len(head)]) != head {
		return nil, nil, false, false, -1
	}
	j, ok := jsonscan.PlainString(b, at+len(head))
	if !ok || len(b)-j < len(mid) || bstr(b[j:j+len(mid)]) != mid {
		return nil, nil, false, false, -1
	}
	key = b[at+len(head) : j]
	k := j + len(mid)
	q, ok := jsonscan.PlainString(b, k)
	if !ok || q+1 >= len(b) || b[q+1] != ':' {
		return nil, nil, false, false, -1
	}
	vk := bstr(b[k:q])
	kind, v, e, ok := fastValue(b, q+2)
	if !ok || len(b)-e < 2 || b[e] != '}' || b[e+1] != '}' {
		return nil, nil, false, false, -1
	}
	switch vk {
	case "stringValue", "string_value":
		text, str, found = v, true, kind == jsonscan.KString
	case "intValue", "int_value", "doubleValue", "double_value", "boolValue", "bool_value":
		text, str, found = v, false, kind == jsonscan.KString || kind == jsonscan.KNumber || kind == jsonscan.KBool
	}
	return key, text, str, found, e + 2
}

// otlpFastAttrs reads a span's attributes at b[i] as otlpSpan's callback
// does: each scalar given to keepAttr and addAttr (error to the error
// flag). It returns the index after the list, or -1.
func (w *jsonWalker) otlpFastAttrs(b []byte, i int, rec *record.TraceRecord, borrow bool) int {
	return otlpFastKVs(b, i, func(key, text []byte, str bool) {
		w.fastKeepAttr(rec, key, text, borrow)
		// addAttr may keep the key (a value it could not read is recorded
		// under it), as the general path's own string.
		ak := w.attrIntern.Get(key)
		if !utf8.Valid(key) {
			ak = string(key)
		}
		if ak == "error" {
			if b, err := record.ParseBool(text); err == nil && b {
				rec.ErrFlag = true
			}
			return
		}
		rec.AddAttr(ak, text, str, w.hopAttr)
	})
}

// otlpFastResource reads the Resource object at b[i] into res as
// otlpReadResource does, when its attributes have the usual shape; -1
// when otlpReadResource must (res is then undefined).
func (w *jsonWalker) otlpFastResource(b []byte, i int, res *otlpResource) int {
	e, ok := fastObject(b, i, func(key []byte, at int) int {
		if bstr(key) != "attributes" || at >= len(b) || b[at] != '[' {
			return fastSkip(b, at) // passed over by otlpReadResource too
		}
		return otlpFastKVs(b, at, func(ak, av []byte, _ bool) {
			if bstr(ak) == "service.name" {
				res.service = w.intern.Get(av)
			}
			if w.hopAttr != "" && bstr(ak) == w.hopAttr {
				res.hop, res.hopSet = string(av), true
			}
			if record.KeepValue(bstr(ak), av) {
				res.attrs = append(res.attrs, span.Attr{Key: w.attrIntern.Get(ak), Value: w.attrIntern.Get(av)})
			}
		})
	})
	if !ok {
		return -1
	}
	return e
}

// otlpFastScope is otlpScope for the scope object at b[i] when its members
// are plain; end is -1 when otlpScope must read it.
func (w *jsonWalker) otlpFastScope(b []byte, i int) (attrs []span.Attr, end int) {
	e, ok := fastObject(b, i, func(key []byte, at int) int {
		k, v, e, ok := fastValue(b, at)
		if !ok {
			return -1
		}
		if k != jsonscan.KString || len(v) == 0 {
			return e
		}
		switch bstr(key) {
		case "name":
			attrs = append(attrs, span.Attr{Key: "otel.scope.name", Value: w.attrIntern.Get(v)})
		case "version":
			attrs = append(attrs, span.Attr{Key: "otel.scope.version", Value: w.attrIntern.Get(v)})
		}
		return e
	})
	if !ok {
		return nil, -1
	}
	return attrs, e
}

// otlpFastRecord is a span read by otlpFastLine, waiting for the line to
// be read whole.
type otlpFastRecord struct {
	rec   record.TraceRecord
	res   int // its resource, in otlpFastState.res
	scope []span.Attr
	at    pos
	late  bool // read before its resource: emitted after the resource's other spans
}

// otlpFastState is what otlpFastLine reuses from line to line.
type otlpFastState struct {
	recs []otlpFastRecord
	res  []otlpResource
	// br is the walker's reader: src.R, or a larger buffer over it once a
	// line did not fit (see peekLine).
	br *bufio.Reader
}

// decodeOTLPFast is decodeOTLP with the fast paths.
func decodeOTLPFast(src *record.Source) error {
	w := newWalker(src)
	st := &otlpFastState{br: src.R}
	return w.run(func() error {
		c, err := w.top()
		if err == nil && c == '{' && w.s.off == w.s.lineStart && w.otlpFastLine(st) {
			return nil
		}
		return w.otlpTop()
	})
}

// peekLine returns the line at the reader's position, with its newline,
// without consuming it; false when it is longer than otlpLineBuffer or
// the reader failed (the general walker reports that). The first line
// longer than the reader's buffer puts a larger buffer over it (the
// walker reads through it from then on: nothing is lost or reordered).
func (w *jsonWalker) peekLine(st *otlpFastState) ([]byte, bool) {
	scanned := 0
	for {
		br := st.br
		buf, _ := br.Peek(br.Buffered())
		if len(buf) > scanned {
			if i := bytes.IndexByte(buf[scanned:], '\n'); i >= 0 {
				return buf[:scanned+i+1], true
			}
			scanned = len(buf)
		}
		if len(buf) == br.Size() {
			if br.Size() >= otlpLineBuffer {
				return nil, false
			}
			st.br = bufio.NewReaderSize(br, otlpLineBuffer)
			w.s.br = st.br
			continue
		}
		if more, err := br.Peek(len(buf) + 1); err != nil {
			if err == io.EOF && len(more) == len(buf) && len(buf) > 0 {
				return buf, true // the last line, without a newline
			}
			return nil, false
		}
	}
}

// consumeLine moves the walker past the n bytes of a line peekLine gave.
func (w *jsonWalker) consumeLine(st *otlpFastState, line []byte) {
	st.br.Discard(len(line))
	w.s.off += int64(len(line))
	if line[len(line)-1] == '\n' {
		w.s.line++
		w.s.lineStart = w.s.off
	}
}

// otlpFastLine reads the line at the reader's position (a line start whose
// first byte is '{') when the fast path can read it whole, emits its
// spans and consumes it. It reports false, having consumed and emitted
// nothing, when the general walker must read it.
func (w *jsonWalker) otlpFastLine(st *otlpFastState) bool {
	line, ok := w.peekLine(st)
	if !ok {
		return false
	}
	st.recs, st.res = st.recs[:0], st.res[:0]
	n, ok := w.otlpFastDecode(st, line, w.here())
	if !ok {
		return false
	}
	w.otlpFastCommit(st, 0, n)
	w.consumeLine(st, line)
	return true
}

// otlpFastDecode reads line, which starts at base, into records appended to
// st.recs (from its length; their resources to st.res) and reports how
// many, or false when the general path must read the line (st is then as
// it was, but for the contents of unused records).
func (w *jsonWalker) otlpFastDecode(st *otlpFastState, line []byte, base pos) (int, bool) {
	n0, r0 := len(st.recs), len(st.res)
	n := n0
	st.recs = st.recs[:cap(st.recs)]
	defer func() { st.recs = st.recs[:n] }()
	borrow := w.src.Options().Borrowed
	maxRec := w.src.Options().MaxRecord
	found := false
	e, ok := fastObject(line, 0, func(key []byte, at int) int {
		switch bstr(key) {
		case "resourceSpans", "resource_spans", "batches":
		case "result", "trace":
			return -1 // wrappers: the general path
		default:
			return fastSkip(line, at)
		}
		found = true
		end, ok := fastElems(line, at, func(ri int) int {
			st.res = append(st.res, otlpResource{})
			r := len(st.res) - 1
			end, ok := fastObject(line, ri, func(rk []byte, at int) int {
				switch bstr(rk) {
				case "resource":
					if st.res[r].seen {
						return -1
					}
					if e := w.otlpFastResource(line, at, &st.res[r]); e >= 0 {
						st.res[r].seen = true
						return e
					}
					st.res[r] = otlpResource{}
					k, rv, e, ok := fastValue(line, at)
					if !ok || k != jsonscan.KObject || len(rv) > maxRec || st.res[r].seen || w.otlpReadResource(rv, &st.res[r]) != nil {
						return -1
					}
					st.res[r].seen = true
					return e
				case "scopeSpans", "scope_spans", "instrumentationLibrarySpans", "instrumentation_library_spans":
				default:
					return fastSkip(line, at)
				}
				end, ok := fastElems(line, at, func(si int) int {
					var scope []span.Attr
					scopeSeen, spansSeen := false, false
					end, ok := fastObject(line, si, func(sk []byte, at int) int {
						switch bstr(sk) {
						case "scope", "instrumentationLibrary", "instrumentation_library":
							_, sv, e, ok := fastValue(line, at)
							if !ok || scopeSeen || spansSeen || len(sv) > maxRec {
								return -1
							}
							scopeSeen = true
							if scope, _ = w.otlpFastScope(line, at); scope == nil {
								scope = w.otlpScope(sv)
							}
							return e
						case "spans":
						default:
							return fastSkip(line, at)
						}
						if spansSeen {
							return -1
						}
						spansSeen = true
						end, ok := fastElems(line, at, func(pi int) int {
							if n == len(st.recs) {
								st.recs = append(st.recs, otlpFastRecord{})
							}
							fr := &st.recs[n]
							pe, ok := w.otlpFastSpan(line, pi, &fr.rec, borrow)
							if !ok || pe-pi > maxRec {
								return -1
							}
							fr.res, fr.scope, fr.late = r, scope, !st.res[r].seen
							fr.at = pos{base.off + int64(pi), base.line}
							n++
							return pe
						})
						if !ok {
							return -1
						}
						return end
					})
					if !ok {
						return -1
					}
					return end
				})
				if !ok {
					return -1
				}
				return end
			})
			if !ok {
				return -1
			}
			return end
		})
		if !ok {
			return -1
		}
		return end
	})
	if !ok || !found || fastWS(line, e) != len(line) {
		n = n0
		st.res = st.res[:r0]
		return 0, false
	}
	return n - n0, true
}

// otlpFastCommit emits the n records of a line from st.recs[from:] in the
// general path's order (the spans a resource's "resource" follows come
// after its other spans), each with the index it was read at.
func (w *jsonWalker) otlpFastCommit(st *otlpFastState, from, n int) {
	for i := from; i < from+n; {
		r := st.recs[i].res
		j := i
		for j < from+n && st.recs[j].res == r {
			j++
		}
		for _, late := range [2]bool{false, true} {
			for k := i; k < j; k++ {
				if fr := &st.recs[k]; fr.late == late {
					w.otlpEmit(&fr.rec, &st.res[r], fr.scope, w.index+int64(k-from)+1, fr.at)
				}
			}
		}
		i = j
	}
	w.index += int64(n)
}

// otlpSpanInPlace is nextOTLPSpan's fast path, for the spans of a big
// document (one pretty-printed TracesData, a line longer than the line
// buffer): the span at the reader's position is read with otlpFastSpan in
// place in the read buffer, without the streaming tokenizer's copy, and
// consumed, as nextOTLPSpan would have read it (the same index, position
// and raw bytes, copied to w.buf for the callers that read more of them).
// ok is false, with nothing consumed and rec reset, when the general path
// must read it.
func (w *jsonWalker) otlpSpanInPlace(rec *record.TraceRecord) (raw []byte, at pos, ok bool) {
	c, err := w.next()
	if err != nil || c != '{' {
		return nil, at, false
	}
	at = w.here()
	maxRec := w.src.Options().MaxRecord
	b, n := w.fastInPlace(false, func(b []byte) int {
		e, ok := w.otlpFastSpan(b, 0, rec, false)
		if !ok || e > maxRec {
			return -1
		}
		return e
	})
	if n < 0 {
		rec.Reset()
		return nil, at, false
	}
	w.buf = append(w.buf[:0], b[:n]...)
	w.s.consume(b, n)
	w.index++
	return w.buf, at, true
}
