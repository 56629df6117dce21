package ingest

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// arrowTable builds two record batches of a table in a layout other
// writers produce: a dictionary-encoded hop (streams), a µs timestamp start, a float
// duration in ms, binary span ids and a large-string status.
func arrowTable(t testing.TB, file bool) []byte {
	t.Helper()
	mem := memory.NewGoAllocator()
	// The file format allows one dictionary per field, and the builder
	// starts a new one per batch: only streams get a dictionary column.
	var hopType arrow.DataType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int16, ValueType: arrow.BinaryTypes.String}
	if file {
		hopType = arrow.BinaryTypes.String
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "trace_id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "span_id", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "hop", Type: hopType},
		{Name: "start", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "duration_ms", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "status", Type: arrow.BinaryTypes.LargeString, Nullable: true},
		{Name: "code", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "unused", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	}, nil)
	var buf bytes.Buffer
	var w interface {
		Write(arrow.RecordBatch) error
		Close() error
	}
	if file {
		fw, err := ipc.NewFileWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
		if err != nil {
			t.Fatal(err)
		}
		w = fw
	} else {
		w = ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	}
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	add := func(tid string, sid []byte, hop string, startUs int64, ms float64, status string, code int32) {
		f := b.Fields()
		f[0].(*array.StringBuilder).Append(tid)
		if sid == nil {
			f[1].AppendNull()
		} else {
			f[1].(*array.BinaryBuilder).Append(sid)
		}
		switch hb := f[2].(type) {
		case *array.BinaryDictionaryBuilder:
			hb.AppendString(hop)
		case *array.StringBuilder:
			hb.Append(hop)
		}
		f[3].(*array.TimestampBuilder).Append(arrow.Timestamp(startUs))
		if ms < 0 {
			f[4].AppendNull()
		} else {
			f[4].(*array.Float64Builder).Append(ms)
		}
		f[5].(*array.LargeStringBuilder).Append(status)
		if code == 0 {
			f[6].AppendNull()
		} else {
			f[6].(*array.Int32Builder).Append(code)
		}
		f[7].AppendNull()
	}
	flush := func() {
		rec := b.NewRecordBatch()
		defer rec.Release()
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	add("t1", []byte{0x01, 0xff}, "a", 1_000_000, 1.25, "ok", 0)
	add("t1", []byte("abc"), "b", 2_000_000, 3000, "error", 504)
	flush()
	add("t2", nil, "a", 3_000_000, -1, "ok", 0) // no duration: skipped
	add("t2", nil, "c", 4_000_000, 2, "unset", 503)
	flush()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestArrow(t *testing.T) {
	want := []span.Span{
		{TraceID: "t1", SpanID: "01ff", Hop: "a", Start: 1e9, Duration: 1_250_000, Status: span.OK, Weight: 1},
		{TraceID: "t1", SpanID: "abc", Hop: "b", Start: 2e9, Duration: 3e9, Status: span.Error, Timeout: true, Code: 504, Weight: 1},
		// Status unset with an HTTP 503: failed, by the one rule of Source.Emit.
		{TraceID: "t2", Hop: "c", Start: 4e9, Duration: 2e6, Status: span.Error, Code: 503, Weight: 1},
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		file   bool
		gzip   bool
		onDisk bool
	}{
		{"stream", false, false, false},
		{"file on disk", true, false, true},
		{"file on stdin", true, false, false},
		{"gzip file on disk", true, true, true},
		{"gzip stream", false, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			data := arrowTable(t, c.file)
			if c.gzip {
				var gz bytes.Buffer
				zw := gzip.NewWriter(&gz)
				zw.Write(data)
				zw.Close()
				data = gz.Bytes()
			}
			var spans []span.Span
			var st *record.Stats
			var err error
			emit := func(s *span.Span) { spans = append(spans, *s) }
			if c.onDisk {
				path := filepath.Join(dir, "t.arrow")
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
				st, err = Read([]string{path}, record.Options{}, SinkFunc(emit))
			} else {
				st, err = ReadStream("<stdin>", bytes.NewReader(data), record.Options{}, SinkFunc(emit))
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range st.Formats {
				if f != "arrow" {
					t.Fatalf("sniffed %s", f)
				}
			}
			if len(spans) != len(want) || st.Read != 4 || st.SkippedByReason["missing duration"] != 1 {
				t.Fatalf("got %d spans, stats %+v", len(spans), st)
			}
			if got := st.Errors[0].Error(); !strings.HasSuffix(got, ": span 3: missing duration: no duration, duration_ms/us/ns, or start and end") {
				t.Errorf("error %s", got)
			}
			for i := range want {
				if !reflect.DeepEqual(spans[i], want[i]) {
					t.Errorf("span %d:\n got %+v\nwant %+v", i, spans[i], want[i])
				}
			}
		})
	}
}

func TestArrowTruncated(t *testing.T) {
	dir := t.TempDir()
	for _, file := range []bool{true, false} {
		data := arrowTable(t, file)
		for _, n := range []int{len(data) - 3, len(data) / 2, 8} {
			path := filepath.Join(dir, "cut.arrow")
			if err := os.WriteFile(path, data[:n], 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Read([]string{path}, record.Options{Format: "arrow"}, SinkFunc(func(*span.Span) {}))
			if err == nil || !strings.HasPrefix(err.Error(), path+": ") {
				t.Errorf("file=%v cut at %d of %d: got %v, want an error naming the file", file, n, len(data), err)
			}
		}
	}
}

func FuzzArrow(f *testing.F) {
	f.Add(arrowTable(f, true))
	f.Add(arrowTable(f, false))
	f.Add(arrowWithPairs(f))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 1<<20 {
			return
		}
		st, err := ReadStream("f.arrow", bytes.NewReader(in), record.Options{Format: "arrow"}, SinkFunc(func(*span.Span) {}))
		if err == nil && st.Read != st.Used+st.Skipped+st.Filtered {
			t.Fatalf("read %d != used %d + skipped %d", st.Read, st.Used, st.Skipped)
		}
	})
}

