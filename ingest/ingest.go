// Package ingest reads span logs — files, directories, globs or stdin, plain,
// gzip or zstd — and turns every record into a canonical span.Span.
//
// It streams: a decoder hands each span to a callback as soon as it is
// decoded, so no input is ever held whole in memory. Bad records never stop a
// run: each is skipped with its position and a reason, and counted, so that a
// report can reconcile read = used + skipped (docs/DESIGN.md §10). Only I/O errors and
// unreadable files end a run with an error.
//
// The package knows formats and nothing about statistics: it must not
// compute percentiles or decide outcomes beyond what a record states.
package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/tailscope/tailscope/span"
)

// Formats the reader knows, in the order --help lists them.
var Formats = []string{"jsonl", "otlp", "jaeger", "zipkin", "csv", "parquet", "arrow"}

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
	// Progress, when set, is called as input is consumed with the bytes
	// read so far and the total size of the inputs (0 when unknown, e.g.
	// stdin), for a progress display; it is called often and must be cheap,
	// and it may run on a reading goroutine other than the one calling emit.
	Progress func(read, total int64)
	prog     *progress
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
	// ns; 0 means unbounded).
	Since, Until int64
	// Hops and ExcludeHops filter by hop name after derivation.
	Hops, ExcludeHops *regexp.Regexp
	// Stdin is read for the path "-".
	Stdin io.Reader
	// MaxErrors bounds how many positioned errors are kept (all are counted).
	MaxErrors int
	// Borrowed lets a reader hand out spans whose id strings (TraceID,
	// SpanID, ParentID) alias its own buffers, valid only during the emit
	// call: the flat JSON-lines reader then allocates nothing per span.
	// An emit that keeps a span must clone those strings. Off by default.
	Borrowed bool
	// Fork, when set, lets a reader that decodes on several goroutines
	// consume spans there instead of calling emit (see Fork in jsonl.go).
	Fork Fork
	// OnFile, when set, is called before the spans of each file are
	// emitted, with its index in Stats.Files (a partial summary records
	// which file each sampled span came from).
	OnFile func(i int)
}

// HopAttr returns KEY when HopBy is attr:KEY.
func (o *Options) HopAttr() string {
	if k, ok := strings.CutPrefix(o.HopBy, "attr:"); ok {
		return k
	}
	return ""
}

// ValidHopBy reports whether h is a --hop-by value tailscope understands.
func ValidHopBy(h string) bool {
	switch h {
	case "", "hop", "service", "name", "service+name", "peer":
		return true
	}
	k, ok := strings.CutPrefix(h, "attr:")
	return ok && k != ""
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
		return pos + ": " + e.Reason + ": " + e.Detail
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
		st.Errors = append(st.Errors, e)
	}
}

