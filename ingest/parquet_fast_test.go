package ingest

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// exportRow is the flat schema as export writes it (the file fast rows
// are for), every column optional so that nulls can fall anywhere.
type exportRow struct {
	TraceID   string   `parquet:"trace_id,optional"`
	SpanID    string   `parquet:"span_id,optional"`
	ParentID  string   `parquet:"parent_id,optional"`
	Service   string   `parquet:"service,optional,dict"`
	Name      string   `parquet:"name,optional,dict"`
	Kind      string   `parquet:"kind,optional,dict"`
	Hop       string   `parquet:"hop,optional,dict"`
	Start     *int64   `parquet:"start,optional"`
	Dur       *int64   `parquet:"duration_ns,optional"`
	Status    string   `parquet:"status,optional,dict"`
	Timeout   *bool    `parquet:"timeout,optional"`
	Code      *int32   `parquet:"code,optional"`
	Attempt   *int32   `parquet:"attempt,optional"`
	TimeoutMs *float64 `parquet:"timeout_ms,optional"`
	Weight    *float64 `parquet:"weight,optional"`
	Peer      string   `parquet:"peer,optional,dict"`
	CodeText  string   `parquet:"code_text,optional,dict"`
}

// exportRows are mostly ordinary spans, with every value the first pass
// must leave to the records somewhere: nulls, negative and overflowing
// times, blank and padded strings, statuses kept as text, codes that
// decide the outcome, attempts, timeouts and weights a setter ignores.
func exportRows(n int, seed uint64) []exportRow {
	r := rand.New(rand.NewPCG(seed, seed))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	odd := func() bool { return r.IntN(12) == 0 }
	rows := make([]exportRow, n)
	for i := range rows {
		w := &rows[i]
		w.TraceID = fmt.Sprintf("%016x", uint64(i/6)*0x9E3779B97F4A7C15)
		if odd() {
			w.TraceID = pick("", " padded ", "t")
		}
		w.SpanID = fmt.Sprintf("%08x", r.Uint32())
		w.ParentID = pick("", "0", fmt.Sprintf("%08x", r.Uint32()))
		w.Service, w.Name, w.Kind, w.Peer = pick("cart", "", "db"), pick("GET /x", "q"), pick("client", "server", "", "3"), pick("", "svc-b")
		w.Hop = pick("a", "b", "c d")
		if odd() {
			w.Hop = pick("", " ", " a ")
		}
		start, dur := int64(1_767_225_600_000_000_000+i*1000), int64(r.IntN(1e9))
		w.Start, w.Dur = &start, &dur
		if odd() {
			w.Start = []*int64{nil, ptr(int64(0)), ptr(int64(-3)), ptr(int64(math.MaxInt64 - 10)), ptr(int64(1_700_000_000_000))}[r.IntN(5)]
		}
		if odd() {
			w.Dur = []*int64{nil, ptr(int64(-1)), ptr(int64(0)), ptr(int64(math.MaxInt64))}[r.IntN(4)]
		}
		w.Status = pick("ok", "error", "unset", "")
		if odd() {
			w.Status = pick("timeout", "503", "bad", " ok ", "DEADLINE_EXCEEDED", "STATUS_CODE_ERROR", "ECONNRESET")
		}
		if r.IntN(3) == 0 {
			w.Timeout = ptr(r.IntN(4) == 0)
		}
		if r.IntN(2) == 0 {
			w.Code = ptr([]int32{0, 200, 408, 429, 503, 504, 600, -1}[r.IntN(8)])
		}
		if r.IntN(2) == 0 {
			w.Attempt = ptr([]int32{0, 1, 2, -1}[r.IntN(4)])
		}
		if r.IntN(2) == 0 {
			w.TimeoutMs = ptr([]float64{0, 3000, 250.5, -1, math.NaN(), 1e13}[r.IntN(6)])
		}
		if r.IntN(2) == 0 {
			w.Weight = ptr([]float64{0, 1, 2.5, -1, math.NaN(), math.Inf(1)}[r.IntN(6)])
		}
		if odd() {
			// Export writes an error kind that is no number (null
			// elsewhere): it may decide the outcome where no status does.
			w.CodeText = pick("ECONNRESET", " ", "ok", "UNAVAILABLE", "")
			if r.IntN(3) == 0 {
				w.Status = ""
			}
		}
	}
	return rows
}

