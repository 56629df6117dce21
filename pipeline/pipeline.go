// Package pipeline is what a command runs: it reads span logs (files,
// folders, URLs of a tracing backend, partial summaries) into the per-hop
// analysis state over all spans, the spans kept whole for call trees and
// replay, the trees built from them, and what was read; then it hands them
// to the analysis (Logs.Report) or the recommendation (Logs.Recommend). It
// is the one path from input to a report, and the one package that knows
// the order of the stages: cmd/tailscope only parses flags, calls it and
// renders, and demo and tests take the same path.
//
// Spans stream from the reader into an analyze.Accum, never into one big
// slice: per-hop statistics are kept over all spans in bounded memory, and
// Spans is every span while the logs fit in the sample size, a
// deterministic sample of whole traces beyond (the report then says so).
package pipeline

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/recommend"
	"github.com/tailscope/tailscope/span"
	"github.com/tailscope/tailscope/summary"
)

// Progress is told what has been read, for a progress display.
type Progress interface {
	// Bytes reports the input consumed so far, of total (0 when unknown).
	Bytes(read, total int64)
	// Spans counts n spans read (in batches from the reader's goroutines,
	// one at a time on the ordered path).
	Spans(n int64)
}

// Options say how to read. The messages of a read (notes, warnings,
// errors) name the settings they are about by Ingest.Names.
type Options struct {
	Ingest ingest.Options
	// SampleSpans is how many spans are kept whole (see analyze.NewAccum).
	SampleSpans int
	// MaxHops bounds the distinct hops (analyze.Accum.MaxHops; 0 for
	// analyze.DefaultMaxHops): past it the read ends with an
	// *analyze.HopLimitError.
	MaxHops int
	// Progress, when not nil, is told what has been read.
	Progress Progress
	// Pushdown, when not nil, computes the analysis state of the paths
	// it claims where their spans are (see Pushdown); PushdownOnly makes
	// its declining an error instead of a reason to pull.
	Pushdown     Pushdown
	PushdownOnly bool
	// Note, when not nil, is told at once what the read should say
	// before it ends: why a push-down was declined (the pull that
	// follows can take long).
	Note func(string)
}

// Pushdown is a source that computes the analysis state of a window on
// the server that holds its spans (a database: package source/clickhouse)
// instead of handing the readers every span: the counts, digests,
// examples, attempt times and attribution over all spans, and the trace
// sample pulled whole. It must give the state the readers would keep
// reading the same spans with the same options, or decline.
type Pushdown interface {
	// Claims reports whether path is one it may compute.
	Claims(path string) bool
	// State computes path's state read with o and a sample of
	// sampleSpans spans (the state's Accum is what Read would have
	// filled), and what the read amounts to (files, formats, counts,
	// notes). declined, when not "", says why it cannot compute this read
	// exactly: the path is then read by the readers (pulled).
	State(path string, o ingest.Options, sampleSpans int) (s *analyze.State, st *ingest.Stats, declined string, err error)
}

// Logs are what a command works on.
type Logs struct {
	// Spans are the spans kept whole (every span, or a sample of whole
	// traces), by pointer (a read's are built in pieces: see
	// analyze.Accum.Kept); Requests and Problems are the trees built
	// from them.
	Spans    []*span.Span
	Requests []*span.Request
	Problems span.Problems
	// flat are FromSpans' spans, which Spans points into.
	flat []span.Span
	// Stats are what the reader saw: files, counts, skips by reason.
	Stats *ingest.Stats
	acc   *analyze.Accum
	// hopDef is what a hop is in acc (summary.HopDefOf).
	hopDef string
	// names is the read's Options.Ingest.Names, for the report's warnings.
	names option.Names
}

// Read reads paths: logs, and partial summaries (see package summary),
// which are recognised by their first bytes and merged with what the logs
// give. On a read error the Logs still carry the reader's statistics so
// far.
func Read(paths []string, opt Options) (*Logs, error) {
	l, err := read(paths, opt)
	if err != nil {
		return l, err
	}
	l.names = opt.Ingest.Names
	collectAfterRead()
	l.Spans = l.acc.Kept()
	l.Requests, l.Problems = span.AssemblePointers(l.Spans)
	return l, nil
}

