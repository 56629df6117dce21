package record

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/secret"
	"github.com/tailscope/tailscope/span"
)

// SoftErr is a value of an optional field that a reader could not read.
type SoftErr struct{ Field, Detail string }

// DefaultMaxRecord is the largest line or JSON document accepted by default
// (--max-record raises it). It protects the machine from a runaway input.
const DefaultMaxRecord = 64 << 20

// DefaultMaxSpill is the largest temporary file a Parquet input from stdin
// or a compressed file is spilled to by default (--max-spill raises it).
const DefaultMaxSpill = 4 << 30

// Options say how to read and which spans to keep.
type Options struct {
	// Format is "auto" (sniffed from content) or one of Formats.
	Format string
	// HopBy chooses the hop of a span: hop, service, name, service+name,
	// peer or attr:KEY. Empty means the format's default (hop for flat logs,
	// service+name for trace formats).
	HopBy string
	// Map renames fields of flat JSON and CSV logs: canonical field → key in
	// the input (e.g. "hop" → "operation").
	Map map[string]string
	// MaxRecord bounds a line or a JSON document, in bytes.
	MaxRecord int
	// MaxSpill bounds what a Parquet input read from stdin or from a
	// compressed file may take on disk once spilled to a temporary file
	// (it needs random access), in bytes; 0 means DefaultMaxSpill.
	MaxSpill int64
	// Since and Until keep spans whose start lies in [Since, Until) (unix
	// ns) when HasSince and HasUntil say they are set: 0 is the Unix
	// epoch, a time like any other, not "unbounded". A nonzero value
	// counts as set too, for options built by hand.
	Since, Until       int64
	HasSince, HasUntil bool
	// Exclude drops spans whose start lies in any of these windows: an
	// incident the fit should leave out (the report names them).
	Exclude []Window
	// Hops and ExcludeHops filter by hop name after derivation.
	Hops, ExcludeHops *regexp.Regexp
	// Stdin is read for the path "-".
	Stdin io.Reader
	// MaxErrors bounds how many positioned errors are kept (all are counted).
	MaxErrors int
	// Names names the settings the readers' messages tell the reader to
	// change (HopBy, Map, Format, MaxRecord, MaxSpill: option.HopBy, …)
	// as the caller's user knows them; nil: by option's own names.
	Names option.Names
	// Borrowed lets a reader hand out spans whose id strings (TraceID,
	// SpanID, ParentID) alias its own buffers, valid only during the
	// Sink.Span call: the flat JSON-lines reader then allocates nothing per
	// span. A Sink that keeps a span must clone those strings. Off by
	// default.
	Borrowed bool
	// Remote, when set, serves the paths it claims in place of the file
	// system: a tracing backend's query API named by a URL (package
	// source). Such a path is neither walked nor opened as a file; its
	// stream is read as a file's content is, and when the stream has
	// Notes() []string, they join Stats.Notes once it is read; when it
	// has Err() error, a read that failed reports that error (unplaced:
	// the position a decoder met it at means nothing for a fetch).
	Remote Remote
	// Paths picks among a decoder's equivalent ways of reading the same
	// bytes. Every path yields the same spans, counts and errors; the zero
	// value takes the fastest the input allows. Differential tests set it
	// to read one file every way and compare.
	Paths Paths
}

// Paths names the decoding paths a run may be held to (see Options.Paths).
type Paths struct {
	// Rows makes a flat Parquet table take the row-by-row reader instead
	// of the column batches.
	Rows bool
	// NoFastRows keeps a flat Parquet reader from its fast rows (the
	// first pass that reads only the hop and the duration of a row) and
	// sends every row through the records.
	NoFastRows bool
	// BlockSize is the size in bytes of a block of lines handed to a
	// decoding worker (JSON lines, OTLP JSON lines); 0 means
	// DefaultBlockSize. Tests read with tiny blocks so that lines and
	// their carries cross block edges.
	BlockSize int
	// Workers caps the decoding goroutines of a reader that decodes row
	// groups in parallel (Tempo blocks); 0 means all cores. Tests compare
	// the sequential reader (1) with the parallel one.
	Workers int
}

// DefaultBlockSize is the target size of a block of lines: large enough
// that the hand-off costs nothing per line, small enough to keep the
// working set in cache.
const DefaultBlockSize = 1 << 20

// WorkersOr is the goroutines p allows a reader that would use n.
func (p Paths) WorkersOr(n int) int {
	if p.Workers > 0 {
		return min(p.Workers, n)
	}
	return n
}

