package ingest_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/internal/realdata"
	"github.com/tailscope/tailscope/recommend"
	"github.com/tailscope/tailscope/span"
)

// tjRead decodes one in-memory input and checks the reconciliation that
// every reader owes: read = used + skipped, skipped = Σ by reason.
func tjRead(t *testing.T, format, input string, opt ingest.Options) ([]span.Span, *ingest.Stats) {
	t.Helper()
	opt.Format = format
	var out []span.Span
	st, err := ingest.ReadStream("in.json", strings.NewReader(input), opt, ingest.SinkFunc(func(sp *span.Span) { out = append(out, *sp) }))
	if err != nil {
		t.Fatalf("%s: %v", format, err)
	}
	tjReconciled(t, st)
	return out, st
}

func tjReconciled(t *testing.T, st *ingest.Stats) {
	t.Helper()
	var sum int64
	for _, n := range st.SkippedByReason {
		sum += n
	}
	if st.Read != st.Used+st.Skipped+st.Filtered || st.Skipped != sum {
		t.Fatalf("not reconciled: read %d, used %d, skipped %d, by reason %v", st.Read, st.Used, st.Skipped, st.SkippedByReason)
	}
}

func tjReadFile(t *testing.T, path string) ([]span.Span, *ingest.Stats) {
	t.Helper()
	var out []span.Span
	st, err := ingest.Read([]string{path}, ingest.Options{}, ingest.SinkFunc(func(sp *span.Span) { out = append(out, *sp) }))
	if err != nil {
		t.Fatal(err)
	}
	tjReconciled(t, st)
	return out, st
}

// TestSharedTraceFiles reads every real trace JSON file, its copy under
// testdata/real (../shared/data's with TAILSCOPE_REALDATA=full) (byte for byte, or a
// subset with counts of its own), and checks the counts its README states
// (and the facts computed from the files independently: spans with a
// duration, shared halves, errors).
func TestSharedTraceFiles(t *testing.T) {
	type want struct {
		format          string
		read, used      int64
		skipped         map[string]int64
		services, hops  int // distinct services and (service, name, kind) among used spans
		errors, timeout int
		shared          int // spans given a derived ":server" id
		dupIDs          int // duplicate span ids left for span.Assemble
	}
	cases := map[string]want{
		"zipkin/smartthings-mobile-web-install.json":  {"zipkin", 1041, 866, map[string]int64{"missing duration": 175}, 16, 87, 2, 0, 288, 0},
		"zipkin/smartthings-oauth-authorization.json": {"zipkin", 175, 156, map[string]int64{"missing duration": 19}, 8, 65, 2, 0, 34, 0},
		"zipkin/messaging-kafka.json":                 {"zipkin", 28, 28, map[string]int64{}, 2, 6, 3, 0, 0, 0},
		"otel-proto/trace.json":                       {"otlp", 1, 1, map[string]int64{}, 1, 1, 0, 0, 0, 0},
		"jaeger/otlp2jaeger-in.json":                  {"otlp", 2, 2, map[string]int64{}, 1, 1, 0, 0, 0, 1},
		"jaeger/otlp2jaeger-out.json":                 {"jaeger", 2, 2, map[string]int64{}, 1, 1, 0, 0, 0, 1},
		"jaeger-analytics-java/ui-trace.json":         {"jaeger", 2, 2, map[string]int64{}, 1, 2, 0, 0, 0, 0},
	}
	// The subsets kept under testdata/real, read unless
	// TAILSCOPE_REALDATA=full, with their own counts, taken from the JSON without the reader
	// (spans with a duration; among them distinct localEndpoint service
	// names and (service, name, kind), error tags and shared:true), which
	// counted the same way give the full file's row above.
	subsets := map[string]want{
		"zipkin/smartthings-mobile-web-install.json": {"zipkin", 421, 372, map[string]int64{"missing duration": 49}, 10, 46, 2, 0, 113, 0},
	}
	// Every JSON file of these folders must have a case: in testdata/real
	// as the copy of one, in ../shared/data by its name.
	copied := map[string]bool{}
	for name := range cases {
		copied[realdata.Copy(name)] = true
	}
	for _, dir := range []string{"zipkin", "otel-proto", "jaeger"} {
		m, _ := filepath.Glob(filepath.Join(realdata.TestdataDir(t), dir, "*.json"))
		for _, f := range m {
			if !copied[dir+"/"+filepath.Base(f)] {
				t.Errorf("%s has no expectation in this test", f)
			}
		}
	}
	if shared, ok := realdata.SharedDir(t); ok {
		for _, dir := range []string{"zipkin", "otel-proto", "jaeger", "jaeger-analytics-java"} {
			m, _ := filepath.Glob(filepath.Join(shared, dir, "*.json"))
			for _, f := range m {
				if _, ok := cases[dir+"/"+filepath.Base(f)]; !ok {
					t.Errorf("%s has no expectation in this test", f)
				}
			}
		}
	}
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			path := realdata.Path(t, name)
			if !realdata.Whole(t, name, path) {
				sub, ok := subsets[name]
				if !ok {
					t.Fatalf("%s is a subset with no expectation in this test", path)
				}
				w = sub
			}
			spans, st := tjReadFile(t, path)
			if got := st.Formats[path]; got != w.format {
				t.Errorf("sniffed %q, want %q", got, w.format)
			}
			if st.Read != w.read || st.Used != w.used || !reflect.DeepEqual(st.SkippedByReason, w.skipped) {
				t.Errorf("read %d used %d skipped %v; want %d %d %v", st.Read, st.Used, st.SkippedByReason, w.read, w.used, w.skipped)
			}
			services, hops := map[string]bool{}, map[[3]string]bool{}
			var errs, timeouts, shared int
			for _, sp := range spans {
				services[sp.Service] = true
				hops[[3]string{sp.Service, sp.Name, sp.Kind}] = true
				if sp.Status == span.Error {
					errs++
				}
				if sp.Timeout {
					timeouts++
				}
				if strings.HasSuffix(sp.SpanID, ":server") {
					shared++
				}
				if sp.Duration < 0 || sp.Start < 0 || sp.TraceID == "" || sp.Hop == "" {
					t.Errorf("invalid span %+v", sp)
				}
			}
			if len(services) != w.services || len(hops) != w.hops || errs != w.errors || timeouts != w.timeout || shared != w.shared {
				t.Errorf("services %d hops %d errors %d timeouts %d shared %d; want %d %d %d %d %d",
					len(services), len(hops), errs, timeouts, shared, w.services, w.hops, w.errors, w.timeout, w.shared)
			}
			_, pr := span.Assemble(spans)
			if pr.DuplicateSpanIDs != w.dupIDs {
				t.Errorf("duplicate span ids %d, want %d", pr.DuplicateSpanIDs, w.dupIDs)
			}
		})
	}
}

