package ingest

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// A neutral model of test traces, written as a vParquet4 block, a
// vParquet3 block and OTLP JSON.
type tmAttr struct {
	k string
	v any // string, int64, float64, bool, []string (array), map[string]string (kvlist)
}

type tmEvent struct {
	name  string
	attrs []tmAttr
}

type tmSpan struct {
	id, parent  []byte
	name        string
	kind        int
	start, dur  uint64
	status      int
	msg, tstate string
	attrs       []tmAttr
	events      []tmEvent
}

type tmResource struct {
	attrs  []tmAttr
	scopes [][]tmSpan
}

type tmTrace struct {
	id []byte
	rs []tmResource
}

// tmMetaJSON is the meta.json of the test block: the resource attribute
// tier and the span attributes peer.service and error.type have dedicated
// columns (resource String01, span String01 and String02).
const tmMetaJSON = `{"format":"vParquet4","blockID":"7b3d1f2a-0c1e-4a51-9a50-3c1f0e1d2b3a","tenantID":"single-tenant",` +
	`"startTime":"2023-11-14T22:13:20Z","endTime":"2023-11-14T22:13:24Z","totalObjects":4,"size":1,"compactionLevel":0,` +
	`"encoding":"none","indexPageSize":0,"totalRecords":1,"dataEncoding":"","bloomShards":1,"footerSize":1,` +
	`"dedicatedColumns":[{"s":"resource","n":"tier"},{"n":"peer.service"},{"n":"error.type"}]}`

var (
	tmSpanDedicated     = map[string]int{"peer.service": 1, "error.type": 2}
	tmResourceDedicated = map[string]int{"tier": 1}
)

func id(n int, size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(n*31 + i)
	}
	return b
}

// tmTraces: trace 0 has a 64-bit id (its TraceIDText loses the leading
// zeros) and attributes of every kind and home; trace 1 has an empty
// resource-spans entry, a resource without scopes, a sampled span and a
// bare span between spans with attributes; trace 2 has no spans at all.
func tmTraces() []tmTrace {
	base := uint64(1_700_000_000_000_000_000)
	t0 := tmTrace{id: append(make([]byte, 8), id(7, 8)...)}
	root := tmSpan{id: id(1, 8), name: "GET /", kind: 2, start: base, dur: 50_000_000, status: 1,
		attrs: []tmAttr{{"http.method", "GET"}, {"http.status_code", int64(200)}, {"k", "v"}}}
	t0.rs = []tmResource{
		{attrs: []tmAttr{{"service.name", "gateway"}, {"tier", "edge"}, {"cluster", "c1"}}, scopes: [][]tmSpan{{root}}},
		{attrs: []tmAttr{{"service.name", "api"}, {"deployment.env", "prod"}}, scopes: [][]tmSpan{{
			{id: id(2, 8), parent: root.id, name: "call", kind: 3, start: base + 1000, dur: 20_000_001, status: 2,
				attrs: []tmAttr{{"peer.service", "db"}, {"http.response.status_code", int64(504)}, {"http.method", "POST"}}},
			{id: id(3, 8), parent: root.id, name: "call", kind: 3, start: base + 21_000_000, dur: 9_000_000, status: 1,
				attrs: []tmAttr{{"http.request.resend_count", int64(1)}, {"server.address", "db.local"}, {"http.status_code", int64(200)}}},
		}, {
			{id: id(4, 8), parent: root.id, name: "fetch", kind: 3, start: base + 2000, dur: 30_000_000, status: 2,
				attrs:  []tmAttr{{"tags", []string{"a", "b"}}, {"sampling.weight", float64(4)}, {"error", true}, {"obj", map[string]string{"a": "b"}}},
				events: []tmEvent{{name: "log", attrs: []tmAttr{{"exception.type", "Timeout"}}}, {name: "exception", attrs: []tmAttr{{"exception.escaped", false}, {"exception.type", "java.net.SocketTimeoutException"}}}}},
			{id: id(5, 8), parent: root.id, name: "q", kind: 1, start: base + 3000, dur: 1_000_000,
				attrs: []tmAttr{{"error.type", "timeout"}, {"retry.attempt", int64(3)}}},
			{id: id(6, 8), parent: root.id, name: "rpc", kind: 3, start: base + 4000, dur: 2_000_000, status: 2,
				attrs: []tmAttr{{"rpc.grpc.status_code", int64(4)}}},
		}}},
	}
	b1 := base + 1_000_000_000
	r1 := tmSpan{id: id(11, 8), name: "GET /", kind: 2, start: b1, dur: 40_000_000, tstate: "ot=th:8", msg: "fine"}
	t1 := tmTrace{id: id(101, 16), rs: []tmResource{
		{},
		{attrs: []tmAttr{{"service.name", "lonely"}}},
		{attrs: []tmAttr{{"service.name", "gateway"}, {"tier", "edge"}}, scopes: [][]tmSpan{{}, {r1,
			{id: id(12, 8), parent: r1.id, name: "bare", start: b1 + 10, dur: 5},
			{id: id(13, 8), parent: r1.id, name: "late", kind: 5, start: b1 + 20, dur: 7, status: 2, msg: "context deadline exceeded",
				events: []tmEvent{{name: "exception"}}},
		}}},
	}}
	return []tmTrace{t0, t1, {id: id(102, 16)}}
}

