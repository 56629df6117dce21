package clickhouse_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/source/clickhouse"
)

// attrSpans are spans whose attributes reach every rule of attribution
// and of the readers' choice of attributes: keys the readers leave out
// (service.name, span.kind, error, otel.status_*), values of 199–201 and
// 1,024–1,025 bytes, the scope's name and version (sometimes empty), a
// key in both the resource and the span, a secret key with a hundred
// tokens (and one on every 101st span, with a value of its own), URLs
// whose passwords scrub to one value, a key of more than
// AttrMaxValues values, a hop with 70 keys besides instance-like ones,
// values with tabs and non-ASCII text, and traces that call one hop
// twelve times (their slowest attempts fall in one trace, which makes the
// server ask for the examples again). collapse adds a key of 100 raw
// values that scrub to 10.
func attrSpans(n int, seed uint64, collapse bool) []byte {
	r := rand.New(rand.NewPCG(seed, 11))
	hops := []struct{ service, name string }{{"front", "GET /"}, {"front", "call back"}, {"back", "query"}}
	kinds := []int{2, 3, 1}
	kv := func(k, v string) string {
		kj, _ := json.Marshal(k)
		vj, _ := json.Marshal(v)
		return `{"key":` + string(kj) + `,"value":{"stringValue":` + string(vj) + `}}`
	}
	var b strings.Builder
	t0 := int64(1772445600000000000)
	trace, inTrace := 1, 0
	for i := range n {
		// Traces of 3 spans, and every 40th of 12 calls to the back.
		h := r.IntN(len(hops))
		fan := trace%40 == 0
		if fan {
			h = 2
		}
		start := t0 + int64(i)*1_000_000
		d := int64(1000 * math.Exp(7+3*r.Float64()))
		if fan && trace <= 80 {
			d *= 100 // the first two fan-outs' calls are the slowest
		}
		if r.IntN(60) == 0 {
			d = 0
		}
		status, msg := 1, ""
		switch x := r.IntN(200); {
		case x == 0:
			status, msg = 2, "context deadline exceeded"
			d = 500_000_000 + int64(r.IntN(1000))
		case x < 12:
			status, msg = 2, "connection refused"
		}
		pod := r.IntN(4)
		if pod == 0 && h == 2 && r.IntN(4) == 0 {
			status, msg = 2, "connection refused" // a failing pod: attribution names it
		}
		res := []string{kv("service.name", hops[h].service), kv("k8s.pod.name", fmt.Sprintf("%s-%d", hops[h].service, pod)),
			kv("zone", []string{"a", "b"}[r.IntN(2)])}
		blob := []int{150, 199, 200, 201, 1024, 1025}[r.IntN(6)]
		res = append(res, kv("res.blob", strings.Repeat(string(rune('a'+blob%7)), blob)))
		span := []string{
			kv("zone", []string{"a", "b", "c"}[r.IntN(3)]),
			kv("span.kind", "server"), kv("error", "false"), kv("otel.status_code", "OK"), kv("otel.status_description", "fine"),
			kv("user.id", fmt.Sprintf("u%d", r.IntN(500))),
			kv("authorization", fmt.Sprintf("Bearer tok%d", r.IntN(100))),
			kv("http.url", fmt.Sprintf("https://user:pw%d@host/x?p=%d", r.IntN(3), r.IntN(2))),
			kv("label", []string{"zöne\tone", "plain", "ümlaut ✓"}[r.IntN(3)]),
			kv("empty", ""),
		}
		if i%101 == 57 {
			// A secret key on few spans: a small sample may not hold it.
			span = append(span, kv("session.token", fmt.Sprintf("s%d", i)))
		}
		if collapse {
			span = append(span, kv("callback", fmt.Sprintf("https://h%d/cb?token=t%d", r.IntN(10), r.IntN(10))))
		}
		if h == 2 {
			for k := range 70 {
				span = append(span, kv(fmt.Sprintf("k%02d", k), fmt.Sprint(r.IntN(3))))
			}
			span = append(span, kv("net.peer.ip", fmt.Sprintf("10.0.0.%d", r.IntN(5))))
		}
		scope := ""
		switch r.IntN(3) {
		case 0:
			scope = `"scope":{"name":"lib","version":"1.2"},`
		case 1:
			scope = `"scope":{"name":"lib","version":""},`
		}
		m, _ := json.Marshal(msg)
		fmt.Fprintf(&b, `{"resourceSpans":[{"resource":{"attributes":[%s]},"scopeSpans":[{%s"spans":[{"traceId":"%032x","spanId":"%016x","name":%q,"kind":%d,"startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[%s],"status":{"code":%d,"message":%s}}]}]}]}`+"\n",
			strings.Join(res, ","), scope, trace, i+1, hops[h].name, kinds[h], start, start+d, strings.Join(span, ","), status, m)
		inTrace++
		if !fan && inTrace == 3 || fan && inTrace == 12 {
			trace, inTrace = trace+1, 0
		}
	}
	return []byte(b.String())
}

