package ingest

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/flat"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/internal/realdata"
	"github.com/tailscope/tailscope/span"
)

func TestCSVGenericHeader(t *testing.T) {
	in := "trace_id,hop,duration_ms,status\n" +
		"t1,forward,12.5,ok\n" +
		"t1,retrieve,3000,timeout\n" +
		"\n" +
		"t2,forward,7,error\n"
	spans, st := readString(t, in, record.Options{})
	if st.Formats["in.jsonl"] != "csv" {
		t.Fatalf("sniffed %q, want csv", st.Formats["in.jsonl"])
	}
	want := []span.Span{
		{TraceID: "t1", Hop: "forward", Duration: 12_500_000, Status: span.OK, Weight: 1},
		{TraceID: "t1", Hop: "retrieve", Duration: 3_000_000_000, Status: span.Error, Timeout: true, Weight: 1},
		{TraceID: "t2", Hop: "forward", Duration: 7_000_000, Status: span.Error, Weight: 1},
	}
	if len(spans) != len(want) {
		t.Fatalf("got %d spans, want %d", len(spans), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(spans[i], want[i]) {
			t.Errorf("span %d:\n got %+v\nwant %+v", i, spans[i], want[i])
		}
	}
}

func TestCSVQuotingAndErrors(t *testing.T) {
	in := "trace_id,name,service,duration_ns,error,parent_id\n" +
		`t1,"GET /a, with comma",svc,100,false,root` + "\n" + // 2: quoted comma, root parent
		`t1,"say ""hi""",svc,200,,0` + "\n" + // 3: doubled quotes, 0 parent
		`t1,"multi` + "\n" + `line",svc,300,connection reset,p1` + "\n" + // 4-5: newline inside quotes
		"t1,short,svc\n" + // 6: wrong column count
		"t1,x,svc,abc,,\n" + // 7: bad duration
		`t1,"bad"x,svc,1,,` + "\n" + // 8: junk after a closing quote
		"t1,ok,svc,5,1,-\n" // 9: error=1 and "-" parent
	spans, st := readString(t, in, record.Options{Format: "csv"})
	if len(spans) != 4 {
		t.Fatalf("got %d spans, want 4: %+v", len(spans), spans)
	}
	if spans[0].Name != "GET /a, with comma" || spans[0].ParentID != "" || spans[0].Status != span.Unset {
		t.Errorf("span 1: %+v", spans[0])
	}
	if spans[1].Name != `say "hi"` || spans[1].ParentID != "" {
		t.Errorf("span 2: %+v", spans[1])
	}
	if spans[2].Name != "multi\nline" || spans[2].ParentID != "p1" || spans[2].Status != span.Error {
		t.Errorf("span 3: %+v", spans[2])
	}
	if spans[3].Status != span.Error || spans[3].ParentID != "" {
		t.Errorf("span 4: %+v", spans[3])
	}
	wantErr := []string{
		"in.jsonl:6: wrong column count: 3 fields, the header has 6",
		`in.jsonl:7: bad value: column duration_ns: bad duration_ns "abc": want a number`,
		`in.jsonl:8: bad CSV: unexpected 'x' after a closing quote at byte 9`,
	}
	if len(st.Errors) != len(wantErr) {
		t.Fatalf("errors: %v", st.Errors)
	}
	for i, w := range wantErr {
		if got := st.Errors[i].Error(); got != w {
			t.Errorf("error %d:\n got %s\nwant %s", i, got, w)
		}
	}
}

func TestCSVUnterminatedQuote(t *testing.T) {
	in := "hop,duration_ms\na,1\n\"b,2\nc,3\n"
	spans, st := readString(t, in, record.Options{Format: "csv"})
	if len(spans) != 1 || st.SkippedByReason["bad CSV"] != 1 {
		t.Fatalf("spans %d, skipped %v", len(spans), st.SkippedByReason)
	}
	if got := st.Errors[0].Error(); got != "in.jsonl:3: bad CSV: unterminated quoted field" {
		t.Errorf("got %s", got)
	}
}

func TestCSVNoDuration(t *testing.T) {
	_, err := ReadStream("x.csv", strings.NewReader("trace_id,hop\nt,a\n"), record.Options{Format: "csv"}, SinkFunc(func(*span.Span) {}))
	if err == nil || !strings.Contains(err.Error(), "x.csv: line 1: the CSV header (trace_id,hop) has no duration column") {
		t.Fatalf("got %v", err)
	}
}

func TestCSVDelimiters(t *testing.T) {
	for _, d := range []string{"\t", ";"} {
		in := strings.ReplaceAll("hop,duration_ms\na,1\nb,2\n", ",", d)
		spans, _ := readString(t, in, record.Options{Format: "csv"})
		if len(spans) != 2 || spans[1].Hop != "b" || spans[1].Duration != 2e6 {
			t.Errorf("delimiter %q: %+v", d, spans)
		}
	}
}

func TestPodService(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"ts-gateway-service-6f6cfc45b-d9pnv", "ts-gateway-service"},
		{"ts-basic-service-5dc8d4f9fd-llznp", "ts-basic-service"},
		{"ts-station-food-service-dc4d75dd-k65k2", "ts-station-food-service"},
		{"checkout-7d4b9c8f6d-x2x9q", "checkout"},
		{"checkout", "checkout"},
		{"redis-0", "redis-0"},                     // StatefulSet ordinal: kept
		{"order-service-v2", "order-service-v2"},   // not a pod name
		{"api-gateway-aeiou", "api-gateway-aeiou"}, // vowels are not in k8s suffixes
	} {
		if got := flat.PodService(c.in); got != c.want {
			t.Errorf("PodService(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// The pod rule applies only to a service read from a pod column.
func TestCSVPodColumn(t *testing.T) {
	in := "pod_name,svc,hop,duration_ms\ncart-5c95b49cff-mxdsg,cart-5c95b49cff-mxdsg,a,1\n"
	spans, _ := readString(t, in, record.Options{Format: "csv", Map: map[string]string{"service": "pod_name"}})
	if spans[0].Service != "cart" {
		t.Errorf("from a pod column: %q", spans[0].Service)
	}
	spans, _ = readString(t, in, record.Options{Format: "csv", Map: map[string]string{"service": "svc"}})
	if spans[0].Service != "cart-5c95b49cff-mxdsg" {
		t.Errorf("from a plain column: %q", spans[0].Service)
	}
}

// NezhaMap is the one --map line documented for the Nezha TrainTicket CSVs.
const NezhaMap = "trace_id=TraceID,span_id=SpanID,parent_id=ParentID,service=PodName,name=OperationName,start=StartTimeUnixNano,end=EndTimeUnixNano"

// TestCSVNezha reads both TrainTicket minutes (the baseline's subset of
// whole traces unless TAILSCOPE_REALDATA=full): every row is a span, every
// trace has its one root and assembles without orphans, and services are
// pod names without their hash segments. Rows and traces are counted from
// the raw CSV; the README's numbers are held where the file read is whole.
func TestCSVNezha(t *testing.T) {
	m, err := ParseMap([]string{NezhaMap})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file          string
		spans, traces int // the whole minute's
		services      int
	}{
		{"nezha-trainticket/fault-12_06_trace.csv", 4166, 59, 28},
		{"nezha-trainticket/baseline-11_39_trace.csv", 4595, 62, 28},
	} {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			path := realdata.Path(t, c.file)
			rows, ids := csvRowsAndTraces(t, path)
			if realdata.Whole(t, c.file, path) && (rows != c.spans || ids != c.traces) {
				t.Fatalf("%s holds %d rows of %d traces, want the whole minute's %d and %d", path, rows, ids, c.spans, c.traces)
			}
			var spans []span.Span
			st, err := Read([]string{path}, record.Options{Map: m}, SinkFunc(func(s *span.Span) { spans = append(spans, *s) }))
			if err != nil {
				t.Fatal(err)
			}
			if st.Read != int64(rows) || st.Used != int64(rows) || st.Skipped != 0 {
				t.Fatalf("read %d used %d skipped %d %v, want %d used", st.Read, st.Used, st.Skipped, st.Errors, rows)
			}
			traces, services := map[string]bool{}, map[string]bool{}
			roots := 0
			for _, s := range spans {
				traces[s.TraceID] = true
				services[s.Service] = true
				if s.ParentID == "" {
					roots++
				}
				if s.Duration <= 0 || s.Start <= 0 || !strings.HasPrefix(s.Service, "ts-") || strings.HasSuffix(s.Service, "-d9pnv") {
					t.Fatalf("bad span %+v", s)
				}
			}
			if len(traces) != ids || roots != ids {
				t.Errorf("traces %d roots %d, want %d of each", len(traces), roots, ids)
			}
			if realdata.Whole(t, c.file, path) && len(services) != c.services {
				t.Errorf("services %d, want %d", len(services), c.services)
			}
			reqs, probs := span.Assemble(spans)
			if len(reqs) != ids || probs.Orphans != 0 {
				t.Errorf("assembled %d requests, %d orphans; want %d and none", len(reqs), probs.Orphans, ids)
			}
		})
	}
}

