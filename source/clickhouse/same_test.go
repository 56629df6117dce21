package clickhouse_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/pipeline"
	"github.com/tailscope/tailscope/source/clickhouse"
	"github.com/tailscope/tailscope/span"
	"github.com/tailscope/tailscope/summary"
)

// repo is the path of a file from the top of the repository.
func repo(parts ...string) string {
	return filepath.Join(append([]string{"..", ".."}, parts...)...)
}

// spansOf reads a fixture as tailscope reads it.
func spansOf(t *testing.T, path string, o ingest.Options) []span.Span {
	t.Helper()
	var out []span.Span
	if _, err := ingest.Read([]string{path}, o, ingest.SinkFunc(func(sp *span.Span) { out = append(out, *sp) })); err != nil {
		t.Fatal(err)
	}
	return out
}

// asOTLP is what an instrumented service would have exported for spans:
// the fields the readers take from attributes are written as those
// attributes (ints as intValue, so that the table's text stands in for
// them), the rest of the attributes as strings.
func asOTLP(spans []span.Span, service string) []otlpSpan {
	var out []otlpSpan
	for _, sp := range spans {
		o := otlpSpan{TraceID: sp.TraceID, SpanID: sp.SpanID, ParentID: sp.ParentID, Service: sp.Service, Name: sp.Name,
			Kind: sp.Kind, Start: sp.Start, Duration: sp.Duration, Ints: map[string]int64{}, Doubles: map[string]float64{}}
		if o.Service == "" {
			o.Service = service
		}
		if o.Name == "" {
			o.Name = sp.Hop
		}
		switch sp.Status {
		case span.OK:
			o.Status = 1
		case span.Error:
			o.Status = 2
		}
		for _, a := range sp.Attrs {
			o.Attrs = append(o.Attrs, [2]string{a.Key, a.Value})
		}
		switch {
		case sp.Timeout:
			o.Attrs = append(o.Attrs, [2]string{"error.type", "timeout"})
		case sp.CodeText != "":
			o.Attrs = append(o.Attrs, [2]string{"error.type", sp.CodeText})
		}
		if sp.Code >= 100 && sp.Code < 600 {
			o.Ints["http.response.status_code"] = int64(sp.Code)
		} else if sp.Code > 0 {
			o.Ints["rpc.grpc.status_code"] = int64(sp.Code)
		}
		if sp.AttemptSet {
			o.Ints["retry.attempt"] = int64(sp.Attempt)
		}
		if sp.TimeoutInForce > 0 {
			o.Doubles["timeout_ms"] = float64(sp.TimeoutInForce) / 1e6
		}
		if sp.Weight != 1 && sp.Weight > 0 {
			o.Doubles["sampling.weight"] = sp.Weight
		}
		out = append(out, o)
	}
	return out
}

// window is [first start, last start + 1) of spans.
func window(spans []span.Span) (time.Time, time.Time) {
	lo, hi := spans[0].Start, spans[0].Start
	for _, sp := range spans {
		lo, hi = min(lo, sp.Start), max(hi, sp.Start)
	}
	return time.Unix(0, lo), time.Unix(0, hi+1)
}

// result is what must be equal: the report's per-hop and per-request
// numbers and the recommended policy.
type result struct {
	hops, requests, policy string
	spans, skipped         int64
	hopNames               []string
}

func analyse(t *testing.T, path string, o pipeline.Options) result {
	t.Helper()
	l, err := pipeline.Read([]string{path}, o)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	rep, pol := l.Recommend(analyze.Options{})
	h, _ := json.MarshalIndent(rep.Hops, "", " ")
	r, _ := json.MarshalIndent(rep.Requests, "", " ")
	var names []string
	for _, x := range rep.Hops {
		names = append(names, x.Hop)
	}
	return result{hops: string(h), requests: string(r), policy: string(pol.Marshal()), spans: rep.Spans, skipped: rep.Skipped, hopNames: names}
}