// exportAttrRow is exportRow with columns no span field takes after it,
// the kinds a real export carries (flattened attributes, dedicated
// columns): dictionary and plain text, integers, floats, booleans and
// unannotated bytes, with nulls, blanks and values too long to keep.
type exportAttrRow struct {
	TraceID   string   `parquet:"trace_id,optional"`
	SpanID    string   `parquet:"span_id,optional"`
	ParentID  string   `parquet:"parent_id,optional"`
	Service   string   `parquet:"service,optional,dict"`
	Name      string   `parquet:"name,optional,dict"`
	Kind      string   `parquet:"kind,optional,dict"`
	Hop       string   `parquet:"hop,optional,dict"`
	Start     *int64   `parquet:"start,optional"`
	Dur       *int64   `parquet:"duration_ns,optional"`
	Status    string   `parquet:"status,optional,dict"`
	Timeout   *bool    `parquet:"timeout,optional"`
	Code      *int32   `parquet:"code,optional"`
	Attempt   *int32   `parquet:"attempt,optional"`
	TimeoutMs *float64 `parquet:"timeout_ms,optional"`
	Weight    *float64 `parquet:"weight,optional"`
	Peer      string   `parquet:"peer,optional,dict"`
	CodeText  string   `parquet:"code_text,optional,dict"`

	StartNs int64    `parquet:"start_unix_nano"`
	Route   string   `parquet:"http.route,optional,dict"`
	Zone    string   `parquet:"zone,optional"`
	Version *int32   `parquet:"version,optional"`
	Canary  bool     `parquet:"canary"`
	Load    *float64 `parquet:"load,optional"`
	Ratio   float32  `parquet:"ratio"`
	Build   []byte   `parquet:"build,optional"`
	Region  string   `parquet:"cloud.region,dict"`
	Port    *int64   `parquet:"net.peer.port,optional,dict"`
	Pod     string   `parquet:"k8s.pod.name,optional,dict"` // no field's name (a pod names the service only by --map)
}

func exportAttrRows(n int, seed uint64) []exportAttrRow {
	r := rand.New(rand.NewPCG(seed, seed+1))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	long := strings.Repeat("x", record.MaxAttrValue+1)
	rows := make([]exportAttrRow, n)
	for i, e := range exportRows(n, seed) {
		w := &rows[i]
		w.TraceID, w.SpanID, w.ParentID, w.Service, w.Name, w.Kind, w.Hop = e.TraceID, e.SpanID, e.ParentID, e.Service, e.Name, e.Kind, e.Hop
		w.Start, w.Dur, w.Status, w.Timeout, w.Code, w.Attempt = e.Start, e.Dur, e.Status, e.Timeout, e.Code, e.Attempt
		w.TimeoutMs, w.Weight, w.Peer, w.CodeText = e.TimeoutMs, e.Weight, e.Peer, e.CodeText
		w.StartNs = int64(1_767_225_600_000_000_000 + i*997)
		w.Route = pick("", "/v1/cart/{id}", "/v1/pay", " ")
		w.Zone = pick("", "us-east-1a", "eu-west-1b", "caf\xc3", long, "z\xff")
		if r.IntN(3) > 0 {
			w.Version = ptr(int32(r.IntN(5) - 1))
		}
		w.Canary = r.IntN(7) == 0
		if r.IntN(2) == 0 {
			w.Load = ptr([]float64{0.25, 1e21, -0, math.NaN(), 3}[r.IntN(5)])
		}
		w.Ratio = []float32{0.5, 1, 1.0 / 3}[r.IntN(3)]
		switch r.IntN(4) {
		case 0:
			w.Build = []byte{0xde, 0xad, byte(i)}
		case 1:
			w.Build = []byte("v1.2")
		case 2:
			w.Build = bytes.Repeat([]byte{0xff}, record.MaxAttrValue/2+1) // its hex is too long
		}
		w.Region = pick("eu-west-1", "us-east-1")
		if r.IntN(2) == 0 {
			w.Port = ptr([]int64{8080, 443, 0}[r.IntN(3)])
		}
		w.Pod = pick("", "cart-7d9f8b-x2x7z", "cart-7d9f8b-abcde", " ")
	}
	return rows
}

