package ingest

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// flatRow uses the canonical column names: no --map needed.
type flatRow struct {
	TraceID    string  `parquet:"trace_id,optional"`
	SpanID     []byte  `parquet:"span_id,optional"` // binary: read as hex
	ParentID   string  `parquet:"parent_id,optional"`
	Hop        string  `parquet:"hop,dict"`
	Start      int64   `parquet:"start,optional"`
	DurationNs int64   `parquet:"duration_ns,optional"`
	Status     string  `parquet:"status,optional"`
	Timeout    bool    `parquet:"timeout"`
	Code       int32   `parquet:"code,optional"`
	TimeoutMs  float64 `parquet:"timeout_ms,optional"`
	Weight     float64 `parquet:"weight,optional"`
}

func flatRows() []flatRow {
	return []flatRow{
		{TraceID: "t1", SpanID: []byte{0xab, 0xcd}, Hop: "a", Start: 1_000, DurationNs: 5_000_000, Status: "ok", Weight: 2},
		{TraceID: "t1", ParentID: "0", Hop: "b", Start: 2_000, DurationNs: 3_000_000_000, Status: "error", Timeout: true, Code: 504, TimeoutMs: 3000},
		{TraceID: "t2", Hop: "a", DurationNs: -5},                 // negative: skipped
		{TraceID: "t2", Hop: "a", Status: "ok"},                   // no duration: skipped
		{TraceID: "t2", Hop: "c", DurationNs: 7, Status: "maybe"}, // a status not understood: kept without it
		{TraceID: "t3", Hop: "a", DurationNs: 1, Code: 503},
	}
}

func TestParquetFlat(t *testing.T) {
	data := writeParquet(t, flatRows(), parquet.MaxRowsPerRowGroup(4))
	spans, st := readBytes(t, "flat.parquet", data, record.Options{})
	want := []span.Span{
		{TraceID: "t1", SpanID: "abcd", Hop: "a", Start: 1_000, Duration: 5_000_000, Status: span.OK, Weight: 2},
		{TraceID: "t1", Hop: "b", Start: 2_000, Duration: 3e9, Status: span.Error, Timeout: true, Code: 504, TimeoutInForce: 3e9, Weight: 1},
		{TraceID: "t2", Hop: "c", Duration: 7, Weight: 1},
		{TraceID: "t3", Hop: "a", Duration: 1, Status: span.Error, Code: 503, Weight: 1},
	}
	if len(spans) != len(want) {
		t.Fatalf("got %d spans: %+v", len(spans), spans)
	}
	for i := range want {
		if !reflect.DeepEqual(spans[i], want[i]) {
			t.Errorf("span %d:\n got %+v\nwant %+v", i, spans[i], want[i])
		}
	}
	wantErr := []string{
		"flat.parquet: span 3: negative duration: -5 ns",
		"flat.parquet: span 4: missing duration: no duration, duration_ms/us/ns, or start and end",
	}
	for i, w := range wantErr {
		if i >= len(st.Errors) || st.Errors[i].Error() != w {
			t.Errorf("error %d: got %v, want %s", i, st.Errors, w)
		}
	}
	if len(st.Errors) != len(wantErr) || st.Ignored != 1 || st.IgnoredByField["status"] != 1 ||
		!strings.Contains(st.IgnoredExamples[0].Error(), `flat.parquet: span 5: status: status "maybe"`) {
		t.Errorf("errors %v, ignored %d %v %v", st.Errors, st.Ignored, st.IgnoredByField, st.IgnoredExamples)
	}
}

