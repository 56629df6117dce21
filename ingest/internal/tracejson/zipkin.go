package tracejson

// Zipkin v2 JSON: an array of spans (POST /api/v2/spans, GET
// /api/v2/trace/{id}) or an array of arrays, one per trace (GET
// /api/v2/traces).
//
//	[{"traceId":…,"id":…,"parentId":…,"name":…,"kind":"CLIENT",
//	  "timestamp":µs,"duration":µs,"localEndpoint":{"serviceName":…},
//	  "remoteEndpoint":{"serviceName":…},"tags":{"error":""},"shared":true}]
//
// timestamp and duration are µs and either may be absent: a span without a
// duration says nothing about latency and is skipped ("missing duration");
// a span with a duration but no timestamp is kept with start 0. The error
// tag's presence marks a failure whatever its value, even "".
//
// Shared spans: with B3 propagation a server may reuse its client's span
// id for its own half (shared:true). Both halves are real, separately
// timed operations, but span.Assemble de-duplicates span ids (first copy
// wins), so one would be lost. The shared server half therefore gets the
// derived id "<id>:server" and the client's id as its parent, which is what
// it is: the server side of that client call. The server's own children
// still name the shared id as their parent and so hang under the client
// half; both halves cover the same call, so the tree keeps its timing.
//
// span.Span.Attrs are the local endpoint's address first (net.host.ip,
// net.host.port: where the span ran, the instance), then, in the order
// written, the tags (every scalar one but error, as their text) and the
// remote endpoint (peer.service, net.peer.ip, net.peer.port: whom it
// called). See zipkinEndpointAttrs.
//
// The outer array streams element by element; an inner array (one trace)
// is held while it is read.