// sameResult fails where b differs from a, showing the first difference.
func sameResult(t *testing.T, what string, a, b result) {
	t.Helper()
	if a.spans != b.spans {
		t.Errorf("%s: %d spans from the file, %d from ClickHouse", what, a.spans, b.spans)
	}
	for _, x := range []struct{ name, a, b string }{{"hops", a.hops, b.hops}, {"requests", a.requests, b.requests}, {"policy", a.policy, b.policy}} {
		if x.a != x.b {
			if d := os.Getenv("CH_DUMP"); d != "" {
				os.WriteFile(filepath.Join(d, what+"."+x.name+".file"), []byte(x.a), 0o666)
				os.WriteFile(filepath.Join(d, what+"."+x.name+".ch"), []byte(x.b), 0o666)
			}
			t.Errorf("%s: the %s differ:\n%s", what, x.name, firstDiff(x.a, x.b))
		}
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			lo := max(0, i-3)
			return fmt.Sprintf("line %d:\nfile:       %s\nclickhouse: %s\n(context: %s)", i+1, x, y, strings.Join(al[lo:i], " | "))
		}
	}
	return ""
}

type fixture struct {
	name, path string
	opt        ingest.Options
	service    string
	sample     int
	raw        bool // already OTLP: loaded as it is
}

var fixtures = []fixture{
	{name: "seed", path: repo("samples", "seed-chain", "recorded-under-A.jsonl"), service: "chain"},
	{name: "trainticket", path: repo("testdata", "real", "nezha-trainticket", "fault-12_06_trace.csv"),
		opt: ingest.Options{Map: map[string]string{"trace_id": "TraceID", "span_id": "SpanID", "parent_id": "ParentID", "service": "PodName", "name": "OperationName", "start": "StartTimeUnixNano", "end": "EndTimeUnixNano"}}},
	{name: "trainticket-sampled", path: repo("testdata", "real", "nezha-trainticket", "fault-12_06_trace.csv"), sample: 1000,
		opt: ingest.Options{Map: map[string]string{"trace_id": "TraceID", "span_id": "SpanID", "parent_id": "ParentID", "service": "PodName", "name": "OperationName", "start": "StartTimeUnixNano", "end": "EndTimeUnixNano"}}},
	{name: "otel_proto", path: repo("testdata", "real", "otel-proto", "trace.json"), raw: true},
}

