package clickhouse_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/recommend"
	"github.com/tailscope/tailscope/source/clickhouse"
	"github.com/tailscope/tailscope/span"
)

// TestBinSQL: the sketch bin computed in ClickHouse SQL is quantile.Bin
// for every integer from 1 to 5,000, at every bin's lowest integer and
// the integers beside it up to 2^63−1, and on random values of every
// magnitude.
func TestBinSQL(t *testing.T) {
	e := startEngine(t, "")
	var xs []int64
	for x := int64(1); x <= 5000; x++ {
		xs = append(xs, x)
	}
	prev := quantile.Bin(5000)
	for x := int64(5000); x > 0 && x < math.MaxInt64/2; {
		// Walk the bins' edges: the next integer whose bin differs.
		lo, hi := x, x*2
		for lo < hi {
			m := lo + (hi-lo)/2
			if quantile.Bin(m) > prev {
				hi = m
			} else {
				lo = m + 1
			}
		}
		xs = append(xs, lo-1, lo, lo+1)
		prev, x = quantile.Bin(lo), lo
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		xs = append(xs, int64(math.Exp(r.Float64()*43)))
	}
	xs = append(xs, math.MaxInt64, math.MaxInt64-1)
	for len(xs) > 0 {
		n := min(len(xs), 4000)
		var vals []string
		for _, x := range xs[:n] {
			if x >= 1 {
				vals = append(vals, strconv.FormatInt(x, 10))
			}
		}
		out := e.exec(t, clickhouse.BinWith()+"SELECT x, "+clickhouse.BinSQL("x")+" AS b FROM (SELECT arrayJoin(CAST(["+
			strings.Join(vals, ",")+"], 'Array(Int64)')) AS x) FORMAT TSV")
		bad := 0
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			x, _ := strconv.ParseInt(f[0], 10, 64)
			b, _ := strconv.Atoi(f[1])
			if b != quantile.Bin(x) {
				if bad++; bad < 10 {
					t.Errorf("bin of %d: %d in SQL, %d in quantile", x, b, quantile.Bin(x))
				}
			}
		}
		xs = xs[n:]
	}
}

