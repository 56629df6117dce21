package ingest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/flat"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// wideRow exercises every way a flat table may spell a column: optional
// and required, dictionary and plain, int32 and int64, float and double,
// binary and text ids, a fixed-length binary id, status words and codes,
// kinds in OTLP spelling, blank and space-padded strings.
type wideRow struct {
	TraceID  string    `parquet:"trace_id,optional"`
	SpanID   []byte    `parquet:"span_id,optional"`
	ParentID [8]byte   `parquet:"parent_id"`
	Service  string    `parquet:"service,optional,dict"`
	Name     string    `parquet:"name,optional"`
	Kind     string    `parquet:"kind,optional,dict"`
	Hop      string    `parquet:"hop,optional,dict"`
	Ts       time.Time `parquet:"start,optional,timestamp(microsecond)"`
	Dur      int64     `parquet:"duration_ns,optional,dict"`
	Status   string    `parquet:"status,optional,dict"`
	Timeout  bool      `parquet:"timeout,optional"`
	Code     int32     `parquet:"code,optional,dict"`
	Attempt  int64     `parquet:"attempt,optional"`
	Tmo      float32   `parquet:"timeout_ms,optional"`
	Weight   float64   `parquet:"weight,optional,dict"`
	Peer     string    `parquet:"peer,optional"`
}

func wideRows(n int, seed uint64) []wideRow {
	r := rand.New(rand.NewPCG(seed, seed))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	rows := make([]wideRow, n)
	for i := range rows {
		w := &rows[i]
		w.TraceID = pick(fmt.Sprintf("%016x", r.Uint64()%50), "", " padded ", fmt.Sprintf("t%d", i/7))
		if r.IntN(4) > 0 {
			w.SpanID = []byte(fmt.Sprintf("%08x", r.Uint32()))
			if r.IntN(3) == 0 {
				w.SpanID = []byte{byte(i), 0xff, 0x01, byte(i >> 8)} // binary: hex
			}
		}
		if r.IntN(3) > 0 {
			for j := range w.ParentID {
				w.ParentID[j] = byte(r.Uint32())
			}
		}
		w.Service = pick("cart", "", " pay ", "db")
		w.Name = pick("GET /x", "", "PUT", "q")
		w.Kind = pick("client", "SPAN_KIND_SERVER", "", "3", "weird")
		w.Hop = pick("a", "b", "", "c d")
		if r.IntN(5) > 0 {
			w.Ts = time.Unix(0, 1_767_225_600_000_000_000+int64(r.IntN(1e6))*1000).UTC()
		}
		w.Dur = []int64{0, -5, 1_000_000, 3_000_000_000, int64(r.IntN(1e9))}[r.IntN(5)]
		w.Status = pick("ok", "error", "", "STATUS_CODE_OK", "timeout", "503", "bad", " ok ")
		w.Timeout = r.IntN(10) == 0
		w.Code = []int32{0, 200, 504, 429, 503, 4}[r.IntN(6)]
		w.Attempt = []int64{0, 1, 2, -1}[r.IntN(4)]
		w.Tmo = []float32{0, 3000, 250.5, -1}[r.IntN(4)]
		w.Weight = []float64{0, 1, 2.5, -3}[r.IntN(4)]
		w.Peer = pick("", "svc-b", "10.0.0.1:80")
	}
	return rows
}

// readBoth reads data with the batch reader and with the row path.
func readBoth(t *testing.T, data []byte, opt record.Options) (batch, row string) {
	t.Helper()
	read := func(rp bool) string {
		opt := opt
		opt.Paths.Rows = rp
		var b strings.Builder
		st, err := ReadStream("w.parquet", bytes.NewReader(data), opt, SinkFunc(func(s *span.Span) {
			b.WriteString(tBrief(*s)) // copies: the ids may be borrowed
			b.WriteByte('\n')
		}))
		if st != nil {
			fmt.Fprintf(&b, "read %d used %d skipped %d %v\n", st.Read, st.Used, st.Skipped, st.SkippedByReason)
			for _, e := range st.Errors {
				fmt.Fprintln(&b, e)
			}
		}
		fmt.Fprintln(&b, "err:", err)
		return b.String()
	}
	return read(false), read(true)
}

