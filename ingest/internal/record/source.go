package record

import (
	"bufio"
	"fmt"
	"os"

	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/span"
)

// SniffWindow is how much of an input Sniff looks at (and the readers
// that learn from an input's first lines: its units, its line length).
const SniffWindow = 64 << 10

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
	sink Sink
	// fork and expect are sink's optional capabilities, found once.
	fork   Fork
	expect ExpectSink
	// defaultHopBy is the decoder's choice when --hop-by is not given.
	hopDefault string
}

// Expect passes an ExpectSink what the reader knows of the input's size
// in spans (see there).
func (s *Source) Expect(n int64, exact bool) {
	if s.expect != nil && n > 0 {
		s.expect.Expect(n, exact)
	}
}

// Expects reports whether the sink takes Expect's hint: a reader that
// must work to estimate the count (read its first lines) asks first.
func (s *Source) Expects() bool { return s.expect != nil }

// Fork returns the sink as a Fork when it is one (see Fork), else nil.
func (s *Source) Fork() Fork { return s.fork }

// Options returns the read options.
func (s *Source) Options() *Options { return s.opt }

// SetDefaultHopBy sets how hops are named when the user gave no --hop-by.
func (s *Source) SetDefaultHopBy(h string) { s.hopDefault = h }

// Skip records a bad record.
func (s *Source) Skip(line, index int64, reason, detail string) {
	s.st.skip(&RecordError{File: s.Name, Line: line, Index: index, Reason: reason, Detail: ShortDetail(detail)}, s.opt.MaxErrors)
}

// Emit validates a decoded span, derives its hop, applies the filters and
// hands it on. line/index position the span for error messages. It
// reports whether the span was used (not skipped, not filtered).
func (s *Source) Emit(sp *span.Span, line, index int64) bool {
	if reason, detail := s.Accept(sp); reason != "" {
		s.reject(sp, line, index, reason, detail)
		return false
	}
	s.st.Read++
	s.st.Used++
	s.sink.Span(sp)
	return true
}

// reject counts a span accept turned away: filtered, or skipped.
func (s *Source) reject(sp *span.Span, line, index int64, reason, detail string) {
	if IsFilter(reason) {
		s.st.Filter(reason, FilteredKey(sp))
		return
	}
	s.Skip(line, index, reason, detail)
}

// EmitSoft is Emit for a record that lost values of optional fields: they
// are counted when the span is used.
func (s *Source) EmitSoft(sp *span.Span, line, index int64, soft []SoftErr) {
	if s.Emit(sp, line, index) && len(soft) > 0 {
		s.st.Ignore(s.Name, line, index, soft, s.opt.MaxErrors)
	}
}

// Accept is Emit without the counting and the hand-off: it validates sp,
// derives its hop, applies the filters and the outcome rule, and says why
// sp is skipped or filtered (empty reason: kept; see isFilter). It reads only the options, so a
// reader may call it on its decoding goroutines (see Fork).
func (s *Source) Accept(sp *span.Span) (reason, detail string) {
	if reason, detail := validate(sp); reason != "" {
		return reason, detail
	}
	o := s.opt
	hopBy := o.HopBy
	if hopBy == "" {
		hopBy = s.hopDefault
	}
	sp.Hop = DeriveHop(sp, hopBy)
	if sp.Hop == "" {
		return ReasonNoHop, "no " + hopBy + " to name the hop by (see " + o.Names.Of(option.HopBy) + ")"
	}
	// The window's fields are read through o, not with o.SinceOn(): a
	// value receiver on *o copied the whole Options (~300 bytes) twice a
	// span.
	if ((o.HasSince || o.Since != 0) && sp.Start < o.Since) || ((o.HasUntil || o.Until != 0) && sp.Start >= o.Until) {
		return ReasonOutsideWindow, ""
	}
	for _, w := range o.Exclude {
		if w.Holds(sp.Start) {
			return ReasonExcluded, ""
		}
	}
	if (o.Hops != nil && !o.Hops.MatchString(sp.Hop)) || (o.ExcludeHops != nil && o.ExcludeHops.MatchString(sp.Hop)) {
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

// NewSource is the input named name (for messages), read from r (and, for
// random access, file when it is a plain regular file), that decoders
// emit into: spans go to sink, counts to st. Hops are named by service and
// operation unless a decoder sets its own default (SetDefaultHopBy).
func NewSource(name string, r *bufio.Reader, file *os.File, opt *Options, st *Stats, sink Sink) *Source {
	fork, _ := sink.(Fork)
	expect, _ := sink.(ExpectSink)
	return &Source{Name: name, R: r, File: file, opt: opt, st: st, sink: sink, fork: fork, expect: expect, hopDefault: "service+name"}
}

// Stats returns the statistics the source counts into. Decoders that
// count on their own (a worker pool's ordered hand-off) add to them on the
// reading goroutine only.
func (s *Source) Stats() *Stats { return s.st }

// DefaultHopBy is how hops are named when the user gave no --hop-by.
func (s *Source) DefaultHopBy() string { return s.hopDefault }