// filter counts a span a filter left out and remembers its id.
func (st *Stats) filter(reason string, id uint64) {
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

// ignore counts the values of optional fields a kept span lost.
func (st *Stats) ignore(file string, line, index int64, soft []softErr, max int) {
	if len(soft) == 0 {
		return
	}
	st.Ignored++
	if st.IgnoredByField == nil {
		st.IgnoredByField = map[string]int64{}
	}
	for _, e := range soft {
		st.IgnoredByField[e.field]++
		if len(st.IgnoredExamples) < max {
			st.IgnoredExamples = append(st.IgnoredExamples, &RecordError{File: file, Line: line, Index: index, Reason: e.field, Detail: shortDetail(e.detail)})
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
func (st *Stats) FilteredParents(spans []span.Span) (n int, known bool) {
	if st.Filtered == 0 {
		return 0, true
	}
	present := make(map[uint64]struct{}, len(spans))
	for i := range spans {
		if spans[i].SpanID != "" {
			present[spanKey(spans[i].TraceID, spans[i].SpanID)] = struct{}{}
		}
	}
	for i := range spans {
		s := &spans[i]
		if s.ParentID == "" || s.ParentID == s.SpanID {
			continue
		}
		k := spanKey(s.TraceID, s.ParentID)
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
	ReasonHopFiltered   = "hop filtered out"
	ReasonNoHop         = "missing hop"
)

// Read decodes every path and calls emit for each span kept. The *Span is
// only valid during the call; emit copies what it keeps.
func Read(paths []string, opt Options, emit func(*span.Span)) (*Stats, error) {
	if opt.MaxRecord <= 0 {
		opt.MaxRecord = DefaultMaxRecord
	}
	if opt.MaxErrors <= 0 {
		opt.MaxErrors = 20
	}
	if opt.Format == "" {
		opt.Format = "auto"
	}
	if opt.Format != "auto" && decoders[opt.Format] == nil {
		return nil, fmt.Errorf("unknown --input %q (want auto, %s)", opt.Format, strings.Join(Formats, ", "))
	}
	files, passed, notes, err := expand(paths)
	if err != nil {
		return nil, err
	}
	st := newStats(files)
	st.Passed, st.Notes = passed, notes
	opt.prog = newProgress(opt.Progress, files)
	for i, f := range files {
		if opt.OnFile != nil {
			opt.OnFile(i)
		}
		if err := readFile(f, &opt, st, emit); err != nil {
			return st, err
		}
	}
	st.finish()
	return st, nil
}

func newStats(files []string) *Stats {
	return &Stats{Files: files, Formats: map[string]string{}, SkippedByReason: map[string]int64{}, FilteredByReason: map[string]int64{}}
}

// Source is one opened input, decompressed, with its format known.
type Source struct {
	Name string
	// R reads the decompressed content, buffered, from its first byte.
	R *bufio.Reader
	// File is the underlying file when the input is a plain (uncompressed)
	// regular file, for decoders that need random access (Parquet, Arrow
	// files); nil otherwise.
	File *os.File
	opt  *Options
	st   *Stats
	emit func(*span.Span)
	// defaultHopBy is the decoder's choice when --hop-by is not given.
	hopDefault string
}

// Options returns the read options.
func (s *Source) Options() *Options { return s.opt }

// SetDefaultHopBy sets how hops are named when the user gave no --hop-by.
func (s *Source) SetDefaultHopBy(h string) { s.hopDefault = h }

// Skip records a bad record.
func (s *Source) Skip(line, index int64, reason, detail string) {
	s.st.skip(&RecordError{File: s.Name, Line: line, Index: index, Reason: reason, Detail: shortDetail(detail)}, s.opt.MaxErrors)
}

// Emit validates a decoded span, derives its hop, applies the filters and
// hands it on. line/index position the span for error messages. It
// reports whether the span was used (not skipped, not filtered).
func (s *Source) Emit(sp *span.Span, line, index int64) bool {
	if reason, detail := s.accept(sp); reason != "" {
		s.reject(sp, line, index, reason, detail)
		return false
	}
	s.st.Read++
	s.st.Used++
	s.emit(sp)
	return true
}

// reject counts a span accept turned away: filtered, or skipped.
func (s *Source) reject(sp *span.Span, line, index int64, reason, detail string) {
	if isFilter(reason) {
		s.st.filter(reason, filteredKey(sp))
		return
	}
	s.Skip(line, index, reason, detail)
}

// emitSoft is Emit for a record that lost values of optional fields: they
// are counted when the span is used.
func (s *Source) emitSoft(sp *span.Span, line, index int64, soft []softErr) {
	if s.Emit(sp, line, index) && len(soft) > 0 {
		s.st.ignore(s.Name, line, index, soft, s.opt.MaxErrors)
	}
}

// accept is Emit without the counting and the hand-off: it validates sp,
// derives its hop, applies the filters and the outcome rule, and says why
// sp is skipped or filtered (empty reason: kept; see isFilter). It reads only the options, so a
// reader may call it on its decoding goroutines (see Fork).
func (s *Source) accept(sp *span.Span) (reason, detail string) {
	if reason, detail := validate(sp); reason != "" {
		return reason, detail
	}
	hopBy := s.opt.HopBy
	if hopBy == "" {
		hopBy = s.hopDefault
	}
	sp.Hop = DeriveHop(sp, hopBy)
	if sp.Hop == "" {
		return ReasonNoHop, "no " + hopBy + " to name the hop by (see --hop-by)"
	}
	if (s.opt.Since != 0 && sp.Start < s.opt.Since) || (s.opt.Until != 0 && sp.Start >= s.opt.Until) {
		return ReasonOutsideWindow, ""
	}
	if (s.opt.Hops != nil && !s.opt.Hops.MatchString(sp.Hop)) || (s.opt.ExcludeHops != nil && s.opt.ExcludeHops.MatchString(sp.Hop)) {
		return ReasonHopFiltered, ""
	}
	if sp.Weight == 0 {
		sp.Weight = 1
	}
	// One rule for every format: a span that does not state its outcome
	// failed when its HTTP code says the server failed or throttled.
	if sp.Status == span.Unset && (sp.Code == 429 || (sp.Code >= 500 && sp.Code < 600)) {
		sp.Status = span.Error
	}
	return "", ""
}

// validate checks a span before analysis sees it.
func validate(sp *span.Span) (reason, detail string) {
	switch {
	case sp.Duration < 0:
		return "negative duration", fmt.Sprintf("%d ns", sp.Duration)
	case sp.Start < 0:
		return "negative start", fmt.Sprintf("%d ns", sp.Start)
	case sp.Start > 0 && sp.Start+sp.Duration < sp.Start:
		return "end overflows", ""
	case sp.Weight < 0:
		return "negative weight", ""
	}
	return "", ""
}

// DeriveHop names the bucket of a span under a --hop-by mode. For attr:KEY
// the decoder has already put the attribute's value in sp.Hop.
func DeriveHop(sp *span.Span, hopBy string) string {
	switch hopBy {
	case "", "hop":
		if sp.Hop != "" {
			return sp.Hop
		}
		return joinServiceName(sp)
	case "service":
		return sp.Service
	case "name":
		return sp.Name
	case "service+name":
		return joinServiceName(sp)
	case "peer":
		return sp.Peer
	}
	return sp.Hop
}

// joinServiceName is "service name", with the kind appended for the caller
// side of a call so that a CLIENT span and the SERVER span of the same
// operation stay in different buckets.
func joinServiceName(sp *span.Span) string {
	h := sp.Name
	if sp.Service != "" {
		if h == "" {
			h = sp.Service
		} else {
			h = sp.Service + " " + sp.Name
		}
	}
	switch sp.Kind {
	case "client", "producer", "consumer":
		if h != "" {
			h += " (" + sp.Kind + ")"
		}
	}
	return h
}

// decoders are registered by the files that implement them.
var decoders = map[string]func(*Source) error{}

func register(format string, dec func(*Source) error) { decoders[format] = dec }

// maxZstdWindow is the largest zstd window accepted: what zstd --long=31,
// the command's largest, writes.
const maxZstdWindow = 1 << 31

var (
	magicGzip = []byte{0x1f, 0x8b}
	magicZstd = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

func readFile(name string, opt *Options, st *Stats, emit func(*span.Span)) error {
	if name == "-" {
		if opt.Stdin == nil {
			return errors.New("<stdin>: no standard input")
		}
		defer opt.prog.fileDone()
		return readStream("<stdin>", opt.prog.wrap(opt.Stdin, 0), nil, opt, st, emit)
	}
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	defer opt.prog.fileDone()
	return readStream(name, opt.prog.wrap(f, fileSize(f)), f, opt, st, emit)
}

// ReadStream decodes one already-open input named name (for messages). It
// is how embedded samples and tests feed the reader without a file.
func ReadStream(name string, r io.Reader, opt Options, emit func(*span.Span)) (*Stats, error) {
	if opt.MaxRecord <= 0 {
		opt.MaxRecord = DefaultMaxRecord
	}
	if opt.MaxErrors <= 0 {
		opt.MaxErrors = 20
	}
	if opt.Format == "" {
		opt.Format = "auto"
	}
	st := newStats([]string{name})
	err := readStream(name, r, nil, &opt, st, emit)
	st.finish()
	return st, err
}

func readStream(display string, raw io.Reader, file *os.File, opt *Options, st *Stats, emit func(*span.Span)) error {
	br := bufio.NewReaderSize(raw, 1<<16)
	head, _ := br.Peek(4)
	var closer io.Closer
	switch {
	case bytes.HasPrefix(head, magicGzip):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("%s: gzip: %v", display, err)
		}
		closer, file = zr, nil
		br = bufio.NewReaderSize(zr, 1<<16)
	case bytes.HasPrefix(head, magicZstd):
		// zstd --long (up to --long=31) writes frames whose window is
		// over the library's default limit of 512 MiB: allow those, and
		// no more (a window is memory the decoder may need).
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(maxZstdWindow))
		if err != nil {
			return fmt.Errorf("%s: zstd: %v", display, err)
		}
		defer zr.Close()
		file = nil
		br = bufio.NewReaderSize(zr, 1<<16)
	}
	if closer != nil {
		defer closer.Close()
	}
	format := opt.Format
	if format == "auto" {
		f, err := Sniff(br)
		if err != nil {
			return fmt.Errorf("%s: %v", display, err)
		}
		format = f
	}
	dec := decoders[format]
	if dec == nil {
		return fmt.Errorf("%s: the %s reader is not available in this build", display, format)
	}
	st.Formats[display] = format
	src := &Source{Name: display, R: br, File: file, opt: opt, st: st, emit: emit, hopDefault: "service+name"}
	if err := dec(src); err != nil {
		return fmt.Errorf("%s: %w", display, err)
	}
	return nil
}