// outcomeSpans are spans of every outcome the readers tell apart:
// statuses, HTTP and gRPC codes as numbers and as text, error.type, a
// timeout in the status message or an exception event, Envoy's flags,
// the OpenTracing error flag, otel.status_code — on a server, a client
// and an internal hop, with attributes beside them that say nothing of
// the outcome.
func outcomeSpans(n int, seed uint64) []byte {
	type variant struct {
		status  int
		message string
		attrs   [][2]string
		exc     [][2]string
	}
	vs := []variant{
		{status: 0}, {status: 1}, {status: 2}, {status: 2, message: "context deadline exceeded"},
		{status: 2, message: "connection refused"}, {status: 0, message: "timeout while idle"},
		{attrs: [][2]string{{"http.response.status_code", "503"}}},
		{attrs: [][2]string{{"http.response.status_code", "504"}}},
		{status: 2, attrs: [][2]string{{"http.response.status_code", "500"}}},
		{attrs: [][2]string{{"http.status_code", "408"}}},
		{attrs: [][2]string{{"http.status_code", "503 Service Unavailable"}}},
		{attrs: [][2]string{{"http.status_code", "ECONNRESET"}}},
		{attrs: [][2]string{{"rpc.grpc.status_code", "4"}}},
		{attrs: [][2]string{{"rpc.grpc.status_code", "14"}}},
		{attrs: [][2]string{{"grpc.status_code", "UNAVAILABLE"}}},
		{attrs: [][2]string{{"grpc.status_code", "DEADLINE_EXCEEDED"}}},
		{attrs: [][2]string{{"error.type", "timeout"}}},
		{attrs: [][2]string{{"error.type", "java.net.SocketTimeoutException"}}},
		{attrs: [][2]string{{"error.type", "ECONNREFUSED"}}},
		{attrs: [][2]string{{"error", "true"}}},
		{attrs: [][2]string{{"error", "false"}}},
		{attrs: [][2]string{{"otel.status_code", "ERROR"}}},
		{attrs: [][2]string{{"otel.status_code", "OK"}, {"http.response.status_code", "500"}}},
		{status: 2, attrs: [][2]string{{"otel.status_description", "deadline exceeded"}}},
		{attrs: [][2]string{{"response_flags", "UT"}}},
		{attrs: [][2]string{{"envoy.response_flags", "UF,URX"}}},
		{status: 2, exc: [][2]string{{"exception.type", "java.net.SocketTimeoutException"}, {"exception.message", "Read timed out"}}},
		{status: 2, exc: [][2]string{{"exception.type", "java.io.IOException"}, {"exception.message", "broken pipe"}}},
		{status: 0, exc: [][2]string{{"exception.type", "TimeoutError"}}},
	}
	hops := []struct{ service, name string }{{"front", "GET /"}, {"front", "call back"}, {"back", "query"}}
	kinds := []int{2, 3, 1}
	r := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	t0 := int64(1772445600000000000)
	kv := func(k, v string) string {
		kj, _ := json.Marshal(k)
		vj, _ := json.Marshal(v)
		return `{"key":` + string(kj) + `,"value":{"stringValue":` + string(vj) + `}}`
	}
	for i := range n {
		h := r.IntN(len(hops))
		v := vs[r.IntN(len(vs))]
		start := t0 + int64(i)*1_000_000
		d := int64(math.Exp(7 + 4*r.Float64()))
		if r.IntN(50) == 0 {
			d = 0
		}
		attrs := []string{kv("zone", []string{"a", "b"}[r.IntN(2)]), kv("http.route", fmt.Sprintf("/r/%d", r.IntN(7)))}
		for _, a := range v.attrs {
			attrs = append(attrs, kv(a[0], a[1]))
		}
		ev := ""
		if len(v.exc) > 0 {
			var ea []string
			for _, a := range v.exc {
				ea = append(ea, kv(a[0], a[1]))
			}
			ev = fmt.Sprintf(`,"events":[{"timeUnixNano":"%d","name":"exception","attributes":[%s]}]`, start+d/2, strings.Join(ea, ","))
		}
		msg, _ := json.Marshal(v.message)
		fmt.Fprintf(&b, `{"resourceSpans":[{"resource":{"attributes":[%s]},"scopeSpans":[{"spans":[{"traceId":"%032x","spanId":"%016x","name":%q,"kind":%d,"startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[%s],"status":{"code":%d,"message":%s}%s}]}]}]}`+"\n",
			kv("service.name", hops[h].service), i/3+1, i+1, hops[h].name, kinds[h], start, start+d, strings.Join(attrs, ","), v.status, msg, ev)
	}
	return []byte(b.String())
}

// pushState is the per-hop part of an Accum's state that the push-down
// computes: counts and digests.
func pushState(hs []analyze.HopState) []analyze.HopState {
	var out []analyze.HopState
	for _, h := range hs {
		out = append(out, analyze.HopState{Name: h.Name, Attempts: h.Attempts, Failed: h.Failed, Cut: h.Cut, Succ: h.Succ, Flagged: h.Flagged, Other: h.Other})
	}
	return out
}

// norm makes empty and nil slices alike for the comparison.
func norm(hs []analyze.HopState) {
	for i := range hs {
		for _, s := range []*quantile.State{&hs[i].Succ, &hs[i].Flagged, &hs[i].Other} {
			if len(s.Values) == 0 {
				s.Values = nil
			}
			if len(s.Bins) == 0 {
				s.Bins = nil
			}
		}
	}
}