// arrowWithPairs is a stream whose attributes column is a list of
// key/value pairs, as export writes it.
func arrowWithPairs(t testing.TB) []byte {
	mem := memory.NewGoAllocator()
	pairs := arrow.ListOf(arrow.StructOf(arrow.Field{Name: "key", Type: arrow.BinaryTypes.String}, arrow.Field{Name: "value", Type: arrow.BinaryTypes.String}))
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "hop", Type: arrow.BinaryTypes.String},
		{Name: "duration_ns", Type: arrow.PrimitiveTypes.Int64},
		{Name: "attributes", Type: pairs, Nullable: true},
		{Name: "labels", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	f := b.Fields()
	for i := range 2 {
		f[0].(*array.StringBuilder).Append("h")
		f[1].(*array.Int64Builder).Append(int64(i + 1))
		lb := f[2].(*array.ListBuilder)
		mb := f[3].(*array.MapBuilder)
		if i == 1 {
			lb.AppendNull()
			mb.AppendNull()
			continue
		}
		lb.Append(true)
		sb := lb.ValueBuilder().(*array.StructBuilder)
		for _, kv := range [][2]string{{"k8s.pod.name", "p-1"}, {"zone", "eu"}, {"zone", "us"}} {
			sb.Append(true)
			sb.FieldBuilder(0).(*array.StringBuilder).Append(kv[0])
			sb.FieldBuilder(1).(*array.StringBuilder).Append(kv[1])
		}
		mb.Append(true)
		mb.KeyBuilder().(*array.StringBuilder).Append("team")
		mb.ItemBuilder().(*array.StringBuilder).Append("core")
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return buf.Bytes()
}

// A list of key/value pairs (export's attributes column) and a map of
// text are attributes under their own keys, in order, duplicates kept.
func TestArrowPairs(t *testing.T) {
	got := readAttrs(t, "in.arrow", string(arrowWithPairs(t)), record.Options{})
	if len(got) != 2 {
		t.Fatalf("%d spans", len(got))
	}
	if want := attrList("k8s.pod.name", "p-1", "zone", "eu", "zone", "us", "team", "core"); !reflect.DeepEqual(got[0].Attrs, want) {
		t.Errorf("attrs %q, want %q", got[0].Attrs, want)
	}
	if got[1].Attrs != nil {
		t.Errorf("null lists gave %q", got[1].Attrs)
	}
}