// TestSharedZipkinFacts checks span-level facts of the Zipkin files that
// the README names: the two 404s and two 401s are fast failures, not
// timeouts; the kafka file's error="" still fails; a shared server half
// hangs under its client.
func TestSharedZipkinFacts(t *testing.T) {
	files := []struct {
		path string
		code int
	}{
		// The subset under testdata/real keeps both 404 halves.
		{realdata.Path(t, "zipkin/smartthings-mobile-web-install.json"), 404},
		{realdata.Path(t, "zipkin/smartthings-oauth-authorization.json"), 401},
	}
	for _, c := range files {
		spans, _ := tjReadFile(t, c.path)
		n := 0
		for _, sp := range spans {
			if sp.Failed() {
				n++
				if sp.Code != c.code || sp.Timeout {
					t.Errorf("%s: failed span %s code %d timeout %v, want code %d and no timeout", c.path, sp.Name, sp.Code, sp.Timeout, c.code)
				}
			}
		}
		if n != 2 {
			t.Errorf("%s: %d failures, want 2", c.path, n)
		}
		byID := map[string]*span.Span{}
		for i := range spans {
			byID[spans[i].SpanID] = &spans[i]
		}
		checked := 0
		for _, sp := range spans {
			id, ok := strings.CutSuffix(sp.SpanID, ":server")
			if !ok {
				continue
			}
			if sp.ParentID != id || sp.Kind != "server" {
				t.Errorf("%s: shared half %s: parent %q kind %q, want parent %q kind server", c.path, sp.SpanID, sp.ParentID, sp.Kind, id)
			}
			if c := byID[id]; c != nil {
				checked++
				if c.Kind != "client" {
					t.Errorf("span %s that a shared half names is %q, want client", id, c.Kind)
				}
			}
		}
		if checked == 0 {
			t.Errorf("%s: no shared server half found with its client", c.path)
		}
	}
	kafka, _ := tjReadFile(t, realdata.Path(t, "zipkin/messaging-kafka.json"))
	kinds := map[string]int{}
	for _, sp := range kafka {
		kinds[sp.Kind]++
	}
	if kinds["producer"] != 9 || kinds["consumer"] != 7 {
		t.Errorf("kafka kinds %v, want 9 producer and 7 consumer", kinds)
	}
}