// samePushdown checks that the server's per-hop counts and digests of
// url's window are those the readers keep reading file.
func samePushdown(t *testing.T, what, file, url string, since, until time.Time, o ingest.Options) *clickhouse.Aggregates {
	t.Helper()
	s, err := pipeline.Summarize([]string{file}, pipeline.Options{Ingest: o})
	if err != nil {
		t.Fatal(err)
	}
	want := pushState(s.Accum.State().Hops)
	agg, err := clickhouse.Aggregate(context.Background(), url, clickhouse.Options{Since: since, Until: until}, o)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	got := agg.Hops
	norm(want)
	norm(got)
	if len(got) != len(want) {
		t.Fatalf("%s: %d hops from the server, %d from the file", what, len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			g, w := got[i], want[i]
			t.Errorf("%s: hop %q: server %d/%d/%d attempts/failed/cut (digests %d %d %d, sketch %v), file %q %d/%d/%d (%d %d %d, sketch %v)",
				what, g.Name, g.Attempts, g.Failed, g.Cut, g.Succ.N, g.Flagged.N, g.Other.N, g.Succ.Sketch,
				w.Name, w.Attempts, w.Failed, w.Cut, w.Succ.N, w.Flagged.N, w.Other.N, w.Succ.Sketch)
		}
	}
	if agg.Spans != s.Accum.State().Total {
		t.Errorf("%s: %d spans aggregated, %d read from the file", what, agg.Spans, s.Accum.State().Total)
	}
	return agg
}

// TestPushdownClasses: on spans of every outcome the readers tell apart,
// and on the fixtures of TestSameAsFile, the per-hop attempts, failures,
// cut attempts and the three digests computed on the server equal those
// the readers keep from the OTLP file, value for value.
func TestPushdownClasses(t *testing.T) {
	e := startEngine(t, "")
	dir := t.TempDir()
	otlp := outcomeSpans(3000, 1)
	file := filepath.Join(dir, "outcomes.jsonl")
	if err := os.WriteFile(file, otlp, 0o666); err != nil {
		t.Fatal(err)
	}
	e.createExporterTable(t, "otel", "outcomes")
	e.load(t, "otel", "outcomes", otlp)
	spans := spansOf(t, file, ingest.Options{})
	since, until := window(spans)
	agg := samePushdown(t, "outcomes", file, "clickhouse://"+e.host+"/otel?table=outcomes", since, until, ingest.Options{})
	t.Logf("outcomes: %d spans in %d outcome groups, %d bytes over the wire", agg.Spans, agg.Groups, agg.Bytes)
	var failed, cut int
	for _, h := range agg.Hops {
		failed, cut = failed+h.Failed, cut+h.Cut
	}
	if failed == 0 || cut == 0 || cut == failed {
		t.Errorf("the outcome spans give %d failures, %d cut: want both kinds", failed, cut)
	}
	for _, fx := range fixtures {
		if fx.sample != 0 {
			continue
		}
		t.Run(fx.name, func(t *testing.T) {
			var otlp []byte
			if fx.raw {
				var err error
				if otlp, err = os.ReadFile(fx.path); err != nil {
					t.Fatal(err)
				}
			} else {
				otlp = otlpLines(asOTLP(spansOf(t, fx.path, fx.opt), fx.service))
			}
			file := filepath.Join(dir, fx.name+".otlp.jsonl")
			if err := os.WriteFile(file, otlp, 0o666); err != nil {
				t.Fatal(err)
			}
			spans := spansOf(t, file, ingest.Options{})
			table := "p_" + strings.ReplaceAll(fx.name, "-", "_")
			e.createExporterTable(t, "otel", table)
			e.load(t, "otel", table, otlp)
			since, until := window(spans)
			agg := samePushdown(t, fx.name, file, "clickhouse://"+e.host+"/otel?table="+table, since, until, ingest.Options{})
			t.Logf("%s: %d spans in %d outcome groups, %d bytes over the wire", fx.name, agg.Spans, agg.Groups, agg.Bytes)
		})
	}
}

var _ = span.OK

