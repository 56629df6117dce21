package ingest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/pool"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// benchLines makes n flat JSON lines of the shape bench/ generates.
func benchLines(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	hops := []string{"auth", "search", "retrieve", "rank", "generate", "render"}
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, `{"trace_id":"%016x%016x","span_id":"%016x","parent_id":"%016x","service":"svc","name":"op","kind":"client","hop":"%s","start":%d,"duration_ms":%.3f,"status":"ok","code":200,"attempt":1,"timeout_ms":3000}`+"\n",
			r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64(), hops[i%len(hops)], 1767225600000000000+int64(i)*1000, 10+r.Float64()*500)
	}
	return b.Bytes()
}

// collect reads input and returns the spans (ids cloned) and the stats.
func collect(t testing.TB, input string, opt record.Options) ([]span.Span, *record.Stats) {
	var out []span.Span
	st, err := ReadStream("in.jsonl", strings.NewReader(input), opt, SinkFunc(func(s *span.Span) {
		c := *s
		c.TraceID, c.SpanID, c.ParentID = strings.Clone(s.TraceID), strings.Clone(s.SpanID), strings.Clone(s.ParentID)
		out = append(out, c)
	}))
	if err != nil {
		t.Fatal(err)
	}
	return out, st
}

// The parallel reader must give the same spans in the same order, and
// the same positioned errors, whatever the block boundaries: tiny blocks
// cut lines everywhere, lines longer than a block make it grow, and a
// line longer than --max-record is skipped at its own line number.
func TestJSONLBlocksAgree(t *testing.T) {
	var in strings.Builder
	in.Write(benchLines(300))
	in.WriteString("\n   \n{\"hop\":\"x\",\"duration_ms\":\"fast\"}\r\n")
	in.WriteString(`{"hop":"y","duration_ms":12.5,"trace_id":"a\u0062c"}` + "\n")
	in.WriteString(`{"hop":"z","duration_ms":1}` + strings.Repeat(" ", 3000) + "\n")
	in.WriteString("not json\n")
	in.Write(benchLines(50))
	in.WriteString(`{"hop":"last","duration_ms":7}`) // no final newline
	input := in.String()

	want, wst := collect(t, input, record.Options{MaxRecord: 2000})
	if len(want) != 352 || wst.Skipped != 3 {
		t.Fatalf("reference read: %d spans, %d skipped (%v)", len(want), wst.Skipped, wst.SkippedByReason)
	}
	for _, bs := range []int{64, 100, 1000, 4096} {
		for _, borrow := range []bool{false, true} {
			got, st := collect(t, input, record.Options{MaxRecord: 2000, Borrowed: borrow, Paths: record.Paths{BlockSize: bs}})
			if !reflect.DeepEqual(got, want) {
				t.Errorf("block %d, borrowed %v: spans differ", bs, borrow)
			}
			if !reflect.DeepEqual(errs(st), errs(wst)) || st.Read != wst.Read {
				t.Errorf("block %d: errors %v, want %v", bs, errs(st), errs(wst))
			}
		}
	}
	for _, e := range errs(wst) {
		if !strings.HasPrefix(e, "in.jsonl:303:") && !strings.HasPrefix(e, "in.jsonl:305:") && !strings.HasPrefix(e, "in.jsonl:306:") {
			t.Errorf("unexpected position: %s", e)
		}
	}
}

func errs(st *record.Stats) []string {
	var out []string
	for _, e := range st.Errors {
		out = append(out, e.Error())
	}
	return out
}

func BenchmarkJSONL(b *testing.B) {
	data := benchLines(200_000)
	for _, borrow := range []bool{false, true} {
		b.Run(fmt.Sprintf("borrowed=%v", borrow), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				if _, err := ReadStream("b", bytes.NewReader(data), record.Options{Borrowed: borrow}, SinkFunc(func(*span.Span) { n++ })); err != nil || n != 200_000 {
					b.Fatal(n, err)
				}
			}
			b.ReportMetric(float64(b.N)*200_000/b.Elapsed().Seconds(), "spans/s")
		})
	}
	// With a Fork whose Branches keep nothing and hand nothing back: the
	// decoding goroutines' share, as analyze's Parts see it.
	b.Run("fork", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			f := &countFork{}
			if _, err := ReadStream("b", bytes.NewReader(data), record.Options{Borrowed: true}, forkSink(f, func(*span.Span) {})); err != nil || f.n.Load() != 200_000 {
				b.Fatal(f.n.Load(), err)
			}
		}
		b.ReportMetric(float64(b.N)*200_000/b.Elapsed().Seconds(), "spans/s")
	})
}