// Block is the block size p asks for (DefaultBlockSize unless set).
func (p Paths) Block() int {
	if p.BlockSize > 0 {
		return p.BlockSize
	}
	return DefaultBlockSize
}

// Remote opens the paths that are not files (see Options.Remote).
type Remote interface {
	Claims(path string) bool
	Open(path string) (io.ReadCloser, error)
}

// HopAttr returns KEY when HopBy is attr:KEY.
func (o *Options) HopAttr() string {
	if k, ok := strings.CutPrefix(o.HopBy, "attr:"); ok {
		return k
	}
	return ""
}

// RecordError is a bad record: where it is and why it was skipped.
type RecordError struct {
	File   string
	Line   int64  // 1-based line, or 0 when the format has no lines
	Index  int64  // 1-based record index (trace formats: with the line), or 0
	Reason string // short, stable, used as the skipped_by_reason key
	Detail string
}

func (e *RecordError) Error() string {
	pos := e.File
	switch {
	case e.Line > 0 && e.Index > 0: // a span of a trace format: its line and its number
		pos = fmt.Sprintf("%s:%d: span %d", e.File, e.Line, e.Index)
	case e.Line > 0:
		pos = fmt.Sprintf("%s:%d", e.File, e.Line)
	case e.Index > 0:
		pos = fmt.Sprintf("%s: span %d", e.File, e.Index)
	}
	if e.Detail != "" {
		// A detail may quote the record: never a credential in it.
		return pos + ": " + e.Reason + ": " + secret.Scrub(e.Detail)
	}
	return pos + ": " + e.Reason
}

// Stats reconcile what was read: Read = Used + Skipped + Filtered,
// Skipped is the sum of SkippedByReason and Filtered the sum of
// FilteredByReason.
type Stats struct {
	Files           []string
	Formats         map[string]string // file → format used
	Read            int64
	Used            int64
	Skipped         int64
	SkippedByReason map[string]int64
	Errors          []*RecordError // the first MaxErrors bad records
	// Filtered counts the spans --since, --until, --hops and
	// --exclude-hops left out: good records, not counted as skipped and
	// never listed one by one.
	Filtered         int64
	FilteredByReason map[string]int64
	// Ignored counts the spans kept although a value of an optional
	// field could not be read (an attempt "x", a weight of -1): the span
	// goes on without it. IgnoredByField counts by field, IgnoredExamples
	// holds the first MaxErrors, positioned.
	Ignored         int64
	IgnoredByField  map[string]int64
	IgnoredExamples []*RecordError
	// Unmapped lists the --map keys that no record of a file had
	// ("FILE: FIELD=KEY"): a note each, an error under --strict.
	Unmapped []string
	// Passed lists the files found under a directory that were not read,
	// each with the reason (Tempo bookkeeping, hidden, not a regular
	// file…), so that every file is either read or accounted for.
	Passed []PassedFile
	// Notes say what was passed over on purpose, or what the reader
	// noticed about the data (units, values ignored), for the user.
	Notes []string

	filtered idSet // hashes of the spans the filters left out
}

// PassedFile is a file found under a directory that was not read.
type PassedFile struct {
	File   string
	Reason string
	// Strict is true when --strict must fail on it: the file may hold
	// spans (a compacted Tempo block's data, a file that cannot be
	// opened), as opposed to bookkeeping or hidden files.
	Strict bool
}

func (st *Stats) skip(e *RecordError, max int) {
	st.Read++
	st.Skipped++
	if st.SkippedByReason == nil {
		st.SkippedByReason = map[string]int64{}
	}
	st.SkippedByReason[e.Reason]++
	if len(st.Errors) < max {
		// Kept errors reach reports and summaries: a detail quoting
		// the record keeps no credential (package secret).
		e.Detail = secret.Scrub(e.Detail)
		st.Errors = append(st.Errors, e)
	}
}

// Filter counts a span a filter left out and remembers its id.
func (st *Stats) Filter(reason string, id uint64) {
	st.Read++
	st.Filtered++
	if st.FilteredByReason == nil {
		st.FilteredByReason = map[string]int64{}
	}
	st.FilteredByReason[reason]++
	if id != 0 {
		st.filtered.add(id)
	}
}