func ptr[T any](v T) *T { return &v }

func setDedicated(d *tDedicated, n int, v string) {
	reflect.ValueOf(d).Elem().FieldByName(fmt.Sprintf("String%02d", n)).Set(reflect.ValueOf(&v))
}

// tmResourceRoute places a resource attribute as Tempo does; it reports
// false when the attribute goes to the generic list.
func tmResourceRoute(a tmAttr, svc *string, cluster **string, d *tDedicated) bool {
	s, ok := a.v.(string)
	switch {
	case !ok:
		return false
	case a.k == "service.name":
		*svc = s
	case a.k == "cluster":
		*cluster = ptr(s)
	case tmResourceDedicated[a.k] > 0:
		setDedicated(d, tmResourceDedicated[a.k], s)
	default:
		return false
	}
	return true
}

// tmSpanRoute places a span attribute as Tempo does.
func tmSpanRoute(a tmAttr, method, url **string, code **int64, d *tDedicated) bool {
	switch v := a.v.(type) {
	case string:
		switch {
		case a.k == "http.method":
			*method = ptr(v)
		case a.k == "http.url":
			*url = ptr(v)
		case tmSpanDedicated[a.k] > 0:
			setDedicated(d, tmSpanDedicated[a.k], v)
		default:
			return false
		}
		return true
	case int64:
		if a.k == "http.status_code" {
			*code = ptr(v)
			return true
		}
	}
	return false
}

func t4Attr(a tmAttr) t4Attribute {
	p := t4Attribute{Key: a.k}
	switch v := a.v.(type) {
	case string:
		p.Value = []string{v}
	case int64:
		p.ValueInt = []int64{v}
	case float64:
		p.ValueDouble = []float64{v}
	case bool:
		p.ValueBool = []bool{v}
	case []string:
		p.IsArray, p.Value = true, v
	default:
		b, _ := json.Marshal(map[string]any{"kvlistValue": map[string]any{}})
		p.ValueUnsupported = ptr(string(b))
	}
	return p
}

func t3Attr(a tmAttr) t3Attribute {
	p := t3Attribute{Key: a.k}
	switch v := a.v.(type) {
	case string:
		p.Value = &v
	case int64:
		p.ValueInt = &v
	case float64:
		p.ValueDouble = &v
	case bool:
		p.ValueBool = &v
	default:
		b, _ := json.Marshal(v)
		p.ValueDropped = string(b)
	}
	return p
}