// TestPushdownSketch: past quantile.ExactLimit attempts a hop's digests
// are sketches; the server's bins equal those the readers fill from the
// same spans pulled (the pull path, which TestSameAsFile holds to the
// file's numbers), bin for bin, with the exact hops beside them.
func TestPushdownSketch(t *testing.T) {
	if testing.Short() {
		t.Skip("520,000 spans")
	}
	e := startEngine(t, "")
	e.generate(t, "otel", "big", 520_000)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	url := "clickhouse://" + e.host + "/otel?table=big"
	for _, w := range []struct{ since, until time.Time }{{t0, t0.Add(time.Hour)}, {t0, t0.Add(50 * time.Second)}} {
		o := ingest.Options{Remote: clickhouse.Remote{Options: clickhouse.Options{Since: w.since, Until: w.until}}}
		start := time.Now()
		agg := samePushdown(t, "generated", url, url, w.since, w.until, o)
		sameRanks(t, url, w.since, w.until, agg)
		sketched := 0
		for _, h := range agg.Hops {
			if h.Succ.Sketch {
				sketched++
			}
		}
		if w.until.Sub(w.since) == time.Hour && sketched != 5 {
			t.Errorf("%d of %d hops sketched, want 5", sketched, len(agg.Hops))
		}
		t.Logf("%v: %d spans, %d hops sketched, %d outcome groups, %d bytes over the wire (both paths: %v)", w.until.Sub(w.since), agg.Spans, sketched, agg.Groups, agg.Bytes, time.Since(start))
		// The whole state, with the trace sample at a level above 0 and
		// hops whose attempt times are sampled: the report of the pull
		// path, attribution included.
		want := analyse(t, url, pipeline.Options{Ingest: o})
		got, p := pushedResult(t, url, w.since, w.until, 0)
		got.skipped = want.skipped
		sameResult(t, "generated", want, got)
		t.Logf("%v: level %d, %d spans pulled, %d bytes over the wire in all", w.until.Sub(w.since), p.State.Level, p.Sampled, p.Bytes)
		// A floor above the hops' level: the times are asked for again,
		// and the state is the same.
		old := clickhouse.SetFloorBelow(-4)
		again, _ := pushedResult(t, url, w.since, w.until, 0)
		clickhouse.SetFloorBelow(old)
		again.skipped = want.skipped
		sameResult(t, "generated, times asked again", want, again)
	}
}

// sameRanks checks the server's counts of each hop's attempts by rank,
// which decide the level of the hop's attempt times, against the ranks
// of the spans the readers read from the same window (pulled): an
// attempt's rank hashes its start and its duration, or −1 − the
// duration when it failed (analyze's keepTime), which the server knows
// only once its outcome group is classified.
func sameRanks(t *testing.T, url string, since, until time.Time, agg *clickhouse.Aggregates) {
	t.Helper()
	s, err := clickhouse.Open(context.Background(), url, clickhouse.Options{Since: since, Until: until})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mix := func(x uint64) uint64 {
		x ^= x >> 30
		x *= 0xbf58476d1ce4e5b9
		x ^= x >> 27
		x *= 0x94d049bb133111eb
		return x ^ x>>31
	}
	want := map[string][]int{}
	_, err = ingest.ReadStream("pulled.jsonl", s, ingest.Options{}, ingest.SinkFunc(func(sp *span.Span) {
		d := sp.Duration
		if sp.Failed() {
			d = -1 - d
		}
		if want[sp.Hop] == nil {
			want[sp.Hop] = make([]int, 65)
		}
		want[sp.Hop][bits.LeadingZeros64(mix(uint64(sp.Start)^uint64(d)*0x9E3779B97F4A7C15))]++
	}))
	if err != nil {
		t.Fatal(err)
	}
	got := clickhouse.AttemptRanks(agg)
	if len(got) != len(want) {
		t.Fatalf("attempt ranks of %d hops from the server, %d from the readers", len(got), len(want))
	}
	for h, w := range want {
		if !reflect.DeepEqual(got[h], w) {
			t.Errorf("hop %q: attempts by rank %v from the server, %v from the readers", h, got[h], w)
		}
	}
}