// TestSharedJaegerOTLPPair: the same two spans as OTLP and as Jaeger JSON
// give identical spans, hence identical hop statistics.
func TestSharedJaegerOTLPPair(t *testing.T) {
	a, _ := tjReadFile(t, realdata.Path(t, "jaeger/otlp2jaeger-in.json"))
	b, _ := tjReadFile(t, realdata.Path(t, "jaeger/otlp2jaeger-out.json"))
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("OTLP and Jaeger differ:\n%+v\n%+v", a, b)
	}
	if len(a) != 2 || a[0].Duration != 123_000 || a[0].Kind != "server" || a[0].Peer != "telemetrygen-client" || a[0].ParentID != "909541b92cf05311" {
		t.Errorf("unexpected spans %+v", a)
	}
	ja, jb := tjAnalyze(t, a), tjAnalyze(t, b)
	if ja != jb {
		t.Errorf("hop stats differ:\n%s\n%s", ja, jb)
	}
}

// TestSharedOTelProtoExample checks the canonical one-span example field
// by field: uppercase hex ids, numeric kind, string times, no status.
func TestSharedOTelProtoExample(t *testing.T) {
	spans, _ := tjReadFile(t, realdata.Path(t, "otel-proto/trace.json"))
	want := span.Span{
		TraceID: "5b8efff798038103d269b633813fc60c", SpanID: "eee19b7ec3c1b174", ParentID: "eee19b7ec3c1b173",
		Service: "my.service", Name: "I'm a server span", Kind: "server", Hop: "my.service I'm a server span",
		Start: 1544712660000000000, Duration: 1e9, Status: span.Unset, Weight: 1,
		// service.name is the Service; the scope comes before the span's own.
		Attrs: []span.Attr{{Key: "otel.scope.name", Value: "my.library"}, {Key: "otel.scope.version", Value: "1.0.0"}, {Key: "my.span.attr", Value: "some value"}},
	}
	if len(spans) != 1 || !reflect.DeepEqual(spans[0], want) {
		t.Errorf("got %+v\nwant %+v", spans, want)
	}
}

// TestSharedJaegerEnvelope reads a live query server's response: 64-bit
// trace id padded to 32 digits, a 15-digit span id padded to 16, the
// child linked by CHILD_OF.
func TestSharedJaegerEnvelope(t *testing.T) {
	spans, _ := tjReadFile(t, realdata.Path(t, "jaeger-analytics-java/ui-trace.json"))
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	root, child := spans[0], spans[1]
	if root.TraceID != "00000000000000002db17286b3e6b148" || root.Kind != "server" || root.Code != 200 || root.Duration != 4199_000 || root.Service != "jaeger-query" {
		t.Errorf("root %+v", root)
	}
	if child.SpanID != "0ec2b4e0bcea566d" || child.ParentID != root.SpanID || child.Start != 1571326774777428_000 {
		t.Errorf("child %+v", child)
	}
}