// briefFork records what its Branches take (the fields a Branch may look
// at) and hands back the spans of every mod-th trace, in rows whose trace
// id is known, and every span without one.
type briefFork struct {
	mu      sync.Mutex
	mod     uint64
	taken   []string
	bare    int // spans taken without their span id (fast rows)
	ordered []string
}

type briefBranch struct {
	f     *briefFork
	taken []string
	bare  int
}

func (f *briefFork) Branch() record.Branch { return &briefBranch{f: f} }
func (f *briefFork) Ordered(sp *span.Span) {
	f.ordered = append(f.ordered, fmt.Sprintf("%s ct=%s attrs=%q", tBrief(*sp), sp.CodeText, attrText(sp)))
}

func (b *briefBranch) Take(sp *span.Span) bool {
	b.taken = append(b.taken, fmt.Sprintf("%s %s %d+%d %s to=%v code=%d att=%d/%v tif=%d w=%g attrs=%q",
		sp.TraceID, sp.Hop, sp.Start, sp.Duration, sp.Status, sp.Timeout, sp.Code, sp.Attempt, sp.AttemptSet, sp.TimeoutInForce, sp.Weight, attrText(sp)))
	if sp.SpanID == "" {
		b.bare++
	}
	return sp.TraceID == "" || record.SpanKey(sp.TraceID, "")%b.f.mod == 0
}

func (b *briefBranch) Close() {
	b.f.mu.Lock()
	b.f.taken = append(b.f.taken, b.taken...)
	b.f.bare += b.bare
	b.f.mu.Unlock()
}

// readFork reads data through a briefFork, with fast rows or without.
func readFork(t testing.TB, data []byte, opt record.Options, mod uint64, fast bool) (string, int) {
	f := &briefFork{mod: mod}
	opt.Borrowed, opt.MaxErrors, opt.Paths.NoFastRows = true, 1000, !fast
	st, err := ReadStream("x.parquet", bytes.NewReader(data), opt, forkSink(f, func(*span.Span) { t.Fatal("emit called with a Fork") }))
	slices.Sort(f.taken)
	var b strings.Builder
	fmt.Fprintf(&b, "err: %v\nread %d used %d skipped %d %v filtered %d ignored %d %v\nnotes %v\n",
		err, st.Read, st.Used, st.Skipped, st.SkippedByReason, st.Filtered, st.Ignored, st.IgnoredByField, st.Notes)
	for _, e := range st.Errors {
		fmt.Fprintln(&b, e)
	}
	fmt.Fprintf(&b, "ordered:\n%s\ntaken:\n%s\n", strings.Join(f.ordered, "\n"), strings.Join(f.taken, "\n"))
	return b.String(), f.bare
}

