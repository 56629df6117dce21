package tracejson

// Jaeger's query JSON, as /api/traces returns it and the UI downloads it:
//
//	{"data":[{"traceID":…,"spans":[…],"processes":{"p1":{"serviceName":…,"tags":[…]}}}],
//	 "total":0,"limit":0,"offset":0,"errors":null}
//
// Also read: a bare trace object without the envelope, an array of traces,
// several documents one after another, spans that embed their "process"
// instead of a processID, and the protobuf JSON of api_v2 (RFC 3339
// startTime, "0.000123s" durations, base64 ids).
//
// Times are µs. The parent is the first CHILD_OF reference, else
// parentSpanID, else the first FOLLOWS_FROM reference. Tags are
// [{key,type,value}]; error=true (a bool or the string "true") or
// otel.status_code=ERROR mark a failure; span.kind gives the kind.
//
// span.Span.Attrs are the process's tags, then the span's, in the order
// written, every scalar one but those attrKept leaves to the span's fields
// (span.kind, error, otel.status_*): a string as written, an int64, float64
// or bool as its JSON literal. Binary tags (base64 text) are left out, like
// OTLP's bytesValue; the process's serviceName is the span's Service, not
// an attribute.
//
// The data array streams one trace at a time: a trace lists its spans
// before the processes that name their services, so a trace is the unit
// that must be held.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tailscope/tailscope/ingest/internal/jsonscan"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

func DecodeJaeger(src *record.Source) error {
	w := newWalker(src)
	return w.run(w.jaegerTop)
}

func (w *jsonWalker) jaegerTop() error {
	c, err := w.top()
	if err != nil {
		return err // io.EOF at the end of the input
	}
	at := w.here()
	switch c {
	case '{':
		w.open()
		return w.jaegerObject(at)
	case '[':
		return w.array("top-level array", w.jaegerTraceElem) // jaegerfast.go
	}
	if err := w.skipValue(); err != nil {
		return err
	}
	w.src.Skip(at.line, w.index+1, record.ReasonBadDocument, fmt.Sprintf("at byte %d: want a Jaeger object, got %s", at.off, byteKind(c)))
	return nil
}

// ReasonNotJaeger is the skip of a top-level object that is neither the
// envelope nor a trace.
const ReasonNotJaeger = "not a Jaeger document"

// jaegerObject reads a top-level object after its '{': the envelope
// (whose data array streams) or a bare trace (whose members are held).
func (w *jsonWalker) jaegerObject(at pos) error {
	var bare jaegerTrace
	isTrace, envelope := false, false
	var keys []string
	err := w.members(func(key string) error {
		switch key {
		case "data":
			envelope = true
			return w.array("data", w.jaegerTraceElem)
		case "traceID", "traceId", "spans", "processes":
			isTrace = true
			// Each part of a bare trace in its own buffer: both are
			// held until the trace ends.
			raw, rat, err := w.raw(nil)
			if err == errTooLong {
				bare.tooLong = true
				return nil
			}
			if err != nil {
				return err
			}
			bare.at = at
			switch key {
			case "spans":
				bare.spans, bare.spansAt = raw, rat
			case "processes":
				bare.processes = raw
			}
			return nil
		}
		if len(keys) < 6 {
			keys = append(keys, strconv.Quote(key))
		}
		return w.skipValue()
	})
	if err != nil {
		return err
	}
	switch {
	case bare.tooLong:
		w.tooLong(at)
	case isTrace:
		w.jaegerTrace(&bare)
	case !envelope:
		what := "an object without data, traceID or spans"
		if len(keys) > 0 {
			what += " (keys " + strings.Join(keys, ", ") + ")"
		}
		w.src.Skip(at.line, w.index+1, ReasonNotJaeger, fmt.Sprintf("at byte %d: %s", at.off, what))
	}
	return nil
}

// jaegerTrace is one trace's raw parts.
type jaegerTrace struct {
	spans, processes []byte
	at, spansAt      pos // where the trace and its spans start
	tooLong          bool
}

