package ingest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/flat"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// setRow is the flat schema (exportRow) with the attribute columns the
// fast rows can give as shared lists (dictionaries, plain integers), one
// with a distinct value a row (a start again, plain), and one dictionary
// with a distinct value a row (a request id) in some files only.
type setRow struct {
	exportRow // parquet-go flattens it into the first columns

	StartNs int64  `parquet:"start_unix_nano"`
	Route   string `parquet:"http.route,optional,dict"`
	Pod     string `parquet:"k8s.pod.name,optional,dict"`
	Region  string `parquet:"cloud.region,dict"`
	Port    *int32 `parquet:"net.peer.port,optional"`
	Version *int64 `parquet:"version,optional"`
	ReqID   string `parquet:"request.id,optional,dict"`
}

// setRows are n ordinary rows (the first pass's) with a stretch of the
// odd values exportRows writes (the records'), and in the attribute
// columns nulls, blanks and values too long to keep, and one row in 97
// without a hop (derived from its service and name); rows 3000–3299 give
// the port a distinct value each (past the integers a column holds), and
// with reqIDs every row a request id of its own.
func setRows(n int, seed uint64, reqIDs bool) []setRow {
	r := rand.New(rand.NewPCG(seed, seed+1))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	long := strings.Repeat("x", record.MaxAttrValue+1)
	// Ports and versions are stored +2 and +0 (0: null).
	profiles := []struct {
		route, pod, region string
		port               int32
		version            int64
	}{
		{"/v1/cart/{id}", "cart-7d9f8b-x2x7z", "eu-west-1", 8082, 1},
		{"/v1/cart/{id}", "cart-7d9f8b-abcde", "us-east-1", 8082, 2},
		{"/v1/pay", "pay-1", "caf\xc3", 445, 0},
		{" ", "", "eu-west-1", 0, 3},
		{"", "pay-1", "us-east-1", 1, 1},
		{long, "cart-7d9f8b-abcde", "eu-west-1", 2, 0},
	}
	rows := make([]setRow, n)
	for i, e := range exportRows(n, seed) {
		w := &rows[i]
		w.exportRow = e
		if i < 1000 || i >= 1200 {
			start, dur := int64(1_767_225_600_000_000_000+i*1000), int64(1000+i%977*1000)
			w.Start, w.Dur, w.Status, w.CodeText = &start, &dur, []string{"ok", "error", "unset"}[i%3], ""
			w.TraceID, w.Hop = fmt.Sprintf("%016x", uint64(i/6)*0x9E3779B97F4A7C15), []string{"a", "b", "c d"}[i%3]
			w.Attempt, w.TimeoutMs, w.Weight = ptr(int32(i%3)), ptr(float64(i%5)*250.5), ptr(1+float64(i%2))
			if i%97 == 0 {
				// No hop: the span's hop is derived from its service
				// and name, and its Take reads every attribute.
				w.Hop, w.Service, w.Name = "", "svc", "op"
			}
		}
		w.StartNs = int64(1_767_225_600_000_000_000 + i*997)
		// A row's attributes mostly come as one of a few profiles (a pod
		// has its region, a route its port), now and then mixed.
		p := profiles[r.IntN(len(profiles))]
		if r.IntN(50) == 0 {
			p.route, p.region = pick("", "/v1/cart/{id}", "/v1/pay", " ", long), pick("eu-west-1", "us-east-1", "caf\xc3")
		}
		w.Route, w.Pod, w.Region = p.route, p.pod, p.region
		if p.port != 0 {
			w.Port = ptr(p.port - 2)
		}
		if p.version != 0 {
			w.Version = ptr(p.version << 40)
		}
		if i >= 3000 && i < 3300 {
			w.Port = ptr(int32(10_000 + i))
		}
		if r.IntN(2) == 0 {
			w.Version = ptr(int64(r.IntN(3)) << 40)
		}
		if reqIDs {
			w.ReqID = fmt.Sprintf("req-%d", i)
		}
	}
	return rows
}

// sharedFork counts the spans its Branches take with shared attribute
// lists, and keeps each list (not a copy) beside its text then: a list
// the reader wrote again later reads differently at the end.
type sharedFork struct {
	mu     sync.Mutex
	shared int
	lists  [][]span.Attr
	texts  []string
}

type sharedBranch struct {
	f      *sharedFork
	shared int
	last   []span.Attr
	lists  [][]span.Attr
	texts  []string
}

func (f *sharedFork) Branch() record.Branch { return &sharedBranch{f: f} }
func (f *sharedFork) Ordered(*span.Span)    {}