// The batch reader gives exactly what the row path gives: the same spans
// in the same order, the same skips with the same positions and details,
// whatever the page and row group layout.
func TestParquetBatchMatchesRows(t *testing.T) {
	rows := wideRows(3000, 1)
	layouts := map[string][]parquet.WriterOption{
		"one group":        nil,
		"small groups":     {parquet.MaxRowsPerRowGroup(100)},
		"small pages":      {parquet.PageBufferSize(256), parquet.MaxRowsPerRowGroup(1000)},
		"data page v1":     {parquet.DataPageVersion(1), parquet.PageBufferSize(512)},
		"one row a group":  {parquet.MaxRowsPerRowGroup(1)},
		"uneven last page": {parquet.MaxRowsPerRowGroup(777), parquet.PageBufferSize(1000)},
	}
	for name, opts := range layouts {
		data := writeParquet(t, rows, opts...)
		for _, opt := range []record.Options{{}, {Borrowed: true, MaxErrors: 1000}, {HopBy: "attr:peer"}, {HopBy: "service+name"}} {
			batch, row := readBoth(t, data, opt)
			if batch != row {
				t.Errorf("%s, %+v: batch and row paths differ:\n%s", name, opt, firstDiff(batch, row))
			}
			if !strings.Contains(batch, "err: <nil>") || !strings.Contains(batch, "used") {
				t.Errorf("%s: unexpected read: %s", name, batch[max(0, len(batch)-300):])
			}
		}
	}
	// The seed's flat rows and the --map table too.
	batch, row := readBoth(t, writeParquet(t, flatRows(), parquet.MaxRowsPerRowGroup(2)), record.Options{})
	if batch != row {
		t.Errorf("flat rows differ:\n%s", firstDiff(batch, row))
	}
}

// Corrupt files: the batch reader never panics, keeps read = used +
// skipped, and names a row and a column when it stops.
func TestParquetBatchCorrupt(t *testing.T) {
	data := writeParquet(t, wideRows(2000, 2), parquet.MaxRowsPerRowGroup(500), parquet.PageBufferSize(2048))
	r := rand.New(rand.NewPCG(3, 3))
	errs := 0
	for range 300 {
		bad := bytes.Clone(data)
		for range 1 + r.IntN(4) {
			bad[4+r.IntN(len(bad)-12)] ^= byte(1 + r.IntN(255))
		}
		st, err := ReadStream("c.parquet", bytes.NewReader(bad), record.Options{}, SinkFunc(func(*span.Span) {}))
		if st.Read != st.Used+st.Skipped+st.Filtered {
			t.Fatalf("read %d != used %d + skipped %d", st.Read, st.Used, st.Skipped)
		}
		if err != nil {
			errs++
			if !strings.HasPrefix(err.Error(), "c.parquet: ") {
				t.Errorf("error does not name the file: %v", err)
			}
		}
	}
	if errs == 0 {
		t.Error("300 corrupted files and not one error")
	}
}

func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\nbatch %s\n  row %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths %d vs %d", len(la), len(lb))
}

// testFork takes every span on the decoding goroutines and asks to see
// every mod-th one again, as the analysis does with its trace sample.
type testFork struct {
	mu      sync.Mutex
	mod     int64
	taken   int
	ordered []string
}

type testBranch struct {
	f *testFork
	n int
}

func (f *testFork) Branch() record.Branch     { return &testBranch{f: f} }
func (f *testFork) Ordered(sp *span.Span)     { f.ordered = append(f.ordered, tBrief(*sp)) }
func (b *testBranch) Take(sp *span.Span) bool { b.n++; return sp.Start%b.f.mod == 0 }
func (b *testBranch) Close()                  { b.f.mu.Lock(); b.f.taken += b.n; b.f.mu.Unlock() }