// protoAny encodes a string AnyValue as protobuf (field 1), as vParquet3
// stores event attribute values; other kinds get a field tailscope skips.
func protoAny(v any) []byte {
	s, ok := v.(string)
	if !ok {
		return []byte{0x10, 0x01} // bool_value = true
	}
	b := []byte{0x0a}
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func tmTraceMeta(tr tmTrace) (text string, start, end uint64, rootSvc, rootName string) {
	text = strings.TrimLeft(hex.EncodeToString(tr.id), "0")
	for _, rs := range tr.rs {
		var svc string
		for _, a := range rs.attrs {
			if a.k == "service.name" {
				svc = a.v.(string)
			}
		}
		for _, ss := range rs.scopes {
			for _, s := range ss {
				if start == 0 || s.start < start {
					start = s.start
				}
				end = max(end, s.start+s.dur)
				if len(s.parent) == 0 {
					rootSvc, rootName = svc, s.name
				}
			}
		}
	}
	return
}

func (tr tmTrace) v4() t4Trace {
	text, start, end, rs, rn := tmTraceMeta(tr)
	out := t4Trace{TraceID: tr.id, TraceIDText: text, StartTimeUnixNano: start, EndTimeUnixNano: end, DurationNano: end - start,
		RootServiceName: rs, RootSpanName: rn, ServiceStats: map[string]tServiceStats{}}
	for _, r := range tr.rs {
		var res t4Resource
		for _, a := range r.attrs {
			if !tmResourceRoute(a, &res.ServiceName, &res.Cluster, &res.DedicatedAttributes) {
				res.Attrs = append(res.Attrs, t4Attr(a))
			}
		}
		ors := t4ResourceSpans{Resource: res}
		for _, ss := range r.scopes {
			oss := t4ScopeSpans{Scope: t4Scope{Name: "lib", Version: "1.0"}}
			for _, s := range ss {
				o := t4Span{SpanID: s.id, ParentSpanID: s.parent, Name: s.name, Kind: s.kind, TraceState: s.tstate,
					StartTimeUnixNano: s.start, DurationNano: s.dur, StatusCode: s.status, StatusMessage: s.msg}
				for _, a := range s.attrs {
					if !tmSpanRoute(a, &o.HttpMethod, &o.HttpUrl, &o.HttpStatusCode, &o.DedicatedAttributes) {
						o.Attrs = append(o.Attrs, t4Attr(a))
					}
				}
				for _, e := range s.events {
					oe := t4Event{Name: e.name, TimeSinceStartNano: 5}
					for _, a := range e.attrs {
						oe.Attrs = append(oe.Attrs, t4Attr(a))
					}
					o.Events = append(o.Events, oe)
				}
				st := out.ServiceStats[res.ServiceName]
				st.SpanCount++
				if s.status == 2 {
					st.ErrorCount++
				}
				out.ServiceStats[res.ServiceName] = st
				oss.Spans = append(oss.Spans, o)
			}
			ors.ScopeSpans = append(ors.ScopeSpans, oss)
		}
		out.ResourceSpans = append(out.ResourceSpans, ors)
	}
	return out
}

func (tr tmTrace) v3() t3Trace {
	text, start, end, rs, rn := tmTraceMeta(tr)
	out := t3Trace{TraceID: tr.id, TraceIDText: text, StartTimeUnixNano: start, EndTimeUnixNano: end, DurationNano: end - start,
		RootServiceName: rs, RootSpanName: rn}
	for _, r := range tr.rs {
		var res t3Resource
		for _, a := range r.attrs {
			if !tmResourceRoute(a, &res.ServiceName, &res.Cluster, &res.DedicatedAttributes) {
				res.Attrs = append(res.Attrs, t3Attr(a))
			}
		}
		ors := t3ResourceSpans{Resource: res}
		for _, ss := range r.scopes {
			oss := t3ScopeSpans{Scope: t3Scope{Name: "lib"}}
			for _, s := range ss {
				o := t3Span{SpanID: s.id, ParentSpanID: s.parent, Name: s.name, Kind: s.kind, TraceState: s.tstate,
					StartTimeUnixNano: s.start, DurationNano: s.dur, StatusCode: s.status, StatusMessage: s.msg}
				for _, a := range s.attrs {
					if !tmSpanRoute(a, &o.HttpMethod, &o.HttpUrl, &o.HttpStatusCode, &o.DedicatedAttributes) {
						o.Attrs = append(o.Attrs, t3Attr(a))
					}
				}
				for _, e := range s.events {
					oe := t3Event{Name: e.name, TimeUnixNano: s.start + 5}
					for _, a := range e.attrs {
						oe.Attrs = append(oe.Attrs, t3EventAttribute{Key: a.k, Value: protoAny(a.v)})
					}
					o.Events = append(o.Events, oe)
				}
				oss.Spans = append(oss.Spans, o)
			}
			ors.ScopeSpans = append(ors.ScopeSpans, oss)
		}
		out.ResourceSpans = append(out.ResourceSpans, ors)
	}
	return out
}

// otlp renders the model as one OTLP JSON document.
func (tr tmTrace) otlp() string {
	anyValue := func(v any) map[string]any {
		switch v := v.(type) {
		case string:
			return map[string]any{"stringValue": v}
		case int64:
			return map[string]any{"intValue": strconv.FormatInt(v, 10)}
		case float64:
			return map[string]any{"doubleValue": v}
		case bool:
			return map[string]any{"boolValue": v}
		case []string:
			var vs []any
			for _, s := range v {
				vs = append(vs, map[string]any{"stringValue": s})
			}
			return map[string]any{"arrayValue": map[string]any{"values": vs}}
		}
		return map[string]any{"kvlistValue": map[string]any{"values": []any{}}}
	}
	attrs := func(as []tmAttr) []any {
		out := []any{}
		for _, a := range as {
			out = append(out, map[string]any{"key": a.k, "value": anyValue(a.v)})
		}
		return out
	}
	var rss []any
	for _, r := range tr.rs {
		var sss []any
		for _, ss := range r.scopes {
			var spans []any
			for _, s := range ss {
				var evs []any
				for _, e := range s.events {
					evs = append(evs, map[string]any{"name": e.name, "timeUnixNano": strconv.FormatUint(s.start+5, 10), "attributes": attrs(e.attrs)})
				}
				spans = append(spans, map[string]any{
					"traceId": hex.EncodeToString(tr.id), "spanId": hex.EncodeToString(s.id), "parentSpanId": hex.EncodeToString(s.parent),
					"traceState": s.tstate, "name": s.name, "kind": s.kind,
					"startTimeUnixNano": strconv.FormatUint(s.start, 10), "endTimeUnixNano": strconv.FormatUint(s.start+s.dur, 10),
					"attributes": attrs(s.attrs), "events": evs, "status": map[string]any{"code": s.status, "message": s.msg},
				})
			}
			sss = append(sss, map[string]any{"scope": map[string]any{"name": "lib"}, "spans": spans})
		}
		rss = append(rss, map[string]any{"resource": map[string]any{"attributes": attrs(r.attrs)}, "scopeSpans": sss})
	}
	b, _ := json.Marshal(map[string]any{"resourceSpans": rss})
	return string(b)
}

func tempoTraces() []t4Trace {
	var out []t4Trace
	for _, tr := range tmTraces() {
		out = append(out, tr.v4())
	}
	return out
}

func tempoTraces3() []t3Trace {
	var out []t3Trace
	for _, tr := range tmTraces() {
		out = append(out, tr.v3())
	}
	return out
}

func writeParquet[T any](t testing.TB, rows []T, opts ...parquet.WriterOption) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf, opts...)
	for _, r := range rows {
		if _, err := w.Write([]T{r}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readBytes(t *testing.T, name string, b []byte, opt record.Options) ([]span.Span, *record.Stats) {
	t.Helper()
	var out []span.Span
	st, err := ReadStream(name, bytes.NewReader(b), opt, SinkFunc(func(s *span.Span) { out = append(out, *s) }))
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if st.Read != st.Used+st.Skipped+st.Filtered {
		t.Fatalf("read %d != used %d + skipped %d", st.Read, st.Used, st.Skipped)
	}
	return out, st
}

// tBrief is the part of a span the Tempo tests compare.
func tBrief(sp span.Span) string {
	return fmt.Sprintf("%s %s<%s %s|%s|%s %d+%d %s to=%v code=%d att=%d peer=%s w=%g hop=%s",
		sp.TraceID, sp.SpanID, sp.ParentID, sp.Service, sp.Name, sp.Kind, sp.Start, sp.Duration, sp.Status, sp.Timeout, sp.Code, sp.Attempt, sp.Peer, sp.Weight, sp.Hop)
}

func tBriefs(spans []span.Span) string {
	var b []string
	for _, s := range spans {
		b = append(b, tBrief(s))
	}
	return strings.Join(b, "\n")
}

// writeBlock writes data as a Tempo block folder <dir>/single-tenant/<blockID>/
// with the siblings a real block has, and returns the block folder.
func writeBlock(t *testing.T, dir string, data []byte, meta string) string {
	t.Helper()
	blk := filepath.Join(dir, "single-tenant", "7b3d1f2a-0c1e-4a51-9a50-3c1f0e1d2b3a")
	if err := os.MkdirAll(blk, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"data.parquet": data, "bloom-0": {0, 1, 2, 3, 0xff}, "index": {0x50, 0x41, 0x52, 0x31, 9, 9}}
	if meta != "" {
		files["meta.json"] = []byte(meta)
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(blk, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return blk
}

func readPath(t *testing.T, path string, opt record.Options) ([]span.Span, *record.Stats) {
	t.Helper()
	var out []span.Span
	st, err := Read([]string{path}, opt, SinkFunc(func(s *span.Span) { out = append(out, *s) }))
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if st.Read != st.Used+st.Skipped+st.Filtered {
		t.Fatalf("read %d != used %d + skipped %d", st.Read, st.Used, st.Skipped)
	}
	return out, st
}