func (b *sharedBranch) AttrIgnored(hop, key string) bool { return key == "start_unix_nano" }

func (b *sharedBranch) Take(sp *span.Span) bool {
	if !sp.SharedAttrs {
		return false
	}
	if !sp.StableAttrs {
		panic("shared attributes that are not stable")
	}
	b.shared++
	if len(sp.Attrs) > 0 && (len(b.last) == 0 || &b.last[0] != &sp.Attrs[0]) {
		b.last = sp.Attrs
		b.lists = append(b.lists, sp.Attrs)
		b.texts = append(b.texts, attrText(sp))
	}
	return false
}

func (b *sharedBranch) Close() {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	b.f.shared += b.shared
	b.f.lists, b.f.texts = append(b.f.lists, b.lists...), append(b.f.texts, b.texts...)
}

// The fast rows give rows whose attribute columns hold dictionary entries
// and held integers shared lists (span.Span.SharedAttrs), and nothing
// else changes: with and without fast rows the Branches take the same
// spans with the same attributes as far as they read them, and the spans
// that go on carry all theirs — whatever the row groups and pages (each
// its own dictionaries), with columns ignored on some hops or on none,
// past a column's held integers, and with a column whose lists never
// repeat (the sets pause). The lists are never written again: each one
// held past the read reads as it did.
func TestParquetSharedAttrs(t *testing.T) {
	layouts := map[string][]parquet.WriterOption{
		"one group":    nil,
		"small groups": {parquet.MaxRowsPerRowGroup(700), parquet.PageBufferSize(2000)},
		"small pages":  {parquet.PageBufferSize(500)},
	}
	ignores := map[string]map[string][]string{
		"start everywhere": {"*": {"start_unix_nano"}},
		"per hop":          {"a": {"start_unix_nano", "k8s.pod.name"}, "c d": {"start_unix_nano", "net.peer.port", "version"}, "*": {"start_unix_nano"}},
		"none":             nil,
	}
	for _, reqIDs := range []bool{false, true} {
		rows := setRows(6000, 23, reqIDs)
		for lname, opts := range layouts {
			data := writeParquet(t, rows, opts...)
			for iname, ignore := range ignores {
				for _, c := range []struct {
					mod   uint64
					after int
				}{{5, 0}, {3, 200}, {1 << 40, 0}} {
					name := fmt.Sprintf("request ids %v, %s, ignoring %s, mod %d, after %d", reqIDs, lname, iname, c.mod, c.after)
					fast := &ignoreFork{mod: c.mod, ignore: ignore, after: c.after}
					slow := &ignoreFork{mod: c.mod, ignore: ignore, after: c.after}
					if a, b := readIgnore(t, data, record.Options{}, fast, true), readIgnore(t, data, record.Options{}, slow, false); a != b {
						t.Errorf("%s: shared lists change the read:\n%s", name, firstDiff(a, b))
					}
				}
			}
			f := &sharedFork{}
			opt := record.Options{Borrowed: true, MaxErrors: 100_000}
			if _, err := ReadStream("x.parquet", bytes.NewReader(data), opt, forkSink(f, func(*span.Span) { t.Fatal("emit called with a Fork") })); err != nil {
				t.Fatal(err)
			}
			for i, l := range f.lists {
				if got := attrText(&span.Span{Attrs: l}); got != f.texts[i] {
					t.Fatalf("request ids %v, %s: a shared list changed after it was taken: %q, was %q", reqIDs, lname, got, f.texts[i])
				}
			}
			// Most rows are given shared lists; with a request id a row
			// (never ignored) the sets pause, doubling: few are.
			if !reqIDs && f.shared < len(rows)/2 || reqIDs && f.shared > len(rows)/4 {
				t.Errorf("request ids %v, %s: %d of %d spans taken with shared lists", reqIDs, lname, f.shared, len(rows))
			}
			t.Logf("request ids %v, %s: %d shared, %d lists", reqIDs, lname, f.shared, len(f.lists))
		}
	}
}

// orderedFork is an ignoreFork whose Ordered reads only the keys reads
// names (record.OrderedKeys): it records only those, and counts the
// spans it is given that carry the attribute full (a column a reader
// may leave unread).
type orderedFork struct {
	*ignoreFork
	reads []string
	full  string
	with  *int
}

func (f orderedFork) OrderedReads(key string) bool { return slices.Contains(f.reads, key) }