// collectAfterRead runs a garbage collection between the read and the
// report, before the sample's spans are built. The collector's goal for
// the heap is twice what was live at the last collection, and the last
// one of a large read runs with the reader's pages, batches and Parts
// still in flight: on a million flat Parquet spans it found 47-74 MB
// live, against 32-41 MB once the read is over, and the report (trees,
// replays) grew the heap towards twice the former before the next
// collection. Collected here, the report's goal is twice what it keeps,
// and the read's memory is free for the sample's spans, which are built
// in pieces to fit in it (analyze.Accum.Kept). It costs a collection
// more (two, when the lower goal brings one in the report), each marking
// only what the report keeps, mostly pointer-free (digests, attempt
// times, the sample's rows): 5-10 ms of CPU on that million.
func collectAfterRead() { runtime.GC() }

// Summarize reads paths (logs and summaries, as Read) into the summary of
// all of them.
func Summarize(paths []string, opt Options) (*summary.Summary, error) {
	l, err := read(paths, opt)
	if err != nil {
		return nil, err
	}
	return &summary.Summary{Accum: l.acc, Stats: l.Stats, HopDef: l.hopDef}, nil
}

// SummarizeStream reads one already-open input named name (sniffed and
// decompressed as a file is) into its summary: for readers of files that
// are not on a local disk, such as a Beam pipeline reading from object
// storage. It is Summarize of a file of that name with that content.
func SummarizeStream(name string, r io.Reader, opt Options) (*summary.Summary, error) {
	acc := analyze.NewAccum(opt.SampleSpans)
	acc.MaxHops, acc.Names = opt.MaxHops, opt.Ingest.Names
	iopt := opt.Ingest
	iopt.Borrowed = true
	st, err := ingest.ReadStream(name, r, iopt, accumSink{acc: acc})
	if err == nil {
		err = acc.HopLimit()
	}
	if err != nil {
		return nil, err
	}
	return &summary.Summary{Accum: acc, Stats: st, HopDef: summary.HopDefOf(opt.Ingest.HopBy, opt.Ingest.Map)}, nil
}

// read reads paths into l.acc and l.Stats.
//
// A summary holds hops, not spans: it cannot be grouped again by another
// --hop-by or --map (an error when they differ from the summary's, or from
// the logs read beside it), nor filtered by time (its spans' times are not
// kept) or by hop after the fact; the filters apply to the logs read here,
// and a note says the summaries were taken as they were made.
func read(paths []string, opt Options) (*Logs, error) {
	l, declined, err := pushdown(paths, opt)
	if l != nil || err != nil {
		return l, err
	}
	if declined != "" && opt.Note != nil {
		opt.Note(declined)
	}
	sums, rest, err := summaries(paths)
	if err != nil {
		return &Logs{Stats: &ingest.Stats{}}, err
	}
	def := summary.HopDefOf(opt.Ingest.HopBy, opt.Ingest.Map)
	if len(sums) == 0 {
		l, err := readLogs(rest, opt)
		if l != nil {
			l.hopDef = def
		}
		return l, err
	}
	var s *summary.Summary
	if len(rest) > 0 {
		l, err := readLogs(rest, opt)
		if err != nil {
			return l, err
		}
		s = &summary.Summary{Accum: l.acc, Stats: l.Stats, HopDef: def}
	}
	m, err := summary.MergeFilesMax(sums, opt.MaxHops, opt.Ingest.Names)
	if err != nil {
		return &Logs{Stats: &ingest.Stats{}}, err
	}
	if s == nil && def != summary.HopDefOf("", nil) && m.HopDef != "" && m.HopDef != def {
		return &Logs{Stats: &ingest.Stats{}}, fmt.Errorf("%s: %w: made with %s, read with %s; a summary holds hops, not spans to group again: summarize the logs with %s",
			strings.Join(sums, ", "), summary.ErrHopDef, m.HopDef, def, def)
	}
	if s != nil {
		if m, err = summary.Merge(s, m); err != nil {
			return &Logs{Stats: &ingest.Stats{}}, err
		}
	}
	if filters := filterNames(opt.Ingest); len(filters) > 0 {
		m.Stats.Notes = append(m.Stats.Notes, fmt.Sprintf("%s applied to the logs read here, not to the summaries (%s), which were taken as they were made: a summary keeps no span times and its hops' spans are merged; give the filters to summarize",
			strings.Join(filters, ", "), strings.Join(sums, ", ")))
	}
	return &Logs{acc: m.Accum, Stats: m.Stats, hopDef: m.HopDef}, nil
}