// With a Fork, the workers take every span that passes Emit's checks, the
// counts and skips are those of the plain path, and the spans asked for
// again reach Ordered in row order, with their ids intact: small row
// groups, and row groups of several batches and chunks, where a chunk is
// cut on the spans handed back (every one, or every third) and the ids of
// a batch are reused by the next; and small pages, so that a batch's ids
// lie in several pages of a column.
func TestParquetBatchFork(t *testing.T) {
	for _, rg := range []int{300, 7000, -7000} {
		opts := []parquet.WriterOption{parquet.MaxRowsPerRowGroup(int64(max(rg, -rg)))}
		if rg < 0 {
			opts = append(opts, parquet.PageBufferSize(1500))
		}
		data := writeParquet(t, wideRows(15000, 4), opts...)
		for _, mod := range []int64{3, 1} {
			var want []string
			plain, err := ReadStream("f.parquet", bytes.NewReader(data), record.Options{Borrowed: true, MaxErrors: 100}, SinkFunc(func(sp *span.Span) {
				if sp.Start%mod == 0 {
					want = append(want, tBrief(*sp))
				}
			}))
			if err != nil {
				t.Fatal(err)
			}
			f := &testFork{mod: mod}
			st, err := ReadStream("f.parquet", bytes.NewReader(data), record.Options{Borrowed: true, MaxErrors: 100}, forkSink(f, func(*span.Span) {
				t.Fatal("emit called with a Fork")
			}))
			if err != nil {
				t.Fatal(err)
			}
			if st.Read != plain.Read || st.Used != plain.Used || st.Skipped != plain.Skipped || int64(f.taken) != plain.Used {
				t.Errorf("rows %d, mod %d: fork: read %d used %d skipped %d taken %d; plain: read %d used %d skipped %d",
					rg, mod, st.Read, st.Used, st.Skipped, f.taken, plain.Read, plain.Used, plain.Skipped)
			}
			if fmt.Sprint(st.Errors) != fmt.Sprint(plain.Errors) {
				t.Errorf("rows %d, mod %d: errors differ:\n%v\n%v", rg, mod, st.Errors, plain.Errors)
			}
			if got, w := strings.Join(f.ordered, "\n"), strings.Join(want, "\n"); len(want) == 0 || got != w {
				t.Errorf("rows %d, mod %d: ordered: %d spans, want %d in row order; %s", rg, mod, len(f.ordered), len(want), firstDiff(got, w))
			}
		}
	}
}

// BenchmarkParquetPaths compares the batch reader with the row path on
// the same table (BenchmarkParquet in bench_test.go guards the batch
// reader alone).
func BenchmarkParquetPaths(b *testing.B) {
	rows := wideRows(200_000, 5)
	for i := range rows { // valid rows: the benchmark measures spans, not skips
		rows[i].Dur, rows[i].Attempt, rows[i].Tmo, rows[i].Weight = int64(i), 1, 3000, 1
	}
	data := writeParquet(b, rows, parquet.MaxRowsPerRowGroup(50_000))
	for _, rp := range []bool{false, true} {
		name := map[bool]string{false: "batch", true: "rows"}[rp]
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := ReadStream("b.parquet", bytes.NewReader(data), record.Options{Borrowed: true, Paths: record.Paths{Rows: rp}}, SinkFunc(func(*span.Span) {})); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*float64(len(rows))/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// countDefined agrees with a byte-by-byte count on every length around
// the eight-byte step, with nulls anywhere and with out-of-range levels
// (a corrupt page) before, inside and after a step.
func TestCountDefined(t *testing.T) {
	for n := range 40 {
		for _, maxDef := range []byte{1, 2} {
			for seed := range 20 {
				defs := make([]byte, n)
				for i := range defs {
					defs[i] = byte((i*7 + seed*13) % 3 % 2)
					if seed%5 == 4 && i == seed%(n+1) {
						defs[i] = 2
					}
				}
				want := 0
				for _, d := range defs {
					if d == maxDef {
						want++
					}
				}
				if got := flat.CountDefined(defs, maxDef); got != want {
					t.Errorf("%v (max %d): %d, want %d", defs, maxDef, got, want)
				}
			}
		}
	}
}