// Ignore counts the values of optional fields a kept span lost.
func (st *Stats) Ignore(file string, line, index int64, soft []SoftErr, max int) {
	if len(soft) == 0 {
		return
	}
	st.Ignored++
	if st.IgnoredByField == nil {
		st.IgnoredByField = map[string]int64{}
	}
	for _, e := range soft {
		st.IgnoredByField[e.Field]++
		if len(st.IgnoredExamples) < max {
			st.IgnoredExamples = append(st.IgnoredExamples, &RecordError{File: file, Line: line, Index: index, Reason: e.Field, Detail: secret.Scrub(ShortDetail(e.Detail))})
		}
	}
}

// finish adds the notes that sum up the whole read.
func (st *Stats) finish() {
	if st.Ignored > 0 {
		fields := make([]string, 0, len(st.IgnoredByField))
		for f := range st.IgnoredByField {
			fields = append(fields, f)
		}
		sort.Slice(fields, func(i, j int) bool {
			a, b := st.IgnoredByField[fields[i]], st.IgnoredByField[fields[j]]
			if a != b {
				return a > b
			}
			return fields[i] < fields[j]
		})
		var parts []string
		for _, f := range fields {
			parts = append(parts, fmt.Sprintf("%s ×%d", f, st.IgnoredByField[f]))
		}
		n := fmt.Sprintf("%d spans were kept without a value tailscope could not read (%s)", st.Ignored, strings.Join(parts, ", "))
		if len(st.IgnoredExamples) > 0 {
			n += "; first: " + st.IgnoredExamples[0].Error()
		}
		st.Notes = append(st.Notes, n)
	}
}

// FilteredParents counts the spans whose parent is not among spans (in
// the same trace) because --since, --until, --hops or --exclude-hops left
// it out: orphans the filters made, not a sign of bad data. known is
// false when more spans were filtered than are remembered (see idSet):
// the count is then a lower bound.
func (st *Stats) FilteredParents(spans []*span.Span) (n int, known bool) {
	if st.Filtered == 0 {
		return 0, true
	}
	present := make(map[uint64]struct{}, len(spans))
	for _, s := range spans {
		if s.SpanID != "" {
			present[SpanKey(s.TraceID, s.SpanID)] = struct{}{}
		}
	}
	for _, s := range spans {
		if s.ParentID == "" || s.ParentID == s.SpanID {
			continue
		}
		k := SpanKey(s.TraceID, s.ParentID)
		if _, ok := present[k]; ok {
			continue
		}
		if st.filtered.has(k) {
			n++
		}
	}
	return n, !st.filtered.full
}

// Reasons for skipping that do not come from a decoder.
const (
	ReasonOutsideWindow = "outside --since/--until"
	ReasonExcluded      = "in an --exclude-window"
	ReasonHopFiltered   = "hop filtered out"
	ReasonNoHop         = "missing hop"
)

func NewStats(files []string) *Stats {
	return &Stats{Files: files, Formats: map[string]string{}, SkippedByReason: map[string]int64{}, FilteredByReason: map[string]int64{}}
}

// FilteredIDs returns the hashes of the spans the filters left out (see
// FilteredParents), ascending, and whether some were not remembered.
func (st *Stats) FilteredIDs() (ids []uint64, full bool) {
	st.filtered.has(0) // sorts
	return st.filtered.ids, st.filtered.full
}

// SetFilteredIDs restores what FilteredIDs returned.
func (st *Stats) SetFilteredIDs(ids []uint64, full bool) {
	st.filtered = idSet{ids: ids, full: full}
}

// Finish adds the notes Read adds at its end from the totals, to
// statistics rebuilt from their parts (a decoded summary): Notes must be
// ReadNotes then.
func (st *Stats) Finish() { st.finish() }

// ReadNotes are the notes of the read without those Read adds at its end
// from the totals (which a merge writes again from the merged totals).
func (st *Stats) ReadNotes() []string {
	if st.Ignored > 0 && len(st.Notes) > 0 {
		return st.Notes[:len(st.Notes)-1]
	}
	return st.Notes
}

// Window is [From, Until) in unix ns.
type Window struct{ From, Until int64 }

// Holds says whether t lies in the window.
func (w Window) Holds(t int64) bool { return t >= w.From && t < w.Until }

// SinceOn and UntilOn say whether the window's ends apply.
func (o Options) SinceOn() bool { return o.HasSince || o.Since != 0 }

// UntilOn: see SinceOn.
func (o Options) UntilOn() bool { return o.HasUntil || o.Until != 0 }