// pushdown reads paths through opt.Pushdown when it claims them: nil
// Logs when it does not, or declined (then declined says why, and the
// paths are for the readers), or when PushdownOnly turns a decline into
// an error. One path is pushed down alone: the state of a window is not
// merged with other inputs' here.
func pushdown(paths []string, opt Options) (*Logs, string, error) {
	p := opt.Pushdown
	if p == nil {
		return nil, "", nil
	}
	var claimed []string
	for _, path := range paths {
		if p.Claims(path) {
			claimed = append(claimed, path)
		}
	}
	if len(claimed) == 0 {
		return nil, "", nil
	}
	decline := func(why string) (*Logs, string, error) {
		msg := fmt.Sprintf("%s: not computed on the server (%s): every span of the window is pulled", strings.Join(claimed, ", "), why)
		if opt.PushdownOnly {
			return &Logs{Stats: &ingest.Stats{}}, "", fmt.Errorf("%s: cannot be computed on the server: %s", strings.Join(claimed, ", "), why)
		}
		return nil, msg, nil
	}
	if len(paths) > 1 {
		return decline("it is read with other inputs, and only a window read alone is pushed down")
	}
	s, st, why, err := p.State(paths[0], opt.Ingest, opt.SampleSpans)
	if err != nil {
		return &Logs{Stats: &ingest.Stats{}}, "", err
	}
	if why != "" {
		return decline(why)
	}
	maxHops := opt.MaxHops
	if maxHops <= 0 {
		maxHops = analyze.DefaultMaxHops
	}
	if len(s.Hops) > maxHops {
		return decline(fmt.Sprintf("%d hops, more than %s %d", len(s.Hops), opt.Ingest.Names.Of(option.MaxHops), maxHops))
	}
	acc, err := analyze.FromState(s)
	if err != nil {
		return decline(fmt.Sprintf("the server's state does not check: %v", err))
	}
	acc.MaxHops, acc.Names = opt.MaxHops, opt.Ingest.Names
	return &Logs{acc: acc, Stats: st, hopDef: summary.HopDefOf(opt.Ingest.HopBy, opt.Ingest.Map)}, "", nil
}

// filterNames names the filters o asks for (by o.Names).
func filterNames(o ingest.Options) []string {
	var out []string
	for _, f := range []struct {
		on  bool
		opt option.Option
	}{{o.SinceOn(), option.Since}, {o.UntilOn(), option.Until}, {len(o.Exclude) > 0, option.ExcludeWindow},
		{o.Hops != nil, option.Hops}, {o.ExcludeHops != nil, option.ExcludeHops}} {
		if f.on {
			out = append(out, o.Names.Of(f.opt))
		}
	}
	return out
}

// summaries picks out of paths the partial summaries, by their first
// bytes: files named, and the matches of a glob that matches some (its
// other matches are then read as logs). Directories and everything else go
// to the log readers.
func summaries(paths []string) (sums, rest []string, err error) {
	for _, p := range paths {
		if p == "-" {
			rest = append(rest, p)
			continue
		}
		if _, err := os.Stat(p); err != nil && strings.ContainsAny(p, "*?[") {
			m, gerr := filepath.Glob(p)
			var s, r []string
			for _, x := range m {
				if strings.HasPrefix(filepath.Base(x), ".") && !strings.HasPrefix(filepath.Base(p), ".") {
					continue
				}
				if isSummary(x) {
					s = append(s, x)
				} else {
					r = append(r, x)
				}
			}
			if gerr != nil || len(s) == 0 {
				rest = append(rest, p) // the log readers say what is wrong with it
				continue
			}
			sums, rest = append(sums, s...), append(rest, r...)
			continue
		}
		if isSummary(p) {
			sums = append(sums, p)
		} else {
			rest = append(rest, p)
		}
	}
	return sums, rest, nil
}

// isSummary reports whether path is a regular file that starts as a
// summary does.
func isSummary(path string) bool {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(summary.Magic))
	n, _ := io.ReadFull(f, head)
	return summary.Is(head[:n])
}

// readLogs reads log files (no summaries) into an accumulator.
//
// When every input can be read twice, the readers may tell the
// accumulator how many spans are coming, so that its trace sample skips
// the levels it would only pass through (analyze.Accum.Expect). That
// head start is checked at the end; in the rare case it missed (a few
// huge traces hold most spans, or a size estimate was far off), the
// inputs are read again without it, so the result is always the one
// reading level by level gives.
func readLogs(paths []string, opt Options) (*Logs, error) {
	head := rereadable(paths)
	for {
		l, err := readLogsOnce(paths, opt, head)
		if err != nil || l.acc.Held() {
			return l, err
		}
		if testHookReread != nil {
			testHookReread()
		}
		head = false
	}
}

// testHookReread, when set by a test, is called before a second read.
var testHookReread func()