func tjAnalyze(t *testing.T, spans []span.Span) string {
	t.Helper()
	cp := append([]span.Span(nil), spans...)
	reqs, pr := span.Assemble(cp)
	rep, _ := recommend.Run(cp, reqs, pr, analyze.Options{})
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tjDataset generates traces with what the three formats can all express:
// µs times, unset or error status, kinds other than internal, HTTP and
// gRPC codes, timeouts, numbered retries, peers, timeouts in force and
// sampling weights.
func tjDataset(seed uint64, traces int) []span.Span {
	rng := rand.New(rand.NewPCG(seed, 7))
	hexID := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			fmt.Fprintf(&b, "%016x", rng.Uint64())
		}
		return b.String()[:n]
	}
	us := func(lo, hi int) int64 { return int64(lo+rng.IntN(hi-lo)) * 1000 }
	var out []span.Span
	t0 := int64(1_700_000_000_000_000) * 1000
	for i := 0; i < traces; i++ {
		tid := hexID(32)
		root := span.Span{TraceID: tid, SpanID: hexID(16), Service: "gateway", Name: "GET /search", Kind: "server",
			Start: t0 + int64(i)*1_000_000_000, Code: 200}
		cur := root.Start + us(50, 500)
		for _, hop := range []struct{ svc, name string }{{"search", "Query"}, {"ranker", "Rank"}} {
			attempts := 1 + rng.IntN(3)
			for a := 1; a <= attempts; a++ {
				c := span.Span{TraceID: tid, SpanID: hexID(16), ParentID: root.SpanID, Service: "gateway", Name: hop.name,
					Kind: "client", Peer: hop.svc, Start: cur, Duration: us(200, 900_000), Attempt: a, AttemptSet: true,
					TimeoutInForce: 800_000_000}
				last := a == attempts
				switch {
				case !last && rng.IntN(2) == 0:
					c.Code, c.Timeout, c.Status, c.Duration = 4, true, span.Error, 800_000_000
				case !last:
					c.Code, c.Status = 14, span.Error
				default:
					c.Code = 0
				}
				if rng.IntN(4) == 0 {
					c.Weight = float64(1 + rng.IntN(4))
				}
				s := span.Span{TraceID: tid, SpanID: hexID(16), ParentID: c.SpanID, Service: hop.svc, Name: hop.name,
					Kind: "server", Start: c.Start + 1000, Duration: c.Duration - 2000, Code: c.Code}
				if s.Code == 4 {
					s.Code, s.Timeout, s.Status = 504, true, span.Error
				} else if s.Code != 0 {
					s.Code, s.Status = 503, span.Error
				}
				cur = c.Start + c.Duration + us(10, 100)
				out = append(out, c, s)
			}
		}
		if rng.IntN(5) == 0 {
			out = append(out, span.Span{TraceID: tid, SpanID: hexID(16), ParentID: root.SpanID, Service: "gateway",
				Name: "audit", Kind: "producer", Start: cur, Duration: us(10, 90)})
		}
		if rng.IntN(7) == 0 {
			// A span with no kind (Zipkin cannot say INTERNAL).
			out = append(out, span.Span{TraceID: tid, SpanID: hexID(16), ParentID: root.SpanID, Service: "gateway",
				Name: "render", Start: cur, Duration: us(10, 90)})
		}
		root.Duration = cur - root.Start + us(10, 100)
		out = append([]span.Span{root}, out...)
	}
	for i := range out {
		if out[i].Weight == 0 {
			out[i].Weight = 1
		}
		out[i].Hop = tjHop(&out[i])
	}
	return out
}

// tjHop is the service+name hop, written out so the test does not trust
// the code under test to name it.
func tjHop(sp *span.Span) string {
	h := sp.Service + " " + sp.Name
	if sp.Kind == "client" || sp.Kind == "producer" || sp.Kind == "consumer" {
		h += " (" + sp.Kind + ")"
	}
	return h
}

type tjAttr struct {
	key string
	val any // string, int or float64
}

func tjAttrs(sp *span.Span) []tjAttr {
	var a []tjAttr
	switch {
	case sp.Code >= 100:
		a = append(a, tjAttr{"http.response.status_code", sp.Code})
	case sp.Code > 0 || (sp.Kind == "client" && sp.Attempt > 0):
		a = append(a, tjAttr{"rpc.grpc.status_code", sp.Code})
	}
	if sp.Attempt > 0 {
		a = append(a, tjAttr{"http.request.resend_count", sp.Attempt - 1})
	}
	if sp.Peer != "" {
		a = append(a, tjAttr{"peer.service", sp.Peer})
	}
	if sp.TimeoutInForce > 0 {
		a = append(a, tjAttr{"timeout_ms", float64(sp.TimeoutInForce) / 1e6})
	}
	if sp.Weight != 1 {
		a = append(a, tjAttr{"sampling.weight", sp.Weight})
	}
	return a
}