// Fast rows change nothing: with and without them, the Branches take the
// same spans (as far as a Branch may look), the same spans reach Ordered
// in the same order, and the counts, skips, ignored values, positions and
// notes are the same, whatever the page and row group layout; and the
// first pass does take most rows.
func TestParquetFastRows(t *testing.T) {
	rows := exportRows(6000, 7)
	layouts := map[string][]parquet.WriterOption{
		"one group":        nil,
		"small groups":     {parquet.MaxRowsPerRowGroup(700)},
		"small pages":      {parquet.PageBufferSize(300), parquet.MaxRowsPerRowGroup(2000)},
		"data page v1":     {parquet.DataPageVersion(1), parquet.PageBufferSize(900)},
		"one row a group":  {parquet.MaxRowsPerRowGroup(1)},
		"uneven last page": {parquet.MaxRowsPerRowGroup(1777), parquet.PageBufferSize(1000)},
	}
	attrRows := exportAttrRows(6000, 17)
	// Filters: a row they leave out goes to the records, the rows kept
	// stay fast (exportRows' starts rise by 1 µs a row).
	const t0 = 1_767_225_600_000_000_000
	filters := []record.Options{
		{Since: t0 + 1000*1000, HasSince: true},
		{Until: t0 + 5000*1000, HasUntil: true, Exclude: []record.Window{{From: t0 + 2000*1000, Until: t0 + 2500*1000}}},
		{Hops: regexp.MustCompile(`^(a|c d)$`)},
		{ExcludeHops: regexp.MustCompile(`^b$`), Since: 0, HasSince: true},
	}
	for name, opts := range layouts {
		for _, attrs := range []bool{false, true} {
			data := writeParquet(t, rows, opts...)
			mods, hopBys := []uint64{1, 5, 1 << 40}, []record.Options{{}, {HopBy: "hop"}}
			if name == "small groups" || name == "uneven last page" {
				hopBys = append(hopBys, filters...)
			}
			if attrs {
				name += ", attribute columns"
				data = writeParquet(t, attrRows, opts...)
				mods, hopBys = mods[1:2], hopBys[:1]
			}
			for _, mod := range mods {
				for _, opt := range hopBys {
					fast, bare := readFork(t, data, opt, mod, true)
					slow, bareSlow := readFork(t, data, opt, mod, false)
					if fast != slow {
						t.Errorf("%s, mod %d, %+v: fast rows change the read:\n%s", name, mod, opt, firstDiff(fast, slow))
					}
					least := len(rows) / 3
					if opt.SinceOn() || opt.UntilOn() || opt.Hops != nil || opt.ExcludeHops != nil {
						least = len(rows) / 5 // the rows left out are the records'
					}
					if bare < least || bareSlow > len(rows)/10 {
						t.Errorf("%s, mod %d: %d rows taken by the first pass (%d without it), want most", name, mod, bare, bareSlow)
					}
				}
			}
		}
	}
}

// Options and columns that rule fast rows out leave the read to the
// records: the outputs match, and no row is taken bare.
func TestParquetFastRowsOff(t *testing.T) {
	data := writeParquet(t, exportRows(3000, 8), parquet.MaxRowsPerRowGroup(1000))
	for _, opt := range []record.Options{{HopBy: "service"}, {HopBy: "attr:peer"}} {
		fast, bare := readFork(t, data, opt, 3, true)
		slow, _ := readFork(t, data, opt, 3, false)
		if fast != slow {
			t.Errorf("%+v: %s", opt, firstDiff(fast, slow))
		}
		if bare > 300 {
			t.Errorf("%+v: %d rows taken bare", opt, bare)
		}
	}
	// The wide table's columns (a timestamp start, dictionary durations,
	// binary ids) are not the first pass's.
	wide := writeParquet(t, wideRows(3000, 9), parquet.MaxRowsPerRowGroup(1000))
	fast, _ := readFork(t, wide, record.Options{}, 3, true)
	slow, _ := readFork(t, wide, record.Options{}, 3, false)
	if fast != slow {
		t.Errorf("wide table: %s", firstDiff(fast, slow))
	}
}

// Corrupt files stop at the same row and column, with the same counts,
// with fast rows or without. (What the workers decoded past the error —
// the spans the Branches took, the unit notes — depends on timing either
// way: a read that fails has no report.)
func TestParquetFastRowsCorrupt(t *testing.T) {
	data := writeParquet(t, exportRows(3000, 10), parquet.MaxRowsPerRowGroup(1000), parquet.PageBufferSize(2048))
	r := rand.New(rand.NewPCG(11, 11))
	for range 150 {
		bad := bytes.Clone(data)
		for range 1 + r.IntN(3) {
			bad[4+r.IntN(len(bad)-12)] ^= byte(1 + r.IntN(255))
		}
		fast, _ := readFork(t, bad, record.Options{}, 4, true)
		slow, _ := readFork(t, bad, record.Options{}, 4, false)
		if !strings.HasPrefix(fast, "err: <nil>") {
			fast, slow = stopped(fast), stopped(slow)
		}
		if fast != slow {
			t.Fatalf("corrupt file read differently:\n%s", firstDiff(fast, slow))
		}
	}
}