// countFork counts the spans its Branches take and hands none back.
type countFork struct{ n atomic.Int64 }

type countBranch struct {
	f *countFork
	n int64
}

func (f *countFork) Branch() record.Branch  { return &countBranch{f: f} }
func (f *countFork) Ordered(*span.Span)     {}
func (b *countBranch) Take(*span.Span) bool { b.n++; return false }
func (b *countBranch) Close()               { b.f.n.Add(b.n) }

// recFork is a Fork that hands back every span whose line is even
// (every span when all), recording what its Branches took and what
// reached Ordered.
type recFork struct {
	all     bool
	taken   int
	closed  int
	ordered []span.Span
}

type recBranch struct {
	f *recFork
	n int
}

func (f *recFork) Branch() record.Branch { return &recBranch{f: f} }

func (f *recFork) Ordered(sp *span.Span) {
	c := *sp
	c.TraceID, c.SpanID, c.ParentID = strings.Clone(sp.TraceID), strings.Clone(sp.SpanID), strings.Clone(sp.ParentID)
	f.ordered = append(f.ordered, c)
}

func (b *recBranch) Take(sp *span.Span) bool {
	b.n++
	return b.f.all || sp.Start%2 == 0
}

func (b *recBranch) Close() { b.f.taken += b.n; b.f.closed++ }

// With a Fork, the reader counts, skips and positions exactly as without
// one, Branches take every kept span, and Ordered gets the ones they hand
// back, in input order and whole (service and name filled in, a hop
// named by them derived), whatever the block boundaries.
func TestJSONLFork(t *testing.T) {
	var in strings.Builder
	in.Write(benchLines(200))
	in.WriteString("{\"service\":\"svc\",\"name\":\"op\",\"kind\":\"client\",\"start\":2,\"duration_ms\":3}\n") // hop from service+name
	in.WriteString("{\"hop\":\"x\",\"duration_ms\":\"fast\"}\n")
	in.WriteString("{\"hop\":\"neg\",\"start\":4,\"duration_ms\":-1}\n") // skipped by accept, on a worker
	in.WriteString("not json\n")
	in.Write(benchLines(100))
	input := in.String()
	for _, hopBy := range []string{"", "service+name"} {
		want, wst := collect(t, input, record.Options{MaxRecord: 2000, HopBy: hopBy})
		for _, bs := range []int{100, 4096, 1 << 20} {
			for _, all := range []bool{true, false} {
				f := &recFork{all: all}
				st, err := ReadStream("in.jsonl", strings.NewReader(input), record.Options{MaxRecord: 2000, HopBy: hopBy, Borrowed: true, Paths: record.Paths{BlockSize: bs}},
					forkSink(f, func(*span.Span) { t.Fatal("emit called with a Fork") }))
				if err != nil {
					t.Fatal(err)
				}
				var wantOrdered []span.Span
				for _, s := range want {
					if all || s.Start%2 == 0 {
						wantOrdered = append(wantOrdered, s)
					}
				}
				if !reflect.DeepEqual(f.ordered, wantOrdered) || f.taken != len(want) || f.closed != pool.Workers() {
					t.Errorf("hop-by %q, block %d, all %v: %d ordered (want %d), %d taken (want %d), %d closed",
						hopBy, bs, all, len(f.ordered), len(wantOrdered), f.taken, len(want), f.closed)
				}
				if !reflect.DeepEqual(errs(st), errs(wst)) || st.Read != wst.Read || st.Used != wst.Used || !reflect.DeepEqual(st.SkippedByReason, wst.SkippedByReason) {
					t.Errorf("hop-by %q, block %d: stats %+v, want %+v", hopBy, bs, st, wst)
				}
			}
		}
		if wst.Skipped != 3 || wst.SkippedByReason["negative duration"] != 1 {
			t.Errorf("reference: %+v", wst.SkippedByReason)
		}
	}
}