// pushedResult is the report and policy of a state computed on the
// server, as pipeline.Read's Recommend makes them from an Accum.
func pushedResult(t *testing.T, url string, since, until time.Time, sample int) (result, *clickhouse.Pushed) {
	t.Helper()
	p, err := clickhouse.Pushdown(context.Background(), url, clickhouse.Options{Since: since, Until: until}, ingest.Options{}, sample)
	if err != nil {
		t.Fatal(err)
	}
	acc, err := analyze.FromState(p.State)
	if err != nil {
		t.Fatalf("the server's state does not check: %v", err)
	}
	spans := acc.Spans()
	reqs, probs := span.Assemble(spans)
	rep, pol := recommend.RunAccum(acc, reqs, probs, analyze.Options{})
	h, _ := json.MarshalIndent(rep.Hops, "", " ")
	r, _ := json.MarshalIndent(rep.Requests, "", " ")
	var names []string
	for _, x := range rep.Hops {
		names = append(names, x.Hop)
	}
	return result{hops: string(h), requests: string(r), policy: string(pol.Marshal()), spans: acc.State().Total, hopNames: names}, p
}

// TestPushdownReport: the state computed on the server gives the report
// (every field of every hop, the requests) and the policy that the
// readers give from the OTLP file of the same spans.
func TestPushdownReport(t *testing.T) {
	e := startEngine(t, "")
	dir := t.TempDir()
	cases := append([]fixture{{name: "outcomes"}, {name: "outcomes-sampled", sample: 500}}, fixtures...)
	for _, fx := range cases {
		t.Run(fx.name, func(t *testing.T) {
			var otlp []byte
			switch {
			case strings.HasPrefix(fx.name, "outcomes"):
				otlp = outcomeSpans(3000, 2)
			case fx.raw:
				var err error
				if otlp, err = os.ReadFile(fx.path); err != nil {
					t.Fatal(err)
				}
			default:
				otlp = otlpLines(asOTLP(spansOf(t, fx.path, fx.opt), fx.service))
			}
			file := filepath.Join(dir, fx.name+".otlp.jsonl")
			if err := os.WriteFile(file, otlp, 0o666); err != nil {
				t.Fatal(err)
			}
			spans := spansOf(t, file, ingest.Options{})
			table := "r_" + strings.ReplaceAll(fx.name, "-", "_")
			e.createExporterTable(t, "otel", table)
			e.load(t, "otel", table, otlp)
			since, until := window(spans)
			want := analyse(t, file, pipeline.Options{SampleSpans: fx.sample})
			url := "clickhouse://" + e.host + "/otel?table=" + table
			got, p := pushedResult(t, url, since, until, fx.sample)
			got.skipped = want.skipped
			// Attribution is pushed down too: every field of every hop.
			sameResult(t, fx.name, want, got)
			// Each hop's first span is the pull path's (the table keeps
			// no file order: the query's order decides which is first).
			pulled, err := pipeline.Summarize([]string{url}, pipeline.Options{SampleSpans: fx.sample, Ingest: ingest.Options{
				Remote: clickhouse.Remote{Options: clickhouse.Options{Since: since, Until: until}}}})
			if err != nil {
				t.Fatal(err)
			}
			for i, h := range pulled.Accum.State().Hops {
				if i >= len(p.State.Hops) || p.State.Hops[i].First != h.First {
					t.Errorf("%s: hop %q: first span %+v pushed down, %+v pulled", fx.name, h.Name, p.State.Hops[min(i, len(p.State.Hops)-1)].First, h.First)
				}
			}
			sameAttr(t, fx.name, pulled.Accum.State().Hops, p.State.Hops)
			t.Logf("%s: %d spans, %d outcome groups, %d pulled, %d bytes over the wire", fx.name, got.spans, p.Groups, p.Sampled, p.Bytes)
			if fx.name != "outcomes-sampled" {
				return
			}
			// The sample read by the traces' ids the digests' scan
			// brought, and (their text past the bound) by the traces'
			// hash: the same report either way.
			if p.State.Level == 0 || clickhouse.TraceList(p) != 1 {
				t.Errorf("%s: level %d, %d samples read by the traces' ids, want a level and 1", fx.name, p.State.Level, clickhouse.TraceList(p))
			}
			old := clickhouse.SetMaxTraceText(0)
			defer clickhouse.SetMaxTraceText(old)
			got, p = pushedResult(t, url, since, until, fx.sample)
			got.skipped = want.skipped
			sameResult(t, fx.name+", the traces hashed by the sample's read", want, got)
			if clickhouse.TraceList(p) != 0 {
				t.Errorf("%s: the traces' ids past the bound, yet read by them", fx.name)
			}
		})
	}
}