// rereadable reports whether every path names regular files or
// directories (not standard input, a pipe or a device), which a second
// read finds as they were.
func rereadable(paths []string) bool {
	for _, p := range paths {
		if p == "-" {
			return false
		}
		matches := []string{p}
		if _, err := os.Stat(p); err != nil {
			if matches, _ = filepath.Glob(p); len(matches) == 0 {
				return false
			}
		}
		for _, m := range matches {
			fi, err := os.Stat(m)
			if err != nil || !(fi.Mode().IsRegular() || fi.IsDir()) {
				return false
			}
		}
	}
	return true
}

// readLogsOnce is one read of readLogs, with the head start or without.
func readLogsOnce(paths []string, opt Options, head bool) (*Logs, error) {
	l := &Logs{acc: analyze.NewAccum(opt.SampleSpans)}
	l.acc.MaxHops, l.acc.Names = opt.MaxHops, opt.Ingest.Names
	iopt := opt.Ingest
	// The accumulator copies what it keeps, so the reader may lend its
	// buffers: no allocation per span on the JSON-lines path.
	iopt.Borrowed = true
	st, err := ingest.Read(paths, iopt, newAccumSink(l.acc, opt.Progress, head))
	l.Stats = st
	if err == nil {
		err = l.acc.HopLimit()
	}
	return l, err
}

// FromSpans makes Logs of spans already in memory, all kept whole (the
// embedded sample, tests), with st what was read to get them.
func FromSpans(spans []span.Span, st *ingest.Stats) *Logs {
	l := &Logs{Spans: make([]*span.Span, len(spans)), Stats: st, flat: spans}
	for i := range spans {
		l.Spans[i] = &spans[i]
	}
	l.Requests, l.Problems = span.Assemble(spans)
	return l
}

// Report analyses the logs — per-hop numbers over all spans, the parts
// built on trees over Spans — and recommends on them, and records in the
// report what was read: Recommend without the policy.
func (l *Logs) Report(opt analyze.Options) *analyze.Report {
	rep, _ := l.Recommend(opt)
	return rep
}

// Recommend is Report, and the recommended policy (with each hop's basis
// as its comment: what recommend writes).
func (l *Logs) Recommend(opt analyze.Options) (*analyze.Report, *policy.Policy) {
	var rep *analyze.Report
	var p *policy.Policy
	if l.acc == nil {
		rep, p = recommend.Run(l.flat, l.Requests, l.Problems, opt)
	} else {
		rep, p = recommend.RunAccum(l.acc, l.Requests, l.Problems, opt)
	}
	l.fill(rep)
	return rep, p
}

// fill copies the read statistics into a report.
func (l *Logs) fill(rep *analyze.Report) {
	for _, f := range l.Stats.Files {
		name := f
		if f == "-" {
			name = "<stdin>"
		}
		rep.Inputs = append(rep.Inputs, analyze.Input{File: name, Format: l.Stats.Formats[name]})
	}
	for _, p := range l.Stats.Passed {
		rep.Inputs = append(rep.Inputs, analyze.Input{File: p.File, SkippedReason: p.Reason})
	}
	rep.Read, rep.Spans, rep.Skipped = l.Stats.Read, l.Stats.Used, l.Stats.Skipped
	rep.SkippedByReason = l.Stats.SkippedByReason
	rep.Filtered, rep.FilteredByReason = l.Stats.Filtered, l.Stats.FilteredByReason
	rep.Ignored, rep.IgnoredByField = l.Stats.Ignored, l.Stats.IgnoredByField
	rep.Notes = l.Stats.Notes
	for _, x := range l.Stats.Errors[:min(len(l.Stats.Errors), 5)] {
		rep.SkipExamples = append(rep.SkipExamples, x.Error())
	}
	l.filteredOrphans(rep)
}

// filteredOrphans keeps the orphan warning for orphans of bad data: a span
// whose parent --since, --until, --hops or --exclude-hops left out is
// reported as such, not as a sign that the logs are broken.
func (l *Logs) filteredOrphans(rep *analyze.Report) {
	if l.Stats.Filtered == 0 || l.Problems.Orphans == 0 {
		return
	}
	n, known := l.Stats.FilteredParents(l.Spans)
	n = min(n, l.Problems.Orphans)
	rest := l.Problems.Orphans - n
	var out []analyze.Warning
	for _, w := range rep.Warnings {
		if w.Code != "orphan-span" {
			out = append(out, w)
			continue
		}
		if n > 0 {
			out = append(out, analyze.Warning{Code: "filtered-parent", Message: fmt.Sprintf(
				"%d spans have a parent that %s, %s, %s or %s left out; they were treated as top-level calls", n,
				l.names.Of(option.Since), l.names.Of(option.Until), l.names.Of(option.Hops), l.names.Of(option.ExcludeHops))})
		}
		if rest > 0 {
			w.Message = fmt.Sprintf("%d spans name a parent that is not in the logs; they were treated as top-level calls", rest)
			if !known {
				w.Message += fmt.Sprintf(" (the filters left out %d spans, too many to tell whether their parents are among them)", l.Stats.Filtered)
			}
			out = append(out, w)
		}
	}
	rep.Warnings = out
}

