package ingest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// ignoreFork is a briefFork whose Branches are record.AttrIgnorers: a
// Branch reads no value of the keys ignore names for a hop, and says so
// once it has taken after spans of that hop (so the reader's answers turn
// from false to true mid-read, as the analysis's do when a key passes
// AttrMaxValues). What it records of a span leaves those keys out, and
// counts the spans given to it with one of them all the same (seen).
type ignoreFork struct {
	mu      sync.Mutex
	mod     uint64
	ignore  map[string][]string // hop → keys
	after   int
	taken   []string
	ordered []string
	seen    int // ignored values handed to Take
	asked   int
}

type ignoreBranch struct {
	f     *ignoreFork
	n     map[string]int // spans taken, by hop
	taken []string
	seen  int
	asked int
}

func (f *ignoreFork) Branch() record.Branch { return &ignoreBranch{f: f, n: map[string]int{}} }
func (f *ignoreFork) Ordered(sp *span.Span) {
	f.ordered = append(f.ordered, fmt.Sprintf("%s attrs=%q", tBrief(*sp), attrText(sp)))
}

// keys are the keys the Branch ignores on hop: ignore's, or for a hop it
// does not name those of "*".
func (f *ignoreFork) keys(hop string) []string {
	if ks, ok := f.ignore[hop]; ok {
		return ks
	}
	return f.ignore["*"]
}

func (b *ignoreBranch) AttrIgnored(hop, key string) bool {
	b.asked++
	return b.n[hop] >= b.f.after && slices.Contains(b.f.keys(hop), key)
}

func (b *ignoreBranch) Take(sp *span.Span) bool {
	b.n[sp.Hop]++
	var read []string
	for _, a := range sp.Attrs {
		if slices.Contains(b.f.keys(sp.Hop), a.Key) {
			b.seen++
			continue
		}
		read = append(read, a.Key+"="+a.Value)
	}
	b.taken = append(b.taken, fmt.Sprintf("%s %s %d+%d %s %q", sp.TraceID, sp.Hop, sp.Start, sp.Duration, sp.Status, read))
	return sp.TraceID == "" || record.SpanKey(sp.TraceID, "")%b.f.mod == 0
}

func (b *ignoreBranch) Close() {
	b.f.mu.Lock()
	b.f.taken = append(b.f.taken, b.taken...)
	b.f.seen += b.seen
	b.f.asked += b.asked
	b.f.mu.Unlock()
}

// readIgnore reads data through an ignoreFork, with fast rows or without.
func readIgnore(t *testing.T, data []byte, opt record.Options, f *ignoreFork, fast bool) string {
	opt.Borrowed, opt.MaxErrors, opt.Paths.NoFastRows = true, 1000, !fast
	st, err := ReadStream("x.parquet", bytes.NewReader(data), opt, forkSink(f, func(*span.Span) { t.Fatal("emit called with a Fork") }))
	slices.Sort(f.taken)
	return fmt.Sprintf("err: %v\nread %d used %d skipped %d filtered %d ignored %d\nordered:\n%s\ntaken:\n%s\n",
		err, st.Read, st.Used, st.Skipped, st.Filtered, st.Ignored, strings.Join(f.ordered, "\n"), strings.Join(f.taken, "\n"))
}

// A Branch that ignores attributes on some hops is handed fewer of them
// by the fast rows, and nothing else changes: it takes the same spans
// with the same attributes as far as it reads them, and every span that
// goes on to Ordered carries all its attributes, in column order — with
// the sample holding every trace, some, or none, and with a filter.
func TestParquetFastRowsIgnoredAttrs(t *testing.T) {
	// Ordinary rows (the first pass's) but in a stretch that keeps every
	// odd value exportAttrRows writes, the rows of the records.
	rows := exportAttrRows(6000, 41)
	for i := range rows {
		if i >= 2000 && i < 2400 {
			continue
		}
		w := &rows[i]
		start, dur := int64(1_767_225_600_000_000_000+i*1000), int64(1000+i%977*1000)
		w.Start, w.Dur, w.Status, w.CodeText = &start, &dur, []string{"ok", "error", "unset"}[i%3], ""
		w.TraceID, w.Hop = fmt.Sprintf("%016x", uint64(i/6)*0x9E3779B97F4A7C15), []string{"a", "b", "c d"}[i%3]
		w.Attempt, w.TimeoutMs, w.Weight = ptr(int32(i%3)), ptr(float64(i%5)*250.5), ptr(1+float64(i%2))
	}
	ignore := map[string][]string{
		"a":   {"start_unix_nano", "zone", "k8s.pod.name"},
		"c d": {"start_unix_nano", "net.peer.port", "build"},
		"*":   {"cloud.region"},
	}
	const t0 = 1_767_225_600_000_000_000
	for name, opts := range map[string][]parquet.WriterOption{
		"one group":    nil,
		"small groups": {parquet.MaxRowsPerRowGroup(700), parquet.PageBufferSize(2000)},
	} {
		data := writeParquet(t, rows, opts...)
		for _, c := range []struct {
			mod   uint64
			after int
			opt   record.Options
		}{
			{5, 0, record.Options{}},
			{5, 300, record.Options{}},
			{1, 0, record.Options{}},
			{1 << 40, 10, record.Options{}},
			{5, 0, record.Options{Since: t0 + 1000*1000, HasSince: true}},
		} {
			fast := &ignoreFork{mod: c.mod, ignore: ignore, after: c.after}
			slow := &ignoreFork{mod: c.mod, ignore: ignore, after: c.after}
			a, b := readIgnore(t, data, c.opt, fast, true), readIgnore(t, data, c.opt, slow, false)
			if a != b {
				t.Errorf("%s, mod %d, after %d, %+v: ignored attributes change the read:\n%s", name, c.mod, c.after, c.opt, firstDiff(a, b))
			}
			// Without fast rows nothing is asked, and Take is handed
			// every value; with them, few values it ignores. A Branch
			// that starts ignoring only after some spans of a hop learns
			// it on each of the reader's goroutines, so how many values
			// go by first depends on how the row groups fall to them
			// (3,447–3,724 of 10,759 on the small groups after 300):
			// half is the bound there.
			if slow.asked != 0 || slow.seen < len(rows)/2 {
				t.Errorf("%s: records alone: asked %d, %d ignored values handed over", name, slow.asked, slow.seen)
			}
			few := slow.seen / 3
			if c.after > 0 {
				few = slow.seen / 2
			}
			if c.mod != 1 && fast.seen > few {
				t.Errorf("%s, mod %d, after %d: %d ignored values handed to Take (%d without fast rows), want few", name, c.mod, c.after, fast.seen, slow.seen)
			}
		}
	}
}
