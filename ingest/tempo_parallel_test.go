package ingest

import (
	"bytes"
	"fmt"
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

// manyTempoTraces repeats the model traces n times under fresh trace ids,
// some spans without a start (skipped) and some with an attribute that
// cannot be read (kept without it), so that a block of them has skips
// and ignored values spread over its row groups.
func manyTempoTraces(n int) []t4Trace {
	var out []t4Trace
	for k := range n {
		for j, tr := range tmTraces() {
			tr.id = id(1000+k*7+j, 16)
			for ri := range tr.rs {
				for si := range tr.rs[ri].scopes {
					ss := slices.Clone(tr.rs[ri].scopes[si])
					for i := range ss {
						switch (k + ri + si + i) % 11 {
						case 3:
							ss[i].start = 0
						case 7:
							ss[i].attrs = append(slices.Clone(ss[i].attrs), tmAttr{"http.request.resend_count", int64(-1)})
						}
					}
					tr.rs[ri].scopes[si] = ss
				}
			}
			out = append(out, tr.v4())
		}
	}
	return out
}

// readTempoWith reads a block with the given number of decoding
// goroutines and renders everything the read gives: spans (with their
// attributes), skips and ignored values with their positions, counts and
// the error.
func readTempoWith(t *testing.T, workers int, data []byte, opt record.Options) string {
	t.Helper()
	opt.Paths.Workers = workers
	var b strings.Builder
	st, err := ReadStream("data.parquet", bytes.NewReader(data), opt, SinkFunc(func(sp *span.Span) {
		fmt.Fprintf(&b, "%+v\n", *sp) // Attrs printed now: with Borrowed they alias a buffer
	}))
	if st.Read != st.Used+st.Skipped+st.Filtered {
		t.Fatalf("read %d != used %d + skipped %d", st.Read, st.Used, st.Skipped)
	}
	fmt.Fprintf(&b, "read %d used %d skipped %d %v ignored %d %v\n", st.Read, st.Used, st.Skipped, st.SkippedByReason, st.Ignored, st.IgnoredByField)
	for _, e := range st.Errors {
		fmt.Fprintf(&b, "skip: %v\n", e)
	}
	for _, e := range st.IgnoredExamples {
		fmt.Fprintf(&b, "ignored: %v\n", e)
	}
	fmt.Fprintf(&b, "err: %v\n", err)
	return b.String()
}

// The parallel reader gives exactly what the sequential one gives, on
// blocks of many row groups: the same spans in the same order, the same
// skips and ignored values at the same positions.
func TestTempoParallelMatchesSequential(t *testing.T) {
	rows := manyTempoTraces(60)
	layouts := map[string][]parquet.WriterOption{
		"one group":       nil,
		"one row a group": {parquet.MaxRowsPerRowGroup(1)},
		"small groups":    {parquet.MaxRowsPerRowGroup(7), parquet.PageBufferSize(512)},
		"two groups":      {parquet.MaxRowsPerRowGroup(int64(len(rows)/2 + 1))},
	}
	for name, wopts := range layouts {
		data := writeParquet(t, rows, wopts...)
		for _, opt := range []record.Options{{}, {Borrowed: true, MaxErrors: 10000}, {HopBy: "attr:peer.service"}} {
			seq := readTempoWith(t, 1, data, opt)
			if opt.HopBy == "" && (!strings.Contains(seq, "err: <nil>") || strings.Contains(seq, " skipped 0 ") || strings.Contains(seq, " ignored 0 ")) {
				t.Fatalf("%s: the block does not exercise skips and ignored values:\n%s", name, seq[max(0, len(seq)-500):])
			}
			for _, w := range []int{2, 3, 8} {
				if par := readTempoWith(t, w, data, opt); par != seq {
					t.Errorf("%s, %+v, %d workers: parallel and sequential differ:\n%s", name, opt, w, firstDiff(par, seq))
				}
			}
		}
	}
}

// On damaged blocks too: the same spans before the damage, the same error
// (row group, column) and the same counts.
func TestTempoParallelCorrupt(t *testing.T) {
	data := writeParquet(t, manyTempoTraces(30), parquet.MaxRowsPerRowGroup(5), parquet.PageBufferSize(1024))
	r := rand.New(rand.NewPCG(5, 5))
	decodeErrs := 0
	for range 200 {
		bad := bytes.Clone(data)
		for range 1 + r.IntN(3) {
			bad[4+r.IntN(len(bad)-12)] ^= byte(1 + r.IntN(255))
		}
		seq := readTempoWith(t, 1, bad, record.Options{MaxErrors: 10000})
		if par := readTempoWith(t, 3, bad, record.Options{MaxErrors: 10000}); par != seq {
			t.Fatalf("damaged block read differently:\n%s", firstDiff(par, seq))
		}
		if strings.Contains(seq, "err: data.parquet: row group") || strings.Contains(seq, "err: data.parquet: corrupt") {
			decodeErrs++
		}
	}
	if decodeErrs == 0 {
		t.Error("200 damaged blocks and not one decoding error")
	}
}

// collectFork is a Fork that renders every span it is given: a Branch
// hands every third span back to Ordered, so both ways are exercised.
type collectFork struct {
	mu    sync.Mutex
	lines []string
	n     int
}

type collectBranch struct{ f *collectFork }

func (f *collectFork) Branch() record.Branch { return collectBranch{f} }
func (f *collectFork) Ordered(sp *span.Span) { f.add(sp) }
func (f *collectFork) add(sp *span.Span) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lines = append(f.lines, fmt.Sprintf("%+v", *sp))
}
func (b collectBranch) Take(sp *span.Span) bool {
	b.f.mu.Lock()
	b.f.n++
	again := b.f.n%3 == 0
	b.f.mu.Unlock()
	if !again {
		b.f.add(sp)
	}
	return again
}
func (b collectBranch) Close() {}