func (f orderedFork) Ordered(sp *span.Span) {
	var kept []string
	for _, a := range sp.Attrs {
		if a.Key == f.full {
			*f.with++
		}
		if slices.Contains(f.reads, a.Key) {
			kept = append(kept, a.Key+"="+a.Value)
		}
	}
	f.ordered = append(f.ordered, fmt.Sprintf("%s attrs=%q", tBrief(*sp), kept))
}

func readOrdered(t *testing.T, data []byte, opt record.Options, f orderedFork, fast bool) string {
	opt.Borrowed, opt.MaxErrors, opt.Paths.NoFastRows = true, 1000, !fast
	sink := struct {
		orderedFork
		record.SinkFunc
	}{f, func(*span.Span) { t.Fatal("emit called with a Fork") }}
	st, err := ReadStream("x.parquet", bytes.NewReader(data), opt, sink)
	slices.Sort(f.taken)
	return fmt.Sprintf("err: %v\nread %d used %d skipped %d filtered %d ignored %d\nordered:\n%s\ntaken:\n%s\n",
		err, st.Read, st.Used, st.Skipped, st.Filtered, st.Ignored, strings.Join(f.ordered, "\n"), strings.Join(f.taken, "\n"))
}

// A column that every hop of a row group ignores and that Ordered does
// not read is left unread there, and nothing either reads changes: the
// Branches take the same spans with the same attributes as far as they
// read them — a span whose hop is derived (null or blank in the hop
// column) every attribute, the column opened again at its row — and
// Ordered gets the same values of the keys it reads; with the sample
// holding every trace, some or none, row groups and pages of every size,
// and a filter (whose batches the records read).
func TestParquetUnreadColumns(t *testing.T) {
	derived := setRows(6000, 29, false)
	named := setRows(6000, 29, false)
	for i := range named {
		if i >= 1200 && named[i].Hop == "" {
			named[i].Hop = "a"
		}
	}
	const t0 = 1_767_225_600_000_000_000
	for _, lc := range []struct {
		name string
		rows []setRow
		opts []parquet.WriterOption
	}{
		{"one group", derived, nil},
		{"small groups, derived hops", derived, []parquet.WriterOption{parquet.MaxRowsPerRowGroup(700), parquet.PageBufferSize(2000)}},
		{"small groups", named, []parquet.WriterOption{parquet.MaxRowsPerRowGroup(700), parquet.PageBufferSize(2000)}},
		{"small pages", derived, []parquet.WriterOption{parquet.MaxRowsPerRowGroup(1500), parquet.PageBufferSize(500)}},
	} {
		lname, data := lc.name, writeParquet(t, lc.rows, lc.opts...)
		for iname, ignore := range map[string]map[string][]string{
			"every hop":   {"*": {"start_unix_nano", "version"}},
			"named hops":  {"a": {"start_unix_nano", "version"}, "b": {"start_unix_nano"}, "c d": {"start_unix_nano", "version", "http.route"}},
			"routing key": {"*": {"start_unix_nano", "http.route"}},
		} {
			for _, c := range []struct {
				mod   uint64
				after int
				opt   record.Options
			}{
				{5, 0, record.Options{}},
				{1, 0, record.Options{}},
				{1 << 40, 50, record.Options{}},
				{3, 0, record.Options{Since: t0 + 3000*1000, HasSince: true}},
			} {
				name := fmt.Sprintf("%s, ignoring on %s, mod %d, after %d, %+v", lname, iname, c.mod, c.after, c.opt)
				var fastWith, slowWith int
				fast := orderedFork{&ignoreFork{mod: c.mod, ignore: ignore, after: c.after}, []string{"http.route"}, "start_unix_nano", &fastWith}
				slow := orderedFork{&ignoreFork{mod: c.mod, ignore: ignore, after: c.after}, []string{"http.route"}, "start_unix_nano", &slowWith}
				before := flat.UnreadChunks()
				a := readOrdered(t, data, c.opt, fast, true)
				unread := flat.UnreadChunks() - before
				if b := readOrdered(t, data, c.opt, slow, false); a != b {
					t.Errorf("%s: unread columns change the read:\n%s", name, firstDiff(a, b))
				}
				// Ordered's spans carry only the keys it reads, with
				// fast rows or without (a chunk keeps no more).
				if fastWith+slowWith > 0 {
					t.Errorf("%s: %d spans reached Ordered with start_unix_nano (%d without fast rows)", name, fastWith, slowWith)
				}
				// The column is left unread where every hop is named
				// (after the first row group, where no hop ignored it
				// yet; without a filter, whose batches the records read).
				if lname == "small groups" && c.after == 0 && !c.opt.HasSince && unread == 0 {
					t.Errorf("%s: no column chunk left unread", name)
				}
			}
		}
	}
}