// jaegerProcess is what a process gives its spans.
type jaegerProcess struct {
	service string
	hop     string
	hopSet  bool
	bad     error // what could not be read of it
	attrs   []span.Attr
}

// jaegerTraceValue reads one element of data[] or of a top-level array.
func (w *jsonWalker) jaegerTraceValue() error {
	raw, at, err := w.raw(w.buf)
	w.buf = raw
	if err == errTooLong {
		w.tooLong(at)
		return nil
	}
	if err != nil {
		return err
	}
	tr := jaegerTrace{at: at}
	lc := newLineCounter(raw, at)
	err = objectMembers(raw, func(key string, k jsonscan.JSONKind, v []byte) error {
		switch key {
		case "spans":
			tr.spans = v
			tr.spansAt = lc.pos(cap(raw) - cap(v))
		case "processes":
			tr.processes = v
		}
		return nil
	})
	if err != nil {
		w.src.Skip(at.line, w.index+1, record.ReasonBadDocument, fmt.Sprintf("at byte %d: trace: %v", at.off, err))
		return nil
	}
	w.jaegerTrace(&tr)
	return nil
}

func (w *jsonWalker) jaegerTrace(tr *jaegerTrace) {
	procs := map[string]*jaegerProcess{}
	if len(tr.processes) > 0 && tr.processes[0] == '{' {
		// A process that cannot be read whole costs its spans only what
		// it could not say (each counts it as a value lost).
		err := objectMembers(tr.processes, func(id string, k jsonscan.JSONKind, v []byte) error {
			if k != jsonscan.KObject {
				procs[id] = &jaegerProcess{bad: fmt.Errorf("process %q: want an object, got %s", id, kindName(k))}
				return nil
			}
			p, err := w.jaegerProcess(v)
			if err != nil {
				p.bad = fmt.Errorf("process %q: %v", id, err)
			}
			procs[id] = p
			return nil
		})
		if err != nil {
			for id, p := range procs {
				if p.bad == nil {
					procs[id].bad = fmt.Errorf("processes at line %d, byte %d: %v", tr.at.line, tr.at.off, err)
				}
			}
		}
	}
	if len(tr.spans) == 0 || tr.spans[0] == 'n' { // absent or null
		return
	}
	if tr.spans[0] != '[' {
		w.src.Skip(tr.spansAt.line, w.index+1, record.ReasonBadDocument, fmt.Sprintf("at byte %d: spans: want an array", tr.spansAt.off))
		return
	}
	var rec record.TraceRecord
	lc := newLineCounter(tr.spans, tr.spansAt)
	err := arrayElems(tr.spans, func(k jsonscan.JSONKind, v []byte, off int) error {
		w.index++
		at := lc.pos(off)
		if k != jsonscan.KObject {
			w.skipSpan(w.index, at, record.ReasonNotSpan, "want an object, got "+kindName(k))
			return nil
		}
		rec.Reset()
		if reason, detail := w.jaegerSpan(v, &rec, procs); reason != "" {
			w.skipSpan(w.index, at, reason, detail)
			return nil
		}
		rec.Finish(&w.intern)
		w.emit(&rec, w.index, at)
		return nil
	})
	if err != nil {
		// The walker checked only the balance of the trace's brackets
		// and strings: the scanner found the rest bad.
		w.src.Skip(tr.spansAt.line, w.index+1, record.ReasonBadJSON, fmt.Sprintf("at byte %d: spans: %v", tr.spansAt.off, err))
	}
}