// Any flat table reads through --map, with a timestamp column and a pod
// column.
func TestParquetMapped(t *testing.T) {
	type row struct {
		Tid     string    `parquet:"tid"`
		Op      string    `parquet:"operation"` // an alias of name
		PodName string    `parquet:"PodName"`
		Lat     float64   `parquet:"lat"`
		Ts      time.Time `parquet:"ts,timestamp(millisecond)"`
		Ok      bool      `parquet:"ok_flag"`
		Other   []int64   `parquet:"other,list"` // nested: ignored
	}
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	data := writeParquet(t, []row{
		{Tid: "x", Op: "GET", PodName: "cart-5c95b49cff-mxdsg", Lat: 1.5, Ts: ts, Ok: true, Other: []int64{1}},
		{Tid: "y", Op: "PUT", PodName: "cart-5c95b49cff-mxdsg", Lat: 2, Ts: ts, Ok: false},
	})
	m, err := ParseMap([]string{"trace_id=tid,duration_ms=lat,service=PodName,start=ts,status=ok_flag"})
	if err != nil {
		t.Fatal(err)
	}
	spans, _ := readBytes(t, "m.parquet", data, record.Options{Map: m})
	if len(spans) != 2 {
		t.Fatalf("got %d", len(spans))
	}
	s := spans[0]
	if s.TraceID != "x" || s.Name != "GET" || s.Service != "cart" || s.Duration != 1_500_000 || s.Start != ts.UnixNano() || s.Status != span.OK || s.Hop != "cart GET" {
		t.Errorf("span 1: %+v", s)
	}
	if spans[1].Status != span.Error {
		t.Errorf("span 2: %+v", spans[1])
	}
	// Without the map there is no duration column: a clear error.
	_, err = ReadStream("m.parquet", bytes.NewReader(data), record.Options{}, SinkFunc(func(*span.Span) {}))
	if err == nil || !strings.Contains(err.Error(), "m.parquet: a flat Parquet table needs a duration column") || !strings.Contains(err.Error(), "lat") {
		t.Errorf("got %v", err)
	}
}

// stdin and compressed Parquet are spilled to a temporary file and read
// the same way.
func TestParquetCompressedStdin(t *testing.T) {
	data := writeParquet(t, flatRows())
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(data)
	zw.Close()
	plain, _ := readBytes(t, "a", data, record.Options{})
	spans, st := readBytes(t, "<stdin>", gz.Bytes(), record.Options{})
	if st.Formats["<stdin>"] != "parquet" || len(spans) != len(plain) || len(spans) != 4 {
		t.Fatalf("format %v, %d spans vs %d", st.Formats, len(spans), len(plain))
	}
}

func TestParquetTruncated(t *testing.T) {
	data := writeParquet(t, flatRows())
	dir := t.TempDir()
	for _, n := range []int{len(data) - 1, len(data) / 2, 4, 0} {
		path := filepath.Join(dir, "cut.parquet")
		if err := os.WriteFile(path, data[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Read([]string{path}, record.Options{Format: "parquet"}, SinkFunc(func(*span.Span) {}))
		if err == nil || !strings.HasPrefix(err.Error(), path+": ") {
			t.Errorf("cut at %d: got %v, want an error naming %s", n, err, path)
		}
	}
	// A corrupt page (bytes flipped inside the data) is an error too, not a
	// panic and not silently wrong counts.
	bad := bytes.Clone(data)
	for i := 8; i < len(bad)/2; i += 7 {
		bad[i] ^= 0x5a
	}
	var n int
	_, err := ReadStream("flip.parquet", bytes.NewReader(bad), record.Options{}, SinkFunc(func(*span.Span) { n++ }))
	if err == nil && n > 3 {
		t.Errorf("corrupt file gave %d spans and no error", n)
	}
}

func FuzzParquet(f *testing.F) {
	f.Add(writeParquet(f, flatRows()))
	f.Add(writeParquet(f, tempoTraces()[:2]))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 1<<20 {
			return
		}
		st, err := ReadStream("f.parquet", bytes.NewReader(in), record.Options{Format: "parquet"}, SinkFunc(func(*span.Span) {}))
		if err == nil && st.Read != st.Used+st.Skipped+st.Filtered {
			t.Fatalf("read %d != used %d + skipped %d", st.Read, st.Used, st.Skipped)
		}
	})
}