// tjOTLP renders spans as OTLP JSON, one resourceSpans per service. style
// picks the variant: camel (numeric kinds, string times), snake
// (snake_case keys, numeric times, base64 ids, enum names).
func tjOTLP(spans []span.Span, style string) string {
	snake := style == "snake"
	k := func(camel, sn string) string {
		if snake {
			return sn
		}
		return camel
	}
	id := func(h string) string {
		if !snake || h == "" {
			return strings.ToUpper(h)
		}
		b := make([]byte, len(h)/2)
		for i := range b {
			x, _ := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
			b[i] = byte(x)
		}
		return tjB64(b)
	}
	kinds := map[string]int{"": 0, "internal": 1, "server": 2, "client": 3, "producer": 4, "consumer": 5}
	bySvc := map[string][]any{}
	var svcs []string
	for _, sp := range spans {
		if _, ok := bySvc[sp.Service]; !ok {
			svcs = append(svcs, sp.Service)
		}
		var attrs []any
		for _, a := range tjAttrs(&sp) {
			var v map[string]any
			switch x := a.val.(type) {
			case string:
				v = map[string]any{k("stringValue", "string_value"): x}
			case int:
				if snake {
					v = map[string]any{"int_value": x}
				} else {
					v = map[string]any{"intValue": strconv.Itoa(x)}
				}
			case float64:
				v = map[string]any{k("doubleValue", "double_value"): x}
			}
			attrs = append(attrs, map[string]any{"key": a.key, "value": v})
		}
		o := map[string]any{
			k("traceId", "trace_id"): id(sp.TraceID),
			k("spanId", "span_id"):   id(sp.SpanID),
			"name":                   sp.Name,
			"attributes":             attrs,
		}
		if sp.ParentID != "" {
			o[k("parentSpanId", "parent_span_id")] = id(sp.ParentID)
		}
		if snake {
			o["kind"] = "SPAN_KIND_" + strings.ToUpper(map[string]string{"": "unspecified"}[sp.Kind]+sp.Kind)
			o["start_time_unix_nano"] = sp.Start
			o["end_time_unix_nano"] = sp.Start + sp.Duration
		} else {
			o["kind"] = kinds[sp.Kind]
			o["startTimeUnixNano"] = strconv.FormatInt(sp.Start, 10)
			o["endTimeUnixNano"] = strconv.FormatInt(sp.Start+sp.Duration, 10)
		}
		if sp.Status == span.Error {
			if snake {
				o["status"] = map[string]any{"code": "STATUS_CODE_ERROR"}
			} else {
				o["status"] = map[string]any{"code": 2}
			}
		}
		bySvc[sp.Service] = append(bySvc[sp.Service], o)
	}
	var rs []any
	for _, s := range svcs {
		rs = append(rs, map[string]any{
			"resource":                     map[string]any{"attributes": []any{map[string]any{"key": "service.name", "value": map[string]any{k("stringValue", "string_value"): s}}}},
			k("scopeSpans", "scope_spans"): []any{map[string]any{"scope": map[string]any{"name": "t"}, "spans": bySvc[s]}},
		})
	}
	b, _ := json.MarshalIndent(map[string]any{k("resourceSpans", "resource_spans"): rs}, "", " ")
	return string(b)
}

// tjWantAttrs is the sorted key=value list of the attributes the renders
// of format give sp (tjAttrs as text; OTLP adds its scope's name), and
// tjAttrList the same of what a reader gave: the order is each format's
// (Go's JSON sorts map keys), the set is the same.
func tjWantAttrs(sp *span.Span, format string) string {
	var out []span.Attr
	for _, a := range tjAttrs(sp) {
		v := fmt.Sprint(a.val)
		if x, ok := a.val.(float64); ok {
			v = strconv.FormatFloat(x, 'f', -1, 64)
		}
		out = append(out, span.Attr{Key: a.key, Value: v})
	}
	if format == "otlp" {
		out = append(out, span.Attr{Key: "otel.scope.name", Value: "t"})
	}
	return tjAttrList(out)
}