func (w *jsonWalker) jaegerProcess(raw []byte) (*jaegerProcess, error) {
	p := &jaegerProcess{}
	err := objectMembers(raw, func(key string, k jsonscan.JSONKind, v []byte) error {
		switch key {
		case "serviceName":
			if k == jsonscan.KString {
				p.service = w.intern.Get(v)
			}
		case "tags":
			if k == jsonscan.KArray {
				err := jaegerTags(v, func(tk string, str, bin bool, tv []byte) error {
					if w.hopAttr != "" && tk == w.hopAttr {
						p.hop, p.hopSet = string(tv), true
					}
					if !bin && record.KeepValue(tk, tv) {
						p.attrs = append(p.attrs, span.Attr{Key: w.attrIntern.Get([]byte(tk)), Value: w.attrIntern.Get(tv)})
					}
					return nil
				})
				// The tags were read for the hop only before they were
				// attributes: a bad one counts where it did then.
				if w.hopAttr != "" {
					return err
				}
			}
		}
		return nil
	})
	return p, err
}

// jaegerTags walks [{key, type, value}], giving each scalar value's text;
// bin says the type is "binary" (a base64 string, no attribute text).
//
// A tag that is not a well-formed {key, value} does not stop the walk: the
// others are read, and the first such problem is returned at the end.
func jaegerTags(raw []byte, f func(key string, str, bin bool, v []byte) error) error {
	var first error
	err := arrayElems(raw, func(k jsonscan.JSONKind, elem []byte, _ int) error {
		if err := jaegerTag(k, elem, f); err != nil && first == nil {
			first = err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return first
}

func jaegerTag(k jsonscan.JSONKind, elem []byte, f func(key string, str, bin bool, v []byte) error) error {
	{
		if k != jsonscan.KObject {
			return fmt.Errorf("tag: want an object, got %s", kindName(k))
		}
		var key string
		var val []byte
		var vk jsonscan.JSONKind
		has, bin := false, false
		if err := objectMembers(elem, func(mk string, k jsonscan.JSONKind, v []byte) error {
			switch mk {
			case "key":
				if k != jsonscan.KString {
					return fmt.Errorf("tag key: want a string, got %s", kindName(k))
				}
				key = string(v)
			case "value":
				val, vk, has = append([]byte(nil), v...), k, true
			case "type":
				bin = k == jsonscan.KString && strings.EqualFold(string(v), "binary")
			}
			return nil
		}); err != nil {
			return err
		}
		if !has || key == "" || vk == jsonscan.KObject || vk == jsonscan.KArray || vk == jsonscan.KNull {
			return nil
		}
		if err := f(key, vk == jsonscan.KString, bin, val); err != nil {
			return fmt.Errorf("tag %v", err)
		}
		return nil
	}
}

// jaegerSpan reads one span object into rec. The duration is required;
// a value of any other member that cannot be read is recorded in rec.soft
// and the span kept.
func (w *jsonWalker) jaegerSpan(raw []byte, rec *record.TraceRecord, procs map[string]*jaegerProcess) (reason, detail string) {
	sp := &rec.Span
	var hasDur bool
	var badDur error
	var refs []byte
	var parentField string
	var proc *jaegerProcess
	err := objectMembers(raw, func(key string, k jsonscan.JSONKind, v []byte) error {
		if k == jsonscan.KNull {
			return nil
		}
		var err error
		field := key
		switch key {
		case "traceID", "traceId":
			sp.TraceID, err = idValue(key, k, v, 32)
			field = "trace_id"
		case "spanID", "spanId":
			sp.SpanID, err = idValue(key, k, v, 16)
			field = "span_id"
		case "parentSpanID", "parentSpanId":
			parentField, err = idValue(key, k, v, 16)
			field = "parent_id"
		case "operationName":
			sp.Name, err = w.textValue(key, k, v)
			field = "name"
		case "references":
			if k != jsonscan.KArray {
				err = fmt.Errorf("references: want an array, got %s", kindName(k))
				break
			}
			refs = v
		case "startTime":
			field = "start"
			err = startMicros(key, k, v, &sp.Start)
		case "duration":
			if k != jsonscan.KNumber && k != jsonscan.KString {
				badDur = fmt.Errorf("duration: want µs, got %s", kindName(k))
				return nil
			}
			sp.Duration, badDur = parseMicros(key, v, true)
			hasDur = badDur == nil
			return nil
		case "processID", "processId":
			if k == jsonscan.KString {
				proc = procs[string(v)]
			}
		case "process":
			if k == jsonscan.KObject {
				proc, err = w.jaegerProcess(v)
			}
		case "tags":
			if k != jsonscan.KArray {
				err = fmt.Errorf("tags: want an array, got %s", kindName(k))
				break
			}
			err = w.jaegerSpanTags(rec, v)
		}
		if err != nil {
			rec.Ignore(field, err)
		}
		return nil
	})
	if err != nil {
		return record.ReasonBadJSON, err.Error()
	}
	if !hasDur {
		if badDur != nil {
			return record.ReasonBadValue, badDur.Error()
		}
		return record.ReasonNoDuration, "no duration"
	}
	jaegerSetParent(rec, parentField, refs)
	w.jaegerSetProcess(rec, proc)
	return "", ""
}

// jaegerSpanTags applies a span's tags array: error is the OpenTracing
// boolean, span.kind the span's kind, the rest go to AddAttr.
func (w *jsonWalker) jaegerSpanTags(rec *record.TraceRecord, v []byte) error {
	return jaegerTags(v, func(tk string, str, bin bool, tv []byte) error {
		if !bin {
			rec.KeepAttr(&w.attrIntern, tk, tv)
		}
		switch tk {
		case "error":
			if b, e := record.ParseBool(tv); e == nil && b {
				rec.ErrFlag = true
			}
			return nil
		case "span.kind":
			rec.Span.Kind = record.NormKind(tv)
			return nil
		}
		rec.AddAttr(tk, tv, str, w.hopAttr)
		return nil
	})
}

// jaegerSetParent sets the span's parent: a CHILD_OF reference, else the
// parentSpanID member, else a FOLLOWS_FROM reference.
func jaegerSetParent(rec *record.TraceRecord, parentField string, refs []byte) {
	sp := &rec.Span
	sp.ParentID = parentField
	if refs == nil {
		return
	}
	child, follows, err := jaegerParent(refs)
	if err != nil {
		rec.Ignore("references", err)
	}
	switch {
	case child != "":
		sp.ParentID = child
	case parentField == "":
		sp.ParentID = follows
	}
}

// jaegerSetProcess gives the span what its process says (nil: no
// process): its attributes before the span's own, its service, its hop
// when the span's tags named none, and a problem reading it.
func (w *jsonWalker) jaegerSetProcess(rec *record.TraceRecord, proc *jaegerProcess) {
	sp := &rec.Span
	var res []span.Attr
	if proc != nil {
		res = proc.attrs
	}
	w.setAttrs(sp, res, nil, rec.Attrs)
	if proc == nil {
		return
	}
	sp.Service = proc.service
	if !rec.HopSet && proc.hopSet {
		rec.Hop, rec.HopSet = proc.hop, true
	}
	if proc.bad != nil {
		rec.Ignore("process", proc.bad)
	}
}

// jaegerParent returns the first CHILD_OF and the first FOLLOWS_FROM
// reference ("" when there is none).
func jaegerParent(raw []byte) (child, follows string, err error) {
	err = arrayElems(raw, func(k jsonscan.JSONKind, v []byte, _ int) error {
		if k != jsonscan.KObject {
			return fmt.Errorf("reference: want an object, got %s", kindName(k))
		}
		var typ, id string
		if err := objectMembers(v, func(key string, k jsonscan.JSONKind, v []byte) error {
			switch key {
			case "refType", "ref_type":
				typ = strings.ToUpper(string(v))
			case "spanID", "spanId":
				if k == jsonscan.KString {
					id = record.NormID(v, 16)
				}
			}
			return nil
		}); err != nil {
			return err
		}
		switch typ {
		case "CHILD_OF", "":
			if child == "" {
				child = id
			}
		case "FOLLOWS_FROM":
			if follows == "" {
				follows = id
			}
		}
		return nil
	})
	return child, follows, err
}