// With a Fork (what the analysis gives), parallel workers check and hand
// spans to their Branch themselves: the spans, counts, skips, filtered
// spans and ignored values are those of the sequential read (order aside,
// which a Fork does not promise across branches).
func TestTempoParallelFork(t *testing.T) {
	data := writeParquet(t, manyTempoTraces(60), parquet.MaxRowsPerRowGroup(7), parquet.PageBufferSize(512))
	read := func(workers int, opt record.Options) string {
		opt.Paths.Workers = workers
		f := &collectFork{}
		st, err := ReadStream("data.parquet", bytes.NewReader(data), opt, forkSink(f, f.add))
		slices.Sort(f.lines)
		var b strings.Builder
		fmt.Fprintf(&b, "%s\nread %d used %d skipped %d filtered %d %v %v ignored %d %v\n", strings.Join(f.lines, "\n"), st.Read, st.Used, st.Skipped, st.Filtered, st.SkippedByReason, st.FilteredByReason, st.Ignored, st.IgnoredByField)
		for _, e := range st.Errors {
			fmt.Fprintf(&b, "skip: %v\n", e)
		}
		for _, e := range st.IgnoredExamples {
			fmt.Fprintf(&b, "ignored: %v\n", e)
		}
		fmt.Fprintf(&b, "err: %v\n", err)
		return b.String()
	}
	for _, opt := range []record.Options{{MaxErrors: 10000}, {Borrowed: true, MaxErrors: 10000}, {ExcludeHops: regexp.MustCompile(`fetch`), MaxErrors: 10000}} {
		seq := read(1, opt)
		if strings.Contains(seq, " skipped 0 ") || strings.Contains(seq, " ignored 0 ") {
			t.Fatalf("the block does not exercise skips and ignored values:\n%s", seq[max(0, len(seq)-500):])
		}
		if opt.ExcludeHops != nil && strings.Contains(seq, " filtered 0 ") {
			t.Fatalf("--hops filters nothing:\n%s", seq[strings.Index(seq, "\nread "):][:300])
		}
		for _, w := range []int{2, 3} {
			if par := read(w, opt); par != seq {
				t.Errorf("%+v, %d workers: parallel with a Fork and sequential differ:\n%s", opt, w, firstDiff(par, seq))
			}
		}
	}
}