func tjAttrList(attrs []span.Attr) string {
	var s []string
	for _, a := range attrs {
		s = append(s, a.Key+"="+a.Value)
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

func tjB64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// tjJaeger renders spans as a Jaeger /api/traces response.
func tjJaeger(spans []span.Span) string {
	type trace struct {
		spans []any
		procs map[string]string // service → pid
	}
	traces := map[string]*trace{}
	var order []string
	for _, sp := range spans {
		tr := traces[sp.TraceID]
		if tr == nil {
			tr = &trace{procs: map[string]string{}}
			traces[sp.TraceID] = tr
			order = append(order, sp.TraceID)
		}
		pid, ok := tr.procs[sp.Service]
		if !ok {
			pid = fmt.Sprintf("p%d", len(tr.procs)+1)
			tr.procs[sp.Service] = pid
		}
		var tags []any
		for _, a := range tjAttrs(&sp) {
			typ := map[string]string{"string": "string", "int": "int64", "float64": "float64"}[fmt.Sprintf("%T", a.val)]
			tags = append(tags, map[string]any{"key": a.key, "type": typ, "value": a.val})
		}
		if sp.Kind != "" {
			tags = append(tags, map[string]any{"key": "span.kind", "type": "string", "value": sp.Kind})
		}
		if sp.Status == span.Error {
			tags = append(tags, map[string]any{"key": "error", "type": "bool", "value": true})
		}
		refs := []any{}
		if sp.ParentID != "" {
			refs = append(refs, map[string]any{"refType": "CHILD_OF", "traceID": strings.TrimLeft(sp.TraceID, "0"), "spanID": strings.TrimLeft(sp.ParentID, "0")})
		}
		tr.spans = append(tr.spans, map[string]any{
			"traceID": strings.TrimLeft(sp.TraceID, "0"), "spanID": strings.TrimLeft(sp.SpanID, "0"),
			"operationName": sp.Name, "references": refs, "startTime": sp.Start / 1000, "duration": sp.Duration / 1000,
			"tags": tags, "logs": []any{}, "processID": pid, "warnings": nil,
		})
	}
	var data []any
	for _, id := range order {
		tr := traces[id]
		procs := map[string]any{}
		for svc, pid := range tr.procs {
			procs[pid] = map[string]any{"serviceName": svc, "tags": []any{}}
		}
		// processes after spans, as Jaeger writes them.
		data = append(data, json.RawMessage(fmt.Sprintf(`{"traceID":%q,"spans":%s,"processes":%s,"warnings":null}`,
			id, tjJSON(tr.spans), tjJSON(procs))))
	}
	return tjJSON(map[string]any{"data": data, "total": 0, "limit": 0, "offset": 0, "errors": nil})
}

// tjZipkin renders spans as a Zipkin /api/v2/traces response (an array of
// arrays); the server half of each client call shares its client's id.
func tjZipkin(spans []span.Span, shareServerIDs bool) string {
	byTrace := map[string][]any{}
	var order []string
	for _, sp := range spans {
		if _, ok := byTrace[sp.TraceID]; !ok {
			order = append(order, sp.TraceID)
		}
		tags := map[string]string{}
		for _, a := range tjAttrs(&sp) {
			if a.key == "peer.service" {
				continue
			}
			tags[a.key] = fmt.Sprint(a.val)
		}
		if sp.Status == span.Error {
			tags["error"] = ""
		}
		o := map[string]any{"traceId": sp.TraceID, "id": sp.SpanID, "name": sp.Name,
			"timestamp": sp.Start / 1000, "duration": sp.Duration / 1000,
			"localEndpoint": map[string]any{"serviceName": sp.Service}, "tags": tags}
		if sp.ParentID != "" {
			o["parentId"] = sp.ParentID
		}
		if id, ok := strings.CutSuffix(sp.SpanID, ":server"); ok && shareServerIDs {
			o["id"], o["shared"] = id, true
			o["parentId"] = nil // the shared half names the client's parent
		}
		if sp.Kind != "" {
			o["kind"] = strings.ToUpper(sp.Kind)
		}
		if sp.Peer != "" {
			o["remoteEndpoint"] = map[string]any{"serviceName": sp.Peer}
		}
		byTrace[sp.TraceID] = append(byTrace[sp.TraceID], o)
	}
	var all []any
	for _, id := range order {
		all = append(all, byTrace[id])
	}
	return tjJSON(all)
}

func tjJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func tjSorted(ss []span.Span) []span.Span {
	out := append([]span.Span(nil), ss...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].TraceID != out[j].TraceID {
			return out[i].TraceID < out[j].TraceID
		}
		return out[i].SpanID < out[j].SpanID
	})
	return out
}