// csvRowsAndTraces counts the data rows of a CSV file and the distinct
// values of its first column (the trace id in Nezha's exports), with the
// standard library's reader rather than the one under test.
func csvRowsAndTraces(t *testing.T, path string) (rows, traces int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	all, err := csv.NewReader(f).ReadAll()
	if err != nil || len(all) < 2 {
		t.Fatalf("%s: %d records, %v", path, len(all), err)
	}
	ids := map[string]bool{}
	for _, r := range all[1:] {
		ids[r[0]] = true
	}
	return len(all) - 1, len(ids)
}

// The Duration column (µs) and start/end (ns) agree to the microsecond.
func TestCSVNezhaDurationColumn(t *testing.T) {
	path := realdata.Path(t, "nezha-trainticket/fault-12_06_trace.csv")
	read := func(mp string) []span.Span {
		m, err := ParseMap([]string{mp})
		if err != nil {
			t.Fatal(err)
		}
		var out []span.Span
		if _, err := Read([]string{path}, record.Options{Map: m}, SinkFunc(func(s *span.Span) { out = append(out, *s) })); err != nil {
			t.Fatal(err)
		}
		return out
	}
	ns := read(NezhaMap)
	us := read(strings.Replace(NezhaMap, "end=EndTimeUnixNano", "duration_us=Duration", 1))
	if len(ns) == 0 || len(ns) != len(us) {
		t.Fatalf("%d vs %d spans", len(ns), len(us))
	}
	for i := range ns {
		if ns[i].Duration/1000 != us[i].Duration/1000 {
			t.Fatalf("span %d: %d ns vs %d µs", i, ns[i].Duration, us[i].Duration/1000)
		}
	}
}

func FuzzCSV(f *testing.F) {
	f.Add("trace_id,hop,duration_ms,status\nt,a,1,ok\n")
	f.Add("a,b\n\"x\ny\",1\n")
	f.Add("hop,duration_ms,parent_id\n\"\"\"\",1e400,root\n")
	f.Add("TraceID,PodName,StartTimeUnixNano,EndTimeUnixNano\nt,p-5c95b49cff-mxdsg,10,5\n")
	f.Add("\xef\xbb\xbfhop\tduration_ms\tcode\tattempt\na\t1\tECONNRESET\t0\nb\t2\tunavailable\tx\n")
	f.Fuzz(func(t *testing.T, in string) {
		opt := record.Options{Format: "csv", MaxRecord: 256, Map: map[string]string{"service": "PodName", "start": "StartTimeUnixNano", "end": "EndTimeUnixNano"}}
		st, err := ReadStream("f.csv", strings.NewReader(in), opt, SinkFunc(func(*span.Span) {}))
		if err == nil && st.Read != st.Used+st.Skipped+st.Filtered {
			t.Fatalf("read %d != used %d + skipped %d", st.Read, st.Used, st.Skipped)
		}
	})
}