import (
	"fmt"

	"github.com/tailscope/tailscope/ingest/internal/jsonscan"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// zipkinSharedSuffix is appended to the span id of a shared server half.
const zipkinSharedSuffix = ":server"

func DecodeZipkin(src *record.Source) error {
	w := newWalker(src)
	if zipkinFastEnabled {
		z := &zipkinFast{w: w}
		return w.run(z.top) // zipkinfast.go
	}
	return w.run(w.zipkinTop)
}

func (w *jsonWalker) zipkinTop() error {
	c, err := w.top()
	if err != nil {
		return err // io.EOF at the end of the input
	}
	if c == '[' {
		return w.array("top-level array", w.zipkinElem)
	}
	// A lone span object (one per line, as some pipelines write them).
	return w.zipkinElem()
}

// zipkinElem reads one element of the outer array: a span, or an array of
// spans (one trace).
func (w *jsonWalker) zipkinElem() error {
	raw, at, err := w.raw(w.buf)
	w.buf = raw
	if err == errTooLong {
		w.tooLong(at)
		return nil
	}
	if err != nil {
		return err
	}
	if len(raw) > 0 && raw[0] == '[' {
		lc := newLineCounter(raw, at)
		err := arrayElems(raw, func(k jsonscan.JSONKind, v []byte, off int) error {
			w.zipkinSpan(k, v, lc.pos(off))
			return nil
		})
		if err != nil {
			w.src.Skip(at.line, w.index+1, record.ReasonBadJSON, fmt.Sprintf("at byte %d: %v", at.off, err))
		}
		return nil
	}
	k := jsonscan.KObject
	switch {
	case len(raw) == 0:
		k = jsonscan.KNull
	case raw[0] == '"':
		k = jsonscan.KString
	case raw[0] == 't' || raw[0] == 'f':
		k = jsonscan.KBool
	case raw[0] == 'n':
		k = jsonscan.KNull
	case raw[0] != '{':
		k = jsonscan.KNumber
	}
	w.zipkinSpan(k, raw, at)
	return nil
}

func (w *jsonWalker) zipkinSpan(k jsonscan.JSONKind, raw []byte, at pos) {
	w.index++
	if k != jsonscan.KObject {
		w.skipSpan(w.index, at, record.ReasonNotSpan, "want a span object, got "+kindName(k))
		return
	}
	var rec record.TraceRecord
	if reason, detail := w.zipkinRecord(raw, &rec); reason != "" {
		w.skipSpan(w.index, at, reason, detail)
		return
	}
	rec.Finish(&w.intern)
	w.emit(&rec, w.index, at)
}

// zipkinRecord reads one span object into rec. The duration is required;
// a value of any other member that cannot be read is recorded in rec.soft
// and the span kept.
func (w *jsonWalker) zipkinRecord(raw []byte, rec *record.TraceRecord) (reason, detail string) {
	sp := &rec.Span
	var hasDur, shared bool
	var badDur error
	var local []span.Attr // the local endpoint's attributes
	err := objectMembers(raw, func(key string, k jsonscan.JSONKind, v []byte) error {
		if k == jsonscan.KNull {
			return nil
		}
		var err error
		field := key
		switch key {
		case "traceId":
			sp.TraceID, err = idValue(key, k, v, 32)
			field = "trace_id"
		case "id":
			sp.SpanID, err = idValue(key, k, v, 16)
			field = "span_id"
		case "parentId":
			sp.ParentID, err = idValue(key, k, v, 16)
			field = "parent_id"
		case "name":
			sp.Name, err = w.textValue(key, k, v)
		case "kind":
			if k != jsonscan.KString {
				err = fmt.Errorf("kind: want a string, got %s", kindName(k))
			} else if s := zipkinKind(v); s != "" {
				sp.Kind = s
			} else {
				err = fmt.Errorf("kind: want CLIENT, SERVER, PRODUCER or CONSUMER, got %q", record.ShortValue(v))
			}
		case "timestamp":
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
		case "localEndpoint", "remoteEndpoint":
			if k != jsonscan.KObject {
				err = fmt.Errorf("%s: want an object, got %s", key, kindName(k))
				break
			}
			local, err = w.zipkinEndpoint(rec, key, v, local)
		case "tags":
			if k != jsonscan.KObject {
				err = fmt.Errorf("tags: want an object, got %s", kindName(k))
				break
			}
			err = w.zipkinTags(rec, v)
		case "shared":
			shared = k == jsonscan.KBool && string(v) == "true"
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
		return record.ReasonNoDuration, "no duration (an incomplete or merged-away span)"
	}
	if shared && sp.SpanID != "" {
		sp.ParentID = sp.SpanID
		sp.SpanID += zipkinSharedSuffix
	}
	w.setAttrs(sp, local, nil, rec.Attrs)
	return "", ""
}

// zipkinEndpoint reads the endpoint object v of member key: the local
// endpoint's service is the span's, the remote one's its peer; each
// one's address is appended as attributes, the local endpoint's to local
// (returned), which the emit puts before the span's own, the remote
// one's to the span's own.
func (w *jsonWalker) zipkinEndpoint(rec *record.TraceRecord, key string, v []byte, local []span.Attr) ([]span.Attr, error) {
	var ip4, ip6, port []byte
	err := objectMembers(v, func(ek string, k jsonscan.JSONKind, ev []byte) error {
		switch {
		case ek == "serviceName" && k == jsonscan.KString && len(ev) > 0:
			if key == "localEndpoint" {
				rec.Span.Service = w.intern.Get(ev)
			} else {
				rec.SetPeer(ev, 0)
				rec.KeepAttr(&w.attrIntern, "peer.service", ev)
			}
		case ek == "ipv4" && k == jsonscan.KString && len(ev) > 0:
			ip4 = append(ip4[:0], ev...)
		case ek == "ipv6" && k == jsonscan.KString && len(ev) > 0:
			ip6 = append(ip6[:0], ev...)
		case ek == "port" && (k == jsonscan.KNumber || k == jsonscan.KString) && len(ev) > 0 && string(ev) != "0":
			port = append(port[:0], ev...)
		}
		return nil
	})
	if ip4 == nil {
		ip4 = ip6
	}
	if key == "localEndpoint" {
		local = zipkinEndpointAttrs(local, &w.attrIntern, "net.host.", ip4, port)
	} else {
		rec.Attrs = zipkinEndpointAttrs(rec.Attrs, &w.attrIntern, "net.peer.", ip4, port)
	}
	return local, err
}

// zipkinTags applies a span's tags object. A tag whose value is an
// object or array is left out and the first such is returned, after the
// other tags were applied.
func (w *jsonWalker) zipkinTags(rec *record.TraceRecord, v []byte) error {
	var bad error
	err := objectMembers(v, func(tk string, k jsonscan.JSONKind, tv []byte) error {
		if k == jsonscan.KObject || k == jsonscan.KArray {
			if bad == nil {
				bad = fmt.Errorf("tag %q: want a string, got %s", tk, kindName(k))
			}
			return nil
		}
		rec.KeepAttr(&w.attrIntern, tk, tv)
		if tk == "error" {
			w.zipkinErrorTag(rec, tv)
			return nil
		}
		rec.AddAttr(tk, tv, k == jsonscan.KString, w.hopAttr)
		return nil
	})
	if err == nil {
		err = bad
	}
	return err
}

// zipkinErrorTag applies Zipkin's error tag, which both paths leave out
// of AddAttr: its presence is failure (Brave writes the exception
// message, or "" when there is none), its text the span's message.
func (w *jsonWalker) zipkinErrorTag(rec *record.TraceRecord, tv []byte) {
	rec.ErrFlag = true
	if rec.Message == "" {
		rec.Message = string(tv)
	}
	if w.hopAttr == "error" {
		rec.Hop, rec.HopSet = string(tv), true
	}
}

// zipkinEndpointAttrs appends an endpoint's address as attributes: prefix
// "net.host." for the local endpoint, "net.peer." for the remote one, each
// with "ip" (ipv4, else ipv6) and "port" (left out when 0, Zipkin's
// "unknown"). These are the names OpenTelemetry's semantic conventions used
// for the two ends of a connection when Zipkin was mapped to them.
func zipkinEndpointAttrs(dst []span.Attr, in *record.Interner, prefix string, ip, port []byte) []span.Attr {
	if len(ip) > 0 {
		dst = append(dst, span.Attr{Key: in.Get([]byte(prefix + "ip")), Value: in.Get(ip)})
	}
	if len(port) > 0 {
		dst = append(dst, span.Attr{Key: in.Get([]byte(prefix + "port")), Value: in.Get(port)})
	}
	return dst
}