// TestTraceFormatsRoundTrip renders one generated dataset as OTLP (two
// styles), Jaeger and Zipkin JSON, reads each back (sniffed, not told)
// and checks every span — and the whole analysis — comes back identical.
func TestTraceFormatsRoundTrip(t *testing.T) {
	want := tjSorted(tjDataset(42, 60))
	// The dataset must exercise what the readers map, or the test proves
	// nothing.
	var timeouts, errs, retries, weighted, noKind, producers int
	for _, sp := range want {
		switch {
		case sp.Timeout:
			timeouts++
		case sp.Status == span.Error:
			errs++
		}
		if sp.Attempt > 1 {
			retries++
		}
		if sp.Weight != 1 {
			weighted++
		}
		if sp.Kind == "" {
			noKind++
		}
		if sp.Kind == "producer" {
			producers++
		}
	}
	if timeouts == 0 || errs == 0 || retries == 0 || weighted == 0 || noKind == 0 || producers == 0 {
		t.Fatalf("dataset lacks variety: %d timeouts, %d errors, %d retries, %d weighted, %d without kind, %d producers",
			timeouts, errs, retries, weighted, noKind, producers)
	}
	wantReport := tjAnalyze(t, want)
	renders := map[string]string{
		"otlp camel": tjOTLP(want, "camel"),
		"otlp snake": tjOTLP(want, "snake"),
		"jaeger":     tjJaeger(want),
		"zipkin":     tjZipkin(want, false),
	}
	formats := map[string]string{"otlp camel": "otlp", "otlp snake": "otlp", "jaeger": "jaeger", "zipkin": "zipkin"}
	for name, doc := range renders {
		t.Run(name, func(t *testing.T) {
			got, st := tjRead(t, "auto", doc, ingest.Options{})
			if st.Formats["in.json"] != formats[name] {
				t.Errorf("sniffed %q", st.Formats["in.json"])
			}
			if st.Skipped != 0 || len(got) != len(want) {
				t.Fatalf("read %d spans, skipped %v; want %d", len(got), st.SkippedByReason, len(want))
			}
			got = tjSorted(got)
			for i := range want {
				if g, w := tjAttrList(got[i].Attrs), tjWantAttrs(&want[i], formats[name]); g != w {
					t.Fatalf("span %d attributes:\n got %s\nwant %s", i, g, w)
				}
				got[i].Attrs = nil
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("span %d:\n got %+v\nwant %+v", i, got[i], want[i])
				}
			}
			if r := tjAnalyze(t, got); r != wantReport {
				t.Errorf("analysis differs")
			}
		})
	}
}

// TestZipkinSharedRoundTrip: when server halves share their client's id,
// the reader gives the server half the derived id and the client as
// parent, so no span is lost to de-duplication.
func TestZipkinSharedRoundTrip(t *testing.T) {
	want := tjDataset(9, 20)
	for i := range want {
		sp := &want[i]
		if sp.Kind == "server" && sp.ParentID != "" {
			sp.SpanID = sp.ParentID + ":server"
		}
	}
	got, _ := tjRead(t, "zipkin", tjZipkin(want, true), ingest.Options{})
	for i := range got {
		got[i].Attrs = nil // TestTraceFormatsRoundTrip checks them
	}
	want, got = tjSorted(want), tjSorted(got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("shared halves differ")
	}
	_, pr := span.Assemble(got)
	if pr.DuplicateSpanIDs != 0 || pr.Orphans != 0 {
		t.Errorf("assemble problems %+v", pr)
	}
}

// BenchmarkTraceJSON measures each decoder on the generated dataset
// (spans/s is the number to compare with the flat reader's).
func BenchmarkTraceJSON(b *testing.B) {
	spans := tjDataset(1, 2000)
	for _, c := range []struct{ name, format, doc string }{
		{"otlp", "otlp", tjOTLP(spans, "camel")},
		{"jaeger", "jaeger", tjJaeger(spans)},
		{"zipkin", "zipkin", tjZipkin(spans, false)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.doc)))
			n := 0
			for b.Loop() {
				_, err := ingest.ReadStream("bench", strings.NewReader(c.doc), ingest.Options{Format: c.format}, ingest.SinkFunc(func(*span.Span) { n++ }))
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "spans/s")
		})
	}
}