// TestPushdownAttribution: each hop's attribution state computed on the
// server (keys kept and dropped, and per value its counts, bins and
// examples) is the one the readers keep from the OTLP file, on spans that
// reach every rule of attribution; the report built on it is the file's,
// every field of every hop; and a key whose raw values only the readers
// can tell apart makes the read ErrNotPushable. The values come from the
// spans grouped by their combination of attributes first, and (combos:
// a bound that the spans' 6,000 combinations pass) attribute by
// attribute when the server stops at the bound.
func TestPushdownAttribution(t *testing.T) {
	e := startEngine(t, "")
	dir := t.TempDir()
	combos := clickhouse.SetAttrCombos(0)
	clickhouse.SetAttrCombos(combos)
	t.Cleanup(func() { clickhouse.SetAttrCombos(combos) })
	// census: the scans for the census of attribute values, none while
	// the sample's spans tell which keys to ask (a sample of 30 spans
	// shows no key as dropped: the values' answer does).
	// skipText: the bound on the keys left out by the sample's census
	// (past it, the census scan).
	skipText := clickhouse.SetMaxSkipText(0)
	clickhouse.SetMaxSkipText(skipText)
	t.Cleanup(func() { clickhouse.SetMaxSkipText(skipText) })
	for _, c := range []struct{ sample, combos, census, skipText int }{{0, 0, 0, 0}, {800, 0, 0, 0}, {30, 0, 0, 0}, {0, 10, 1, 0}, {0, 0, 1, 1}} {
		sample := c.sample
		clickhouse.SetAttrCombos(cmp.Or(c.combos, combos))
		clickhouse.SetMaxSkipText(cmp.Or(c.skipText, skipText))
		otlp := attrSpans(6000, 3, false)
		file := filepath.Join(dir, "attrs.jsonl")
		if err := os.WriteFile(file, otlp, 0o666); err != nil {
			t.Fatal(err)
		}
		table := fmt.Sprintf("attrs_%d_%d_%d", sample, c.combos, c.skipText)
		e.createExporterTable(t, "otel", table)
		e.load(t, "otel", table, otlp)
		since, until := window(spansOf(t, file, ingest.Options{}))
		url := "clickhouse://" + e.host + "/otel?table=" + table
		want := analyse(t, file, pipeline.Options{SampleSpans: sample})
		got, p := pushedResult(t, url, since, until, sample)
		got.skipped = want.skipped
		what := fmt.Sprintf("attributes, sample %d, combos %d, skip text %d", sample, c.combos, c.skipText)
		sameResult(t, what, want, got)
		s, err := pipeline.Summarize([]string{file}, pipeline.Options{SampleSpans: sample})
		if err != nil {
			t.Fatal(err)
		}
		sameAttr(t, what, s.Accum.State().Hops, p.State.Hops)
		dropped, keys := 0, 0
		for _, h := range p.State.Hops {
			for _, k := range h.Attr {
				keys++
				if k.Dropped {
					dropped++
				}
			}
		}
		if perKey := clickhouse.AttrPerKey(p); perKey != min(c.combos, 1) {
			t.Errorf("%s: %d values' queries attribute by attribute, want %d", what, perKey, min(c.combos, 1))
		}
		if n := clickhouse.CensusScans(p); n != c.census {
			t.Errorf("%s: %d census scans, want %d", what, n, c.census)
		}
		if clickhouse.AttrAgain(p) == 0 {
			t.Errorf("%s: no value's examples were asked for again: the fan-out traces should make some", what)
		}
		if dropped == 0 || keys < 64 {
			t.Errorf("%s: %d keys, %d dropped: the spans should reach the bounds", what, keys, dropped)
		}
		t.Logf("%s: %d keys (%d dropped), %d values' examples asked again, %d bytes over the wire", what, keys, dropped, clickhouse.AttrAgain(p), p.Bytes)
	}
	// A key whose 100 raw values scrub to 10: the values of all of them,
	// asked as the sample tells, give the readers' state; the census's
	// 65 (past the bound: census and values attribute by attribute)
	// cannot tell, and the window is pulled.
	otlp := attrSpans(2000, 4, true)
	e.createExporterTable(t, "otel", "collapse")
	e.load(t, "otel", "collapse", otlp)
	file := filepath.Join(dir, "collapse.jsonl")
	os.WriteFile(file, otlp, 0o666)
	since, until := window(spansOf(t, file, ingest.Options{}))
	clickhouse.SetAttrCombos(combos)
	clickhouse.SetMaxSkipText(skipText)
	p, err := clickhouse.Pushdown(context.Background(), "clickhouse://"+e.host+"/otel?table=collapse", clickhouse.Options{Since: since, Until: until}, ingest.Options{}, 0)
	if err != nil {
		t.Fatalf("a key whose 100 values scrub to 10, the sample's census: %v", err)
	}
	s, err := pipeline.Summarize([]string{file}, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sameAttr(t, "a key whose 100 values scrub to 10", s.Accum.State().Hops, p.State.Hops)
	clickhouse.SetAttrCombos(10)
	_, err = clickhouse.Pushdown(context.Background(), "clickhouse://"+e.host+"/otel?table=collapse", clickhouse.Options{Since: since, Until: until}, ingest.Options{}, 0)
	if !errors.Is(err, clickhouse.ErrNotPushable) || !strings.Contains(err.Error(), `"callback"`) {
		t.Errorf("a key whose 100 values scrub to 10, the census: %v, want ErrNotPushable naming it", err)
	}
}

// TestPushdownBadText: a window whose attribute text is not UTF-8 (which
// the readers would repair) is not computed on the server, wherever the
// text is: a value attribution reads, one too long for it (which the
// census does not hold), a key, the resource's, the scope's.
func TestPushdownBadText(t *testing.T) {
	e := startEngine(t, "")
	dir := t.TempDir()
	otlp := attrSpans(300, 5, false)
	file := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(file, otlp, 0o666)
	since, until := window(spansOf(t, file, ingest.Options{}))
	for i, bad := range []string{
		"mapUpdate(SpanAttributes, map('zone', unhex('61ff'))) AS SpanAttributes",
		"mapUpdate(SpanAttributes, map('zone', concat(repeat('a', 300), unhex('c3')))) AS SpanAttributes",
		"mapUpdate(SpanAttributes, map(unhex('7a6fc3'), 'a')) AS SpanAttributes",
		"mapUpdate(ResourceAttributes, map('k8s.pod.name', unhex('e282'))) AS ResourceAttributes",
		"unhex('312ef0') AS ScopeVersion",
	} {
		table := fmt.Sprintf("bad%d", i)
		e.createExporterTable(t, "otel", table)
		e.load(t, "otel", table, otlp)
		url := "clickhouse://" + e.host + "/otel?table=" + table
		if _, err := clickhouse.Pushdown(context.Background(), url, clickhouse.Options{Since: since, Until: until}, ingest.Options{}, 0); err != nil {
			t.Fatalf("%s before the bad text: %v", table, err)
		}
		e.exec(t, "INSERT INTO otel."+table+" SELECT * REPLACE ("+bad+") FROM otel."+table+" ORDER BY Timestamp LIMIT 1")
		_, err := clickhouse.Pushdown(context.Background(), url, clickhouse.Options{Since: since, Until: until}, ingest.Options{}, 0)
		if !errors.Is(err, clickhouse.ErrNotPushable) || !strings.Contains(err.Error(), "not UTF-8") {
			t.Errorf("%s: %v, want ErrNotPushable saying the text is not UTF-8", bad, err)
		}
	}
}
