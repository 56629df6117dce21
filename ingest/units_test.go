package ingest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// nezhaCSV is a CSV export like Nezha's TrainTicket traces: start and end
// in ns, and a Duration column of the same spans in whole microseconds.
func nezhaCSV(n int) string {
	rng := rand.New(rand.NewPCG(4, 4))
	var b strings.Builder
	b.WriteString("TraceID,SpanID,OperationName,StartTimeUnixNano,EndTimeUnixNano,Duration\n")
	t0 := int64(1_700_000_000_000_000_000)
	for i := range n {
		start := t0 + int64(i)*1_000_000_000
		d := int64(200_000 + rng.IntN(400_000_000)) // 0.2 ms to 400 ms
		fmt.Fprintf(&b, "t%d,s%d,GET /x,%d,%d,%d\n", i, i, start, start+d, d/1000)
	}
	return b.String()
}

// --map naming a microsecond column as nanoseconds or as milliseconds:
// the start and end settle the unit, the durations are read in it, and a
// note says so and how to name it.
func TestMapUnitChecked(t *testing.T) {
	in := nezhaCSV(300)
	for _, c := range []struct {
		maps string
		note string
	}{
		{"duration=Duration", `n.csv: duration field "Duration" looks like microseconds, not nanoseconds (read so, its values match end − start in 100% of 300 records`},
		{"duration_ms=Duration", `duration field "Duration" looks like microseconds, not milliseconds (read so, its values match end − start in 100% of`},
		{"duration_ns=Duration", `looks like microseconds`},
	} {
		m, err := ParseMap([]string{"trace_id=TraceID,span_id=SpanID,name=OperationName,start=StartTimeUnixNano,end=EndTimeUnixNano," + c.maps})
		if err != nil {
			t.Fatal(err)
		}
		spans, st := readBytes(t, "n.csv", []byte(in), record.Options{Map: m, Names: angled})
		if len(spans) != 300 || st.Skipped != 0 {
			t.Fatalf("%s: %d spans, skipped %v", c.maps, len(spans), st.SkippedByReason)
		}
		notes := strings.Join(st.Notes, "\n")
		if !strings.Contains(notes, c.note) || !strings.Contains(notes, "read as microseconds: the start and end settle it (name the unit with <Map> duration_us=Duration)") {
			t.Errorf("%s: notes %q", c.maps, notes)
		}
		// Read as µs: within the microsecond the export truncated to.
		for _, sp := range spans[:20] {
			if sp.Duration < 0 || sp.Duration > 400_200_000 || sp.Duration%1000 != 0 {
				t.Errorf("%s: duration %d ns", c.maps, sp.Duration)
				break
			}
		}
	}
	// Named right: nothing to say.
	m, _ := ParseMap([]string{"start=StartTimeUnixNano,end=EndTimeUnixNano,duration_us=Duration"})
	_, st := readBytes(t, "n.csv", []byte(in), record.Options{Map: m})
	if len(st.Notes) != 0 {
		t.Errorf("notes %q", st.Notes)
	}
}

// The same check on JSON lines, where the first lines decide; too few
// records or no clear verdict: a note only, the durations read as named.
func TestMapUnitJSONL(t *testing.T) {
	line := func(i int, d int64) string {
		s := int64(1_700_000_000_000_000_000) + int64(i)*1e9
		return fmt.Sprintf(`{"hop":"h","start":%d,"end":%d,"lat":%d}`+"\n", s, s+d*1000, d)
	}
	var b strings.Builder
	for i := range 100 {
		b.WriteString(line(i, int64(5000+i*37)))
	}
	m, _ := ParseMap([]string{"duration=lat"})
	spans, st := readString(t, b.String(), record.Options{Map: m})
	if spans[1].Duration != 5037_000 || !strings.Contains(strings.Join(st.Notes, "\n"), `read as microseconds`) {
		t.Errorf("duration %d, notes %q", spans[1].Duration, st.Notes)
	}
	// Ten records only: said, not acted on.
	var few strings.Builder
	for i := range 10 {
		few.WriteString(line(i, int64(5000+i)))
	}
	spans, st = readString(t, few.String(), record.Options{Map: m, Names: angled})
	notes := strings.Join(st.Notes, "\n")
	if spans[1].Duration != 5001 || !strings.Contains(notes, `looks like microseconds`) || !strings.Contains(notes, "name it with <Map> duration_us=lat") {
		t.Errorf("duration %d, notes %q", spans[1].Duration, notes)
	}
}

// Parquet is checked on the records read: a note, no change.
func TestMapUnitParquet(t *testing.T) {
	type row struct {
		Start int64 `parquet:"start"`
		End   int64 `parquet:"end"`
		Dur   int64 `parquet:"duration_ns"`
		Hop   string
	}
	var rows []row
	for i := range 50 {
		s := int64(1_700_000_000_000_000_000) + int64(i)*1e9
		rows = append(rows, row{s, s + int64(i+1)*1_000_000, int64(i+1) * 1000, "h"})
	}
	for _, rp := range []bool{false, true} {
		_, st := readBytes(t, "u.parquet", writeParquet(t, rows), record.Options{Paths: record.Paths{Rows: rp}})
		if notes := strings.Join(st.Notes, "\n"); !strings.Contains(notes, `duration field "duration_ns" looks like microseconds`) {
			t.Errorf("row path %v: notes %q", rp, notes)
		}
	}
}

// Start times in several units in one file, or all in a unit their field
// does not name, are noted.
func TestStartUnits(t *testing.T) {
	var mixed strings.Builder
	for i := range 40 {
		s := int64(1_700_000_000_000) + int64(i)*1000 // ms
		if i%2 == 0 {
			s *= 1_000_000 // ns
		}
		fmt.Fprintf(&mixed, `{"hop":"h","start":%d,"duration_ms":1}`+"\n", s)
	}
	var ms strings.Builder
	for i := range 40 {
		fmt.Fprintf(&ms, `{"hop":"h","start":%d,"duration_ms":1}`+"\n", int64(1_700_000_000_000)+int64(i))
	}
	for _, c := range []struct{ in, note string }{
		{mixed.String(), "start times are in mixed units (20 like nanoseconds, 20 like milliseconds"},
		{ms.String(), "start times fall in 1970 as read (40 spans): their unit looks 10⁶× larger"},
	} {
		for _, format := range []string{"jsonl", "csv"} {
			in := c.in
			if format == "csv" {
				in = "hop,start,duration_ms\n" + strings.NewReplacer(`{"hop":"`, "", `","start":`, ",", `,"duration_ms":`, ",", "}", "").Replace(in)
			}
			var n int
			st, err := ReadStream("s."+format, strings.NewReader(in), record.Options{Format: format}, SinkFunc(func(*span.Span) { n++ }))
			if err != nil || n != 40 || !strings.Contains(strings.Join(st.Notes, "\n"), c.note) {
				t.Errorf("%s: %d spans, notes %q, err %v", format, n, st.Notes, err)
			}
		}
	}
}
