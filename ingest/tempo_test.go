package ingest

import (
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// TestTempoBlock reads the block (with its meta.json, so that dedicated
// columns are named) and checks each span against the model.
func TestTempoBlock(t *testing.T) {
	blk := writeBlock(t, t.TempDir(), writeParquet(t, tempoTraces(), parquet.MaxRowsPerRowGroup(2)), tmMetaJSON)
	spans, st := readPath(t, filepath.Join(blk, "data.parquet"), record.Options{})
	if st.Skipped != 0 || len(spans) != 9 {
		t.Fatalf("%d spans, skipped %v", len(spans), st.SkippedByReason)
	}
	t0 := hex.EncodeToString(append(make([]byte, 8), id(7, 8)...))
	t1 := hex.EncodeToString(id(101, 16))
	h := func(n int) string { return hex.EncodeToString(id(n, 8)) }
	const b = 1_700_000_000_000_000_000
	want := []string{
		fmt.Sprintf("%s %s< gateway|GET /|server %d+50000000 ok to=false code=200 att=0 peer= w=1 hop=gateway GET /", t0, h(1), b),
		fmt.Sprintf("%s %s<%s api|call|client %d+20000001 error to=true code=504 att=0 peer=db w=1 hop=api call (client)", t0, h(2), h(1), b+1000),
		fmt.Sprintf("%s %s<%s api|call|client %d+9000000 ok to=false code=200 att=2 peer=db.local w=1 hop=api call (client)", t0, h(3), h(1), b+21_000_000),
		fmt.Sprintf("%s %s<%s api|fetch|client %d+30000000 error to=true code=0 att=0 peer= w=4 hop=api fetch (client)", t0, h(4), h(1), b+2000),
		fmt.Sprintf("%s %s<%s api|q|internal %d+1000000 error to=true code=0 att=3 peer= w=1 hop=api q", t0, h(5), h(1), b+3000),
		fmt.Sprintf("%s %s<%s api|rpc|client %d+2000000 error to=true code=4 att=0 peer= w=1 hop=api rpc (client)", t0, h(6), h(1), b+4000),
		fmt.Sprintf("%s %s< gateway|GET /|server %d+40000000 unset to=false code=0 att=0 peer= w=2 hop=gateway GET /", t1, h(11), b+1_000_000_000),
		fmt.Sprintf("%s %s<%s gateway|bare| %d+5 unset to=false code=0 att=0 peer= w=1 hop=gateway bare", t1, h(12), h(11), b+1_000_000_010),
		fmt.Sprintf("%s %s<%s gateway|late|consumer %d+7 error to=true code=0 att=0 peer= w=1 hop=gateway late (consumer)", t1, h(13), h(11), b+1_000_000_020),
	}
	if got := tBriefs(spans); got != strings.Join(want, "\n") {
		t.Errorf("spans:\n got %s\nwant %s", strings.ReplaceAll(got, "\n", "\n     "), strings.Join(want, "\n     "))
	}
	reqs, probs := span.Assemble(spans)
	if len(reqs) != 2 || probs.Orphans != 0 {
		t.Errorf("requests %d orphans %d", len(reqs), probs.Orphans)
	}
}

// The same traces read identically from vParquet4, vParquet3 and OTLP
// JSON, under several --hop-by modes: Tempo's attribute homes (own
// columns, dedicated columns, generic lists) are all found.
func TestTempoMatchesOTLP(t *testing.T) {
	var doc strings.Builder
	for _, tr := range tmTraces() {
		doc.WriteString(tr.otlp() + "\n")
	}
	dir := t.TempDir()
	b4 := writeBlock(t, filepath.Join(dir, "v4"), writeParquet(t, tempoTraces()), tmMetaJSON)
	b3 := writeBlock(t, filepath.Join(dir, "v3"), writeParquet(t, tempoTraces3(), parquet.MaxRowsPerRowGroup(1)),
		strings.Replace(tmMetaJSON, "vParquet4", "vParquet3", 1))
	for _, hopBy := range []string{"", "service", "peer", "attr:tier", "attr:cluster", "attr:http.method", "attr:deployment.env", "attr:peer.service", "attr:k"} {
		t.Run(hopBy, func(t *testing.T) {
			opt := record.Options{HopBy: hopBy}
			want, wst := readBytes(t, "in.json", []byte(doc.String()), record.Options{HopBy: hopBy, Format: "otlp"})
			for _, blk := range []string{b4, b3} {
				got, st := readPath(t, filepath.Join(blk, "data.parquet"), opt)
				if g, w := tBriefs(got), tBriefs(want); g != w {
					t.Errorf("%s:\n got %s\nwant %s", blk, strings.ReplaceAll(g, "\n", "\n     "), strings.ReplaceAll(w, "\n", "\n     "))
				}
				if fmt.Sprint(st.SkippedByReason) != fmt.Sprint(wst.SkippedByReason) {
					t.Errorf("%s: skipped %v, OTLP %v", blk, st.SkippedByReason, wst.SkippedByReason)
				}
			}
		})
	}
}

// Without its meta.json, a block's dedicated columns cannot be named: the
// spans still read, without what those columns held.
func TestTempoWithoutMeta(t *testing.T) {
	spans, st := readBytes(t, "data.parquet", writeParquet(t, tempoTraces()), record.Options{})
	if st.Skipped != 0 || len(spans) != 9 {
		t.Fatalf("%d spans, skipped %v", len(spans), st.SkippedByReason)
	}
	if spans[1].Peer != "" || !spans[1].Timeout || spans[4].Timeout || spans[4].Attempt != 3 || spans[2].Peer != "db.local" {
		t.Errorf("without meta: %s\n%s\n%s", tBrief(spans[1]), tBrief(spans[2]), tBrief(spans[4]))
	}
}

// A lean block (optional columns missing, an extra one) still reads.
func TestTempoMissingAndExtraColumns(t *testing.T) {
	type leanSpan struct {
		SpanID            []byte `parquet:","`
		ParentSpanID      []byte `parquet:","`
		Name              string `parquet:",snappy,dict"`
		Kind              int    `parquet:",delta"`
		StartTimeUnixNano uint64 `parquet:",delta"`
		DurationNano      uint64 `parquet:",delta"`
		StatusCode        int    `parquet:",delta"`
		Extra             string `parquet:",snappy"` // no Tempo version has it
	}
	type leanSS struct {
		Spans []leanSpan `parquet:",list"`
	}
	type leanRes struct{ ServiceName string }
	type leanRS struct {
		Resource   leanRes
		ScopeSpans []leanSS `parquet:"ss,list"`
	}
	type leanTrace struct {
		TraceIDText   string
		ResourceSpans []leanRS `parquet:"rs,list"`
	}
	var rows []leanTrace
	for _, tr := range tempoTraces() {
		lt := leanTrace{TraceIDText: tr.TraceIDText}
		for _, rs := range tr.ResourceSpans {
			lrs := leanRS{Resource: leanRes{rs.Resource.ServiceName}}
			for _, ss := range rs.ScopeSpans {
				var lss leanSS
				for _, s := range ss.Spans {
					lss.Spans = append(lss.Spans, leanSpan{SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, Name: s.Name, Kind: s.Kind,
						StartTimeUnixNano: s.StartTimeUnixNano, DurationNano: s.DurationNano, StatusCode: s.StatusCode, Extra: "x"})
				}
				lrs.ScopeSpans = append(lrs.ScopeSpans, lss)
			}
			lt.ResourceSpans = append(lt.ResourceSpans, lrs)
		}
		rows = append(rows, lt)
	}
	spans, _ := readBytes(t, "lean.parquet", writeParquet(t, rows), record.Options{})
	if len(spans) != 9 {
		t.Fatalf("got %d spans", len(spans))
	}
	for _, s := range spans {
		if s.Code != 0 || s.Attempt != 0 || s.Peer != "" {
			t.Errorf("no attribute columns, yet %s", tBrief(s))
		}
	}
	// TraceIDText alone: the trimmed leading zeros are restored.
	if spans[0].TraceID != hex.EncodeToString(tempoTraces()[0].TraceID) || spans[1].Status != span.Error || spans[1].Service != "api" {
		t.Errorf("from TraceIDText and StatusCode: %s", tBrief(spans[1]))
	}
}

// The legacy vParquet (v1) layout: rs.ils.Spans with ID and Start/End.
func TestTempoVParquet1(t *testing.T) {
	type attr1 struct {
		Key      string `parquet:",dict"`
		Value    *string
		ValueInt *int64
	}
	type span1 struct {
		ID             []byte `parquet:","`
		Name           string `parquet:",dict"`
		Kind           int    `parquet:",dict"`
		ParentSpanID   []byte `parquet:","`
		StartUnixNanos uint64 `parquet:",delta"`
		EndUnixNanos   uint64 `parquet:",delta"`
		StatusCode     int    `parquet:",delta"`
		Attrs          []attr1
		HttpStatusCode *int64 `parquet:",snappy,optional"`
	}
	type ils struct{ Spans []span1 }
	type rs struct {
		Resource struct{ ServiceName string }
		Ils      []ils `parquet:"ils"`
	}
	type trace struct {
		TraceID []byte
		Rs      []rs `parquet:"rs"`
	}
	tr := trace{TraceID: id(7, 16)}
	r := rs{Ils: []ils{{Spans: []span1{
		{ID: id(1, 8), Name: "op", Kind: 1, StartUnixNanos: 100, EndUnixNanos: 350, HttpStatusCode: ptr(int64(504)),
			Attrs: []attr1{{Key: "retry.attempt", ValueInt: ptr(int64(2))}, {Key: "peer.service", Value: ptr("x")}}},
		{ID: id(2, 8), Name: "op", StartUnixNanos: 400, EndUnixNanos: 300},
	}}}}
	r.Resource.ServiceName = "svc"
	tr.Rs = []rs{r}
	spans, st := readBytes(t, "v1.parquet", writeParquet(t, []trace{tr}), record.Options{})
	if len(spans) != 1 || spans[0].Duration != 250 || spans[0].Hop != "svc op" || spans[0].Kind != "internal" ||
		spans[0].Attempt != 2 || spans[0].Peer != "x" || !spans[0].Timeout || spans[0].Code != 504 {
		t.Fatalf("got %+v", spans)
	}
	if st.SkippedByReason[record.ReasonEndBeforeStart] != 1 {
		t.Errorf("skipped %v", st.SkippedByReason)
	}
}

// A bad attribute value costs the span only that value: the span is
// kept, and the value counted with its position.
func TestTempoBadAttribute(t *testing.T) {
	tr := tmTraces()[1]
	sp := &tr.rs[2].scopes[1][1]
	sp.attrs = []tmAttr{{"http.request.resend_count", int64(-1)}}
	spans, st := readBytes(t, "data.parquet", writeParquet(t, []t4Trace{tr.v4()}), record.Options{})
	if len(spans) != 3 || st.Skipped != 0 || st.Ignored != 1 {
		t.Fatalf("%d spans, skipped %v, ignored %v", len(spans), st.SkippedByReason, st.IgnoredByField)
	}
	if e := st.IgnoredExamples[0].Error(); !strings.Contains(e, "data.parquet: span 2: attempt: http.request.resend_count") {
		t.Errorf("error %q", e)
	}
}

// tempoFixtureTraces are the traces of testdata/tempo-vparquet4.parquet:
// those of TestTempoBlock without peer attributes, because the file also
// feeds export's round trips and the flat schema has no peer column yet.
func tempoFixtureTraces() []t4Trace {
	var out []t4Trace
	for _, tr := range tmTraces() {
		for _, rs := range tr.rs {
			for _, ss := range rs.scopes {
				for i := range ss {
					var keep []tmAttr
					for _, a := range ss[i].attrs {
						if a.k != "server.address" && a.k != "peer.service" {
							keep = append(keep, a)
						}
					}
					ss[i].attrs = keep
				}
			}
		}
		out = append(out, tr.v4())
	}
	return out
}

func TestTempoFixture(t *testing.T) {
	// The block in testdata is the one TestTempoBlock builds (see
	// tempoFixtureTraces), kept as a file so the command line, the
	// exporters and fuzzing can use it; -update-fixtures rewrites it.
	path := filepath.Join("testdata", "tempo-vparquet4.parquet")
	data := writeParquet(t, tempoFixtureTraces(), parquet.MaxRowsPerRowGroup(2))
	if *updateFixtures {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := readBytes(t, path, old, record.Options{})
	want, _ := readBytes(t, path, data, record.Options{})
	if tBriefs(got) != tBriefs(want) {
		t.Fatalf("%s is stale (run go test -run TestTempoFixture -update-fixtures)", path)
	}
}

// Pointed at a local Tempo store (tenant folder with a live block, a
// compacted block and the tenant index), tailscope reads the live block's
// data.parquet, with dedicated columns named by its meta.json, and notes
// what it passed over; files outside blocks are still read, and so are
// files that are no part of a block inside a block's folder (a log someone
// put there): every file is read or listed as passed over, with why.
func TestTempoBlockDirectory(t *testing.T) {
	dir := t.TempDir()
	data := writeParquet(t, tempoTraces())
	blk := writeBlock(t, dir, data, tmMetaJSON)
	old := filepath.Join(dir, "single-tenant", "0a0a0a0a-0000-4000-8000-000000000000")
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	for n, b := range map[string][]byte{"data.parquet": data, "meta.compacted.json": []byte(tmMetaJSON), "bloom-0": {1}} {
		if err := os.WriteFile(filepath.Join(old, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	other := filepath.Join(dir, "other.jsonl")
	inBlock := filepath.Join(blk, "extra-spans.jsonl")
	inOld := filepath.Join(old, "copied.jsonl")
	line := `{"hop":"x","duration_ms":5}` + "\n"
	for p, b := range map[string]string{filepath.Join(dir, "single-tenant", "index.json.gz"): "\x1f\x8b", other: line, inBlock: line, inOld: line} {
		if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, root := range []string{dir, filepath.Join(dir, "single-tenant"), blk} {
		spans, st := readPath(t, root, record.Options{})
		wantFiles := []string{filepath.Join(blk, "data.parquet"), inBlock}
		wantPassed := 3 // meta.json, bloom-0, index
		if root != blk {
			wantFiles = []string{inOld, filepath.Join(blk, "data.parquet"), inBlock}
			wantPassed += 4 // the compacted block's data, meta and bloom filter; the tenant index
		}
		if root == dir {
			wantFiles = append([]string{other}, wantFiles...)
		}
		if fmt.Sprint(st.Files) != fmt.Sprint(wantFiles) || st.Skipped != 0 {
			t.Errorf("%s: files %v, skipped %v", root, st.Files, st.SkippedByReason)
		}
		if len(spans) != 9+len(wantFiles)-1 {
			t.Errorf("%s: %d spans", root, len(spans))
		}
		var peer bool
		for _, sp := range spans {
			peer = peer || sp.Peer == "db"
		}
		if !peer {
			t.Errorf("%s: the dedicated peer.service column not read", root)
		}
		strict := 0
		for _, p := range st.Passed {
			if p.Strict {
				strict++
				if p.File != filepath.Join(old, "data.parquet") || !strings.Contains(p.Reason, "compacted") {
					t.Errorf("%s: %s passed over as %q (strict)", root, p.File, p.Reason)
				}
			}
		}
		if len(st.Passed) != wantPassed || strict != map[bool]int{true: 0, false: 1}[root == blk] {
			t.Errorf("%s: passed %+v", root, st.Passed)
		}
		notes := strings.Join(st.Notes, "\n")
		wantNotes := 1
		if root != blk {
			wantNotes = 3
			if !strings.Contains(notes, "a compacted Tempo block") || !strings.Contains(notes, "tenant index") {
				t.Errorf("%s: notes %q", root, notes)
			}
		}
		if len(st.Notes) != wantNotes || !strings.Contains(notes, blk+": a Tempo block: read data.parquet, passed over 3 bookkeeping files") {
			t.Errorf("%s: notes %q", root, notes)
		}
	}
}

// A block's spans carry the attributes OTLP JSON of the same traces
// gives (resource ones first), wherever Tempo kept them: its own
// resource and span columns, the dedicated columns, the generic lists;
// arrays and maps are left out. vParquet4 and vParquet3 alike, borrowed or
// not.
func TestTempoAttrsMatchOTLP(t *testing.T) {
	var doc strings.Builder
	for _, tr := range tmTraces() {
		doc.WriteString(tr.otlp() + "\n")
	}
	want, _ := readBytes(t, "in.json", []byte(doc.String()), record.Options{Format: "otlp"})
	dir := t.TempDir()
	b4 := writeBlock(t, filepath.Join(dir, "v4"), writeParquet(t, tempoTraces(), parquet.MaxRowsPerRowGroup(2)), tmMetaJSON)
	b3 := writeBlock(t, filepath.Join(dir, "v3"), writeParquet(t, tempoTraces3(), parquet.MaxRowsPerRowGroup(1)),
		strings.Replace(tmMetaJSON, "vParquet4", "vParquet3", 1))
	// As a set per span: the order within the resource's attributes, and
	// within the span's, is the order of Tempo's columns.
	set := func(sp span.Span) string {
		var own []string
		for _, a := range sp.Attrs {
			if strings.HasPrefix(a.Key, "otel.scope.") {
				continue
			}
			own = append(own, a.Key+"="+a.Value)
		}
		slices.Sort(own)
		return fmt.Sprint(own)
	}
	for _, blk := range []string{b4, b3} {
		for _, borrow := range []bool{false, true} {
			var got []span.Span
			if _, err := Read([]string{filepath.Join(blk, "data.parquet")}, record.Options{Borrowed: borrow}, SinkFunc(func(sp *span.Span) { got = append(got, cloneSpan(sp)) })); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d spans, OTLP %d", len(got), len(want))
			}
			for i := range want {
				if g, w := set(got[i]), set(want[i]); g != w {
					t.Errorf("%s span %d (borrowed %v):\n got %s\nwant %s", blk, i, borrow, g, w)
				}
			}
			if testing.Verbose() && !borrow {
				for _, sp := range got {
					t.Logf("%s: %q", sp.Name, sp.Attrs)
				}
			}
			// The resource's attributes come first.
			if a := got[1].Attrs; len(a) == 0 || a[0].Key != "deployment.env" || a[0].Value != "prod" {
				t.Errorf("span 1 attributes %q: the resource's first", a)
			}
			if a := got[0].Attrs; !slices.Contains(a, span.Attr{Key: "cluster", Value: "c1"}) || !slices.Contains(a, span.Attr{Key: "tier", Value: "edge"}) ||
				!slices.Contains(a, span.Attr{Key: "http.method", Value: "GET"}) || slices.ContainsFunc(a, func(x span.Attr) bool { return x.Key == "service.name" }) {
				t.Errorf("span 0 attributes %q", a)
			}
		}
	}
}