// TestSameAsFile: the spans of a fixture, exported as OTLP JSON and
// loaded into the exporter's table, give the same per-hop numbers
// (attempts, failures, percentiles, classes, every field of a hop), the
// same requests and the same recommended policy read from ClickHouse as
// from the OTLP file.
func TestSameAsFile(t *testing.T) {
	e := startEngine(t, "")
	for _, fx := range fixtures {
		t.Run(fx.name, func(t *testing.T) {
			var otlp []byte
			var spans []span.Span
			if fx.raw {
				var err error
				if otlp, err = os.ReadFile(fx.path); err != nil {
					t.Fatal(err)
				}
			} else {
				otlp = otlpLines(asOTLP(spansOf(t, fx.path, fx.opt), fx.service))
			}
			file := filepath.Join(t.TempDir(), fx.name+".otlp.jsonl")
			if err := os.WriteFile(file, otlp, 0o666); err != nil {
				t.Fatal(err)
			}
			spans = spansOf(t, file, ingest.Options{})
			table := "t_" + strings.ReplaceAll(fx.name, "-", "_")
			e.createExporterTable(t, "otel", table)
			n := e.load(t, "otel", table, otlp)
			if n != len(spans) {
				t.Fatalf("loaded %d rows for %d spans", n, len(spans))
			}
			since, until := window(spans)
			fromFile := analyse(t, file, pipeline.Options{SampleSpans: fx.sample})
			url := "clickhouse://" + e.host + "/otel?table=" + table
			fromCH := analyse(t, url, pipeline.Options{SampleSpans: fx.sample, Ingest: ingest.Options{
				Remote: clickhouse.Remote{Options: clickhouse.Options{Since: since, Until: until}}}})
			sameResult(t, fx.name, fromFile, fromCH)
			if t.Failed() {
				return
			}
			// summarize from ClickHouse writes the .tss that summarize
			// of the file writes, but for the name of the input and the
			// read's note.
			// The order of the spans is the one thing a table does not
			// keep; a summary keeps the sample in input order, so it is
			// compared with one of the file in the query's order.
			if fx.raw {
				return
			}
			ordered := filepath.Join(t.TempDir(), fx.name+".ordered.otlp.jsonl")
			if err := os.WriteFile(ordered, otlpLines(queryOrder(asOTLP(spansOf(t, fx.path, fx.opt), fx.service))), 0o666); err != nil {
				t.Fatal(err)
			}
			sf, err := pipeline.Summarize([]string{ordered}, pipeline.Options{SampleSpans: fx.sample})
			if err != nil {
				t.Fatal(err)
			}
			sc, err := pipeline.Summarize([]string{url}, pipeline.Options{SampleSpans: fx.sample, Ingest: ingest.Options{
				Remote: clickhouse.Remote{Options: clickhouse.Options{Since: since, Until: until}}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(sc.Stats.Notes) != 1 || !strings.HasPrefix(sc.Stats.Notes[0], "ClickHouse: ") {
				t.Errorf("notes %q, want the read's", sc.Stats.Notes)
			}
			sc.Stats.Files, sc.Stats.Formats, sc.Stats.Notes = sf.Stats.Files, sf.Stats.Formats, sf.Stats.Notes
			if a, b := summary.Encode(sf), summary.Encode(sc); !bytes.Equal(a, b) {
				t.Errorf("%s: the summaries differ (%d and %d bytes)", fx.name, len(a), len(b))
			}
			// The hop filters, pushed into the query, keep what the
			// readers keep.
			if len(fromFile.hopNames) < 2 {
				return
			}
			re := regexp.MustCompile("^" + regexp.QuoteMeta(fromFile.hopNames[0]) + "$")
			ex := regexp.MustCompile(regexp.QuoteMeta(fromFile.hopNames[1]))
			for _, o := range []ingest.Options{{Hops: re}, {ExcludeHops: ex}} {
				a := analyse(t, file, pipeline.Options{SampleSpans: fx.sample, Ingest: o})
				var rows int64
				progress := func(p clickhouse.Progress) { rows = p.Rows }
				o.Remote = clickhouse.Remote{Options: clickhouse.Options{Since: since, Until: until, Hops: o.Hops, ExcludeHops: o.ExcludeHops, Progress: progress}}
				b := analyse(t, url, pipeline.Options{SampleSpans: fx.sample, Ingest: o})
				sameResult(t, fx.name+" filtered", a, b)
				// The server left out what the filter drops.
				if rows != a.spans {
					t.Errorf("%s: the server sent %d rows for the %d spans the filter keeps", fx.name, rows, a.spans)
				}
			}
		})
	}
}

// queryOrder sorts spans as the query orders the exporter's rows: by the
// table's sorting key (ServiceName, SpanName, toDateTime(Timestamp)),
// then start, trace id, span id, parent id and duration.
func queryOrder(spans []otlpSpan) []otlpSpan {
	key := func(s otlpSpan) []string {
		return []string{s.Service, s.Name, fmt.Sprintf("%020d", s.Start/1e9), fmt.Sprintf("%020d", s.Start), toHex(s.TraceID, 16), toHex(s.SpanID, 8), toHex(s.ParentID, 8), fmt.Sprintf("%020d", s.Duration)}
	}
	sort.SliceStable(spans, func(i, j int) bool { return slices.Compare(key(spans[i]), key(spans[j])) < 0 })
	return spans
}