// TestTraceHash32SQL: the push-down's unrolled trace hash (ids of 32
// bytes, as the readers write a trace id) equals analyze.TraceHash.
func TestTraceHash32SQL(t *testing.T) {
	e := startEngine(t, "")
	r := rand.New(rand.NewPCG(3, 4))
	var ids, lits []string
	for range 2000 {
		id := fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
		ids, lits = append(ids, id), append(lits, "'"+id+"'")
	}
	out := strings.Fields(e.exec(t, "SELECT h FROM ("+clickhouse.TraceHash32SQL("SELECT arrayJoin(["+strings.Join(lits, ",")+"]) AS s", "s", "h")+") FORMAT TSV"))
	if len(out) != len(ids) {
		t.Fatalf("%d hashes for %d ids", len(out), len(ids))
	}
	for i, id := range ids {
		if h, _ := strconv.ParseUint(out[i], 10, 64); h != analyze.TraceHash(id) {
			t.Errorf("%s: SQL %d, Go %d", id, h, analyze.TraceHash(id))
		}
	}
}

// TestClzSQL: the leading zeros in SQL are bits.LeadingZeros64 at 0,
// at every power of two and beside it, and on random values.
func TestClzSQL(t *testing.T) {
	e := startEngine(t, "")
	xs := []uint64{0, math.MaxUint64}
	for k := range 64 {
		x := uint64(1) << k
		xs = append(xs, x, x-1, x+1, x|x>>1)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		xs = append(xs, r.Uint64()>>r.IntN(64))
	}
	var lits []string
	for _, x := range xs {
		lits = append(lits, strconv.FormatUint(x, 10))
	}
	out := strings.Fields(e.exec(t, "SELECT z FROM ("+clickhouse.ClzSQL("SELECT arrayJoin(CAST(["+strings.Join(lits, ",")+"], 'Array(UInt64)')) AS x", "x", "z")+") FORMAT TSV"))
	if len(out) != len(xs) {
		t.Fatalf("%d answers for %d values", len(out), len(xs))
	}
	for i, x := range xs {
		if n, _ := strconv.Atoi(out[i]); n != bits.LeadingZeros64(x) {
			t.Errorf("%#x: %d leading zeros in SQL, %d", x, n, bits.LeadingZeros64(x))
		}
	}
}

// sameAttr checks that each hop's attribution state pushed down (got)
// is the one the readers keep (want): keys kept and dropped, and per
// value the counts, bins and examples.
func sameAttr(t *testing.T, what string, want, got []analyze.HopState) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d hops pushed down, %d read", what, len(got), len(want))
	}
	nattr := 0
	for i := range want {
		w, g := want[i], got[i]
		if w.HasAttr != g.HasAttr || len(w.Attr) != len(g.Attr) {
			t.Errorf("%s: hop %q: attributes %v, %d keys pushed down; %v, %d read", what, w.Name, g.HasAttr, len(g.Attr), w.HasAttr, len(w.Attr))
			continue
		}
		for j := range w.Attr {
			wk, gk := w.Attr[j], g.Attr[j]
			for _, k := range []*analyze.AttrKey{&wk, &gk} {
				for v := range k.Values {
					if len(k.Values[v].Bins) == 0 {
						k.Values[v].Bins = nil
					}
				}
			}
			if !reflect.DeepEqual(wk, gk) {
				t.Errorf("%s: hop %q: attribute key pushed down\n%+v\nread\n%+v", what, w.Name, gk, wk)
			}
			nattr += len(wk.Values)
		}
	}
	t.Logf("%s: %d attribute values the same", what, nattr)
}