// stopped is what readFork says of a read that failed, less what depends
// on timing: the error and the counts, and the positioned skips.
func stopped(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:2]
	for _, l := range lines[3:] {
		if l == "ordered:" {
			break
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// attrRow is a flat table with columns no span field takes.
type attrRow struct {
	TraceID string  `parquet:"trace_id"`
	Hop     string  `parquet:"hop,dict"`
	Dur     int64   `parquet:"duration_ns"`
	Pod     string  `parquet:"k8s.pod.name,optional,dict"` // a pod name is no field of the flat schema
	Zone    string  `parquet:"zone,optional"`
	Version int32   `parquet:"version,optional"`
	Canary  bool    `parquet:"canary"`
	Load    float64 `parquet:"load,optional"`
	Build   []byte  `parquet:"build,optional"` // unannotated bytes: hex when not printable
	Tags    []int64 `parquet:"tags,list"`      // not a scalar: no attribute
}

// Flat Parquet gives the columns no span field takes as attributes, in
// column order, values as text; nulls and empty text give none; both the
// batch reader (with and without a Fork, borrowed or owned) and the row
// path give the same; and a table without such columns gives none.
func TestParquetAttrs(t *testing.T) {
	rows := []attrRow{
		{TraceID: "t1", Hop: "a", Dur: 5, Pod: "cart-7d9f-abcde", Zone: "us-east-1a", Version: 12, Canary: true, Load: 0.25, Build: []byte("v1.2"), Tags: []int64{1}},
		{TraceID: "t1", Hop: "b", Dur: 7, Build: []byte{0xde, 0xad}},
		{TraceID: "t2", Hop: "a", Dur: 9, Zone: "", Version: -3, Load: 1e21},
	}
	want := []string{
		"k8s.pod.name=cart-7d9f-abcde zone=us-east-1a version=12 canary=true load=0.25 build=v1.2",
		"canary=false build=dead",
		"version=-3 canary=false load=1e+21",
	}
	for _, opts := range [][]parquet.WriterOption{nil, {parquet.MaxRowsPerRowGroup(1)}} {
		data := writeParquet(t, rows, opts...)
		for _, mode := range []string{"batch", "borrowed", "rows", "fork"} {
			var got []string
			opt := record.Options{Borrowed: mode != "batch", Paths: record.Paths{Rows: mode == "rows"}}
			f := &attrFork{}
			var sink record.Sink = SinkFunc(func(sp *span.Span) { got = append(got, attrText(sp)) })
			if mode == "fork" {
				sink = forkSink(f, sink.Span)
			}
			_, err := ReadStream("a.parquet", bytes.NewReader(data), opt, sink)
			if mode == "fork" {
				got = f.ordered
				slices.Sort(f.taken)
				if w := slices.Sorted(slices.Values(want)); fmt.Sprint(f.taken) != fmt.Sprint(w) {
					t.Errorf("fork: branches took %q, want %q", f.taken, w)
				}
			}
			if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s, %v: got %q, want %q (%v)", mode, opts, got, want, err)
			}
		}
	}
	// The export schema has no other column: no attributes.
	data := writeParquet(t, exportRows(50, 1))
	_, err := ReadStream("e.parquet", bytes.NewReader(data), record.Options{}, SinkFunc(func(sp *span.Span) {
		if sp.Attrs != nil {
			t.Errorf("attributes from the flat schema's own columns: %v", sp.Attrs)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
}

// attrFork records the attributes each Branch sees and hands every span
// back, so that Ordered sees them after the batch is gone.
type attrFork struct {
	mu             sync.Mutex
	taken, ordered []string
}

type attrBranch struct{ f *attrFork }

func (f *attrFork) Branch() record.Branch { return attrBranch{f} }
func (f *attrFork) Ordered(sp *span.Span) {
	f.ordered = append(f.ordered, attrText(sp))
}
func (b attrBranch) Take(sp *span.Span) bool {
	b.f.mu.Lock()
	b.f.taken = append(b.f.taken, attrText(sp))
	b.f.mu.Unlock()
	return true
}
func (b attrBranch) Close() {}

func attrText(sp *span.Span) string {
	var b []string
	for _, a := range sp.Attrs {
		b = append(b, a.Key+"="+a.Value)
	}
	return strings.Join(b, " ")
}

// BenchmarkParquetFastRows reads the flat schema as export writes it
// (200k spans, 64k-row groups) through a Fork whose Branches take every
// span and hand none back, as the analysis does with nearly all spans once
// its sample has overflowed: with fast rows and with the records alone.
func BenchmarkParquetFastRows(b *testing.B) {
	rows := exportRows(200_000, 12)
	for i := range rows { // ordinary spans: the benchmark measures the common row
		r := &rows[i]
		r.TraceID, r.Hop, r.Status = fmt.Sprintf("%032x", uint64(i/11)*0x9E3779B97F4A7C15), []string{"a", "b", "c", "d"}[i%4], "ok"
		start, dur := int64(1_767_225_600_000_000_000+i*1000), int64(1000+i%1_000_000)
		r.Start, r.Dur, r.Attempt, r.TimeoutMs, r.Weight = &start, &dur, ptr(int32(1)), ptr(3000.0), ptr(1.0)
	}
	data := writeParquet(b, rows, parquet.MaxRowsPerRowGroup(64<<10))
	for _, fast := range []bool{true, false} {
		b.Run(map[bool]string{true: "fast", false: "records"}[fast], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f := &countFork{}
				if _, err := ReadStream("b.parquet", bytes.NewReader(data), record.Options{Borrowed: true, Paths: record.Paths{NoFastRows: !fast}}, forkSink(f, func(*span.Span) {})); err != nil || f.n.Load() != int64(len(rows)) {
					b.Fatal(err, f.n.Load())
				}
			}
			b.ReportMetric(float64(b.N)*float64(len(rows))/b.Elapsed().Seconds(), "spans/s")
		})
	}
}

// Pages without nulls are read by position (liteDense, records' dense
// columns) and pages with nulls through where each row's value is: a
// table whose values are null only in a stretch of rows gives both kinds
// side by side, in every column, and fast rows change nothing.
func TestParquetFastRowsDense(t *testing.T) {
	rows := exportRows(5000, 21)
	for i := range rows {
		w := &rows[i]
		if i >= 2000 && i < 2100 {
			continue // the stretch keeps its nulls, blanks and odd values
		}
		start, dur := int64(1_767_225_600_000_000_000+i*1000), int64(1000+i%977*1000)
		w.Start, w.Dur = &start, &dur
		w.TraceID = fmt.Sprintf("%016x", uint64(i/6)*0x9E3779B97F4A7C15)
		w.ParentID = fmt.Sprintf("p%07d", i)
		w.Service, w.Name, w.Kind, w.Peer, w.Hop = "cart", "GET /x", "client", "svc-b", []string{"a", "b", "c d"}[i%3]
		w.Status = []string{"ok", "error", "unset", "timeout"}[i%4]
		w.Timeout, w.Code, w.Attempt = ptr(i%9 == 0), ptr(int32([]int{200, 503, 429, 408}[i%4])), ptr(int32(i%3))
		w.TimeoutMs, w.Weight = ptr(float64(i%5)*250.5), ptr(1+float64(i%2))
		w.CodeText = []string{"ECONNRESET", " "}[i%2]
	}
	attrRows := exportAttrRows(5000, 22)
	for i := range attrRows {
		if i < 2000 || i >= 2100 {
			a, w := &attrRows[i], &rows[i]
			a.TraceID, a.SpanID, a.ParentID, a.Service, a.Name, a.Kind, a.Hop = w.TraceID, w.SpanID, w.ParentID, w.Service, w.Name, w.Kind, w.Hop
			a.Start, a.Dur, a.Status, a.Timeout, a.Code, a.Attempt = w.Start, w.Dur, w.Status, w.Timeout, w.Code, w.Attempt
			a.TimeoutMs, a.Weight, a.Peer, a.CodeText = w.TimeoutMs, w.Weight, w.Peer, w.CodeText
		}
	}
	for name, opts := range map[string][]parquet.WriterOption{
		"one group":   nil,
		"small pages": {parquet.PageBufferSize(500), parquet.MaxRowsPerRowGroup(1500)},
	} {
		for _, data := range [][]byte{writeParquet(t, rows, opts...), writeParquet(t, attrRows, opts...)} {
			for _, mod := range []uint64{1, 5} {
				fast, bare := readFork(t, data, record.Options{}, mod, true)
				slow, _ := readFork(t, data, record.Options{}, mod, false)
				if fast != slow {
					t.Errorf("%s, mod %d: fast rows change the read:\n%s", name, mod, firstDiff(fast, slow))
				}
				if bare < len(rows)/3 {
					t.Errorf("%s, mod %d: %d rows taken by the first pass, want most", name, mod, bare)
				}
			}
		}
	}
}

// FuzzParquetFastRows: whatever the bytes, the fast rows read a file as
// the records alone do (the counts, skips and errors; the spans too when
// the read ends without error), and neither panics.
func FuzzParquetFastRows(f *testing.F) {
	// Small seeds: the fuzzer minimizes every input that widens its
	// coverage, and a large one takes it minutes.
	f.Add(writeParquet(f, exportRows(40, 31), parquet.MaxRowsPerRowGroup(16), parquet.PageBufferSize(128)))
	f.Add(writeParquet(f, exportAttrRows(24, 32), parquet.MaxRowsPerRowGroup(12)))
	f.Add(writeParquet(f, setRows(30, 33, false), parquet.MaxRowsPerRowGroup(10), parquet.PageBufferSize(256)))
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 1<<20 {
			return
		}
		fast, _ := readFork(t, in, record.Options{}, 3, true)
		slow, _ := readFork(t, in, record.Options{}, 3, false)
		if !strings.HasPrefix(slow, "err: <nil>") {
			fast, slow = stopped(fast), stopped(slow)
		}
		if fast != slow {
			t.Fatalf("fast rows read differently:\n%s", firstDiff(fast, slow))
		}
		// And with a Branch that ignores attributes (AttrIgnorer): the
		// columns the fast rows leave off change nothing either.
		ignore := map[string][]string{"*": {"start_unix_nano", "zone", "k8s.pod.name", "net.peer.port"}}
		fast = readIgnore(t, in, record.Options{}, &ignoreFork{mod: 3, ignore: ignore, after: 2}, true)
		slow = readIgnore(t, in, record.Options{}, &ignoreFork{mod: 3, ignore: ignore, after: 2}, false)
		if !strings.HasPrefix(slow, "err: <nil>") {
			fast, slow = strings.Join(strings.SplitN(fast, "\n", 3)[:2], "\n"), strings.Join(strings.SplitN(slow, "\n", 3)[:2], "\n")
		}
		if fast != slow {
			t.Fatalf("fast rows with ignored attributes read differently:\n%s", firstDiff(fast, slow))
		}
		// And with a Fork whose Ordered reads one key (OrderedKeys):
		// the columns left unread change nothing it or Take reads.
		var fw, sw int
		fast = readOrdered(t, in, record.Options{}, orderedFork{&ignoreFork{mod: 3, ignore: ignore, after: 2}, []string{"http.route"}, "", &fw}, true)
		slow = readOrdered(t, in, record.Options{}, orderedFork{&ignoreFork{mod: 3, ignore: ignore, after: 2}, []string{"http.route"}, "", &sw}, false)
		if !strings.HasPrefix(slow, "err: <nil>") {
			fast, slow = strings.Join(strings.SplitN(fast, "\n", 3)[:2], "\n"), strings.Join(strings.SplitN(slow, "\n", 3)[:2], "\n")
		}
		if fast != slow {
			t.Fatalf("fast rows with unread columns read differently:\n%s", firstDiff(fast, slow))
		}
	})
}