// accumSink hands the spans read to an accumulator. It is a Fork: a reader
// that decodes on several goroutines (flat JSON lines, Parquet, Tempo)
// accumulates there, each goroutine counting its spans into its own
// analyze.Part, and only the spans that may belong to the trace sample
// come back, in input order, to the Accum. This keeps the one ordered
// goroutine from being the bottleneck on large logs; the report is the
// same as with Accum.Add on every span (see analyze.Part). It is a
// FileSink too: the sample remembers each span's file, so that summaries
// of different files merge in input order.
type accumSink struct {
	acc *analyze.Accum
}

func (s accumSink) Span(sp *span.Span) { s.acc.Add(sp) }

func (s accumSink) File(i int) { s.acc.SetFile(i) }

func (s accumSink) Branch() ingest.Branch {
	return &accumBranch{acc: s.acc, part: s.acc.Part()}
}

func (s accumSink) Ordered(sp *span.Span) { s.acc.Ordered(sp) }

// OrderedReads makes accumSink an ingest.OrderedKeys: the Accum's sample
// reads only some attribute keys of the spans Ordered gets.
func (s accumSink) OrderedReads(key string) bool { return s.acc.OrderedReads(key) }

// Both sinks the analysis reads through say what Ordered reads.
var (
	_ ingest.OrderedKeys = accumSink{}
	_ ingest.OrderedKeys = progressSink{}
)

// progressSink is an accumSink that tells a Progress what was read: bytes
// (it is a ProgressSink) and spans, one at a time on the ordered path and
// in batches from the branches.
type progressSink struct {
	accumSink
	p Progress
}

func (s progressSink) Span(sp *span.Span) { s.acc.Add(sp); s.p.Spans(1) }

func (s progressSink) Progress(read, total int64) { s.p.Bytes(read, total) }

func (s progressSink) Branch() ingest.Branch {
	return &accumBranch{acc: s.acc, part: s.acc.Part(), p: s.p}
}

// headStart is the ExpectSink of an accumulator: it passes the readers'
// count of the spans coming to Accum.Expect (see readLogs).
type headStart struct{ acc *analyze.Accum }

func (h headStart) Expect(spans int64, exact bool) { h.acc.Expect(spans, exact) }

// newAccumSink is the sink of a read into acc: with progress when p is
// not nil, with the head start when head. Each capability is offered
// only when it is used, because the reader pays for what a sink offers
// (see ingest.Sink): without a progress display no input is counted, and
// without a head start no count is estimated.
func newAccumSink(acc *analyze.Accum, p Progress, head bool) ingest.Sink {
	base := accumSink{acc: acc}
	switch {
	case p == nil && !head:
		return base
	case p == nil:
		return struct {
			accumSink
			headStart
		}{base, headStart{acc}}
	case !head:
		return progressSink{base, p}
	}
	return struct {
		progressSink
		headStart
	}{progressSink{base, p}, headStart{acc}}
}

type accumBranch struct {
	acc  *analyze.Accum
	part *analyze.Part
	p    Progress
	n    int64 // spans not yet counted on the progress
}

func (b *accumBranch) Take(sp *span.Span) bool {
	if b.p != nil {
		if b.n++; b.n == 4096 {
			b.p.Spans(b.n)
			b.n = 0
		}
	}
	return b.part.Add(sp)
}

// AttrIgnored is the Part's (analyze.Part.AttrIgnored): the Parquet
// reader then leaves off the fast rows an attribute the hop's attribution
// has dropped, instead of spelling it for every span.
func (b *accumBranch) AttrIgnored(hop, key string) bool { return b.part.AttrIgnored(hop, key) }

var _ ingest.AttrIgnorer = (*accumBranch)(nil)

func (b *accumBranch) Close() {
	b.acc.Merge(b.part)
	if b.p != nil && b.n > 0 {
		b.p.Spans(b.n)
	}
	b.n = 0
}
