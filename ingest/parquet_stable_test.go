package ingest

import (
	"bytes"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/span"
)

// heldFork keeps, without copying, the attributes of every span a Branch
// is given with span.Span.StableAttrs, beside a copy of their text: a
// reader that sets the flag on a string it writes again later (a batch's
// text) shows up as a held string that no longer reads as its copy.
type heldFork struct {
	mu             sync.Mutex
	held, copies   []string
	stable, unheld int
	ignore         []string // keys every Branch ignores (record.AttrIgnorer)
}

type heldBranch struct {
	f              *heldFork
	held, copies   []string
	stable, unheld int
}

func (f *heldFork) Branch() record.Branch { return &heldBranch{f: f} }
func (f *heldFork) Ordered(*span.Span)    {}

func (b *heldBranch) Take(sp *span.Span) bool {
	if !sp.StableAttrs {
		b.unheld++
		return false
	}
	b.stable++
	for _, a := range sp.Attrs {
		b.held = append(b.held, a.Key, a.Value)
		b.copies = append(b.copies, string([]byte(a.Key)), string([]byte(a.Value)))
	}
	return false
}

func (b *heldBranch) AttrIgnored(hop, key string) bool { return slices.Contains(b.f.ignore, key) }

func (b *heldBranch) Close() {
	b.f.mu.Lock()
	defer b.f.mu.Unlock()
	b.f.held, b.f.copies = append(b.f.held, b.held...), append(b.f.copies, b.copies...)
	b.f.stable += b.stable
	b.f.unheld += b.unheld
}

// The Parquet fast rows say their attributes are stable only when every
// value is a column name, an interned dictionary entry or an interned
// integer: held past the read, each still reads as it did when taken —
// on files whose plain columns (a distinct start a row, byte arrays,
// floats) write the batch's text, and with those ignored (the
// dictionaries and the few integers a column repeats left).
func TestParquetFastRowsStableAttrs(t *testing.T) {
	rows := exportAttrRows(20_000, 7)
	for name, opts := range map[string][]parquet.WriterOption{
		"dictionaries": nil,
		"small pages":  {parquet.MaxRowsPerRowGroup(3000), parquet.PageBufferSize(1500)},
	} {
		data := writeParquet(t, rows, opts...)
		for _, ignore := range [][]string{nil, {"zone", "canary", "load", "ratio", "build"}, {"start_unix_nano", "zone", "canary", "load", "ratio", "build"}} {
			f := &heldFork{ignore: ignore}
			opt := record.Options{Borrowed: true, MaxErrors: 100_000}
			if _, err := ReadStream("x.parquet", bytes.NewReader(data), opt, forkSink(f, func(*span.Span) { t.Fatal("emit called with a Fork") })); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			bad := 0
			for i := range f.held {
				if f.held[i] != f.copies[i] {
					if bad++; bad <= 3 {
						t.Errorf("%s, ignoring %q: a stable text changed after it was taken: %q, was %q", name, ignore, f.held[i], f.copies[i])
					}
				}
			}
			// Both kinds occur: the distinct start of each row is written
			// in the batch's text, unless it is ignored.
			if slices.Contains(ignore, "start_unix_nano") && f.stable == 0 || f.unheld == 0 {
				t.Errorf("%s, ignoring %q: %d spans taken stable, %d not", name, ignore, f.stable, f.unheld)
			}
			t.Logf("%s, ignoring %q: %d stable, %d not, %d texts held", name, ignore, f.stable, f.unheld, len(f.held))
		}
	}
}

// Tempo's spans carry interned attribute texts: every span with
// attributes says so (span.Span.StableAttrs), and each text held past the
// read still reads as it did.
func TestTempoStableAttrs(t *testing.T) {
	data, err := os.ReadFile("testdata/tempo-vparquet4.parquet")
	if err != nil {
		t.Fatal(err)
	}
	f := &heldFork{}
	opt := record.Options{Borrowed: true, MaxErrors: 1000}
	if _, err := ReadStream("data.parquet", bytes.NewReader(data), opt, forkSink(f, func(*span.Span) { t.Fatal("emit called with a Fork") })); err != nil {
		t.Fatal(err)
	}
	if f.stable == 0 || len(f.held) == 0 {
		t.Fatalf("%d spans taken stable, %d not, %d texts", f.stable, f.unheld, len(f.held))
	}
	for i := range f.held {
		if f.held[i] != f.copies[i] {
			t.Fatalf("a stable text changed after it was taken: %q, was %q", f.held[i], f.copies[i])
		}
	}
}
