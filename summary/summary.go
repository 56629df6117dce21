// Package summary writes and reads partial summaries: the analysis state
// of some logs (per-hop attempt counts and latency digests, the trace
// sample, the read statistics) in a versioned binary file, so that logs
// too large for one machine can be summarised where they lie and the
// summaries merged into the report one machine reading everything would
// give. docs/DESIGN.md ("Partial summaries") describes the format; this
// comment is its reference.
//
//	file    = magic version section… end
//	magic   = 89 54 53 53 0D 0A 1A 0A       ("\x89TSS\r\n\x1a\n": binary, and
//	                                        mangled line endings show)
//	version = uint16, little-endian          (Version)
//	section = kind length payload            (kind: 4 ASCII bytes; length:
//	                                        uint64 little-endian)
//	end     = "END." 32 SHA-256(magic … the last section)
//
// The sections come once each, in this order: HEAD (the sketch
// parameters and trace hash the state was made with: a reader with other
// ones refuses the file rather than mix incompatible digests; from
// version 3, then what a hop is, HopDef), STAT (read
// statistics), HOPS (per hop: counts and its three digests), FRST (each
// hop's first span), EXPL (each hop's example traces), ATTR (attribution
// by attribute key and value, for the hops that have it), TIME (from
// version 4: per hop, its attempts' starts and durations for the
// timeline's blocks, or the sample of them it kept) and SMPL (the trace
// sample). Numbers are unsigned or zigzag varints, floats IEEE 754
// little-endian, strings a varint length and UTF-8 bytes. A file with a
// newer version is refused with a message saying so; the checksum catches
// a file cut short or changed, and the decoded state is checked for
// consistency (counts that add up, digests in the form their counts
// imply, sampled traces under the sample's level) so that a file edited
// and re-summed is refused too.
package summary

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/secret"
	"github.com/tailscope/tailscope/span"
)

// Version is the format version this build writes and the newest it reads
// (2: sampled spans may carry their routing attributes; a version 1 file,
// whose spans carry none, reads as before. 3: HEAD records HopDef; a
// file of an earlier version is read with it unknown. 4: the TIME
// section; an earlier file's hops have no attempt times, and the report's
// blocks for them come from the trace sample).
const Version = 4

// Magic starts every summary file.
var Magic = []byte("\x89TSS\r\n\x1a\n")

// TraceHashName names the hash the trace sample keeps traces by
// (analyze.TraceHash): summaries made with another cannot merge.
const TraceHashName = "tailscope-trace-hash-1"

// Summary is the analysis state of some logs.
type Summary struct {
	Accum *analyze.Accum
	Stats *ingest.Stats
	// HopDef says what a hop is in this state: the options that decide
	// it (--hop-by, --map of the fields a hop is made of; see HopDefOf),
	// "" when unknown (a file of version 1 or 2). Summaries whose hops are
	// different things do not merge.
	HopDef string
}

// HopDefOf is the HopDef of logs read with hopBy and field map m: hop-by,
// then the mapped fields a hop is made of (hop, service, name, kind,
// peer), sorted.
func HopDefOf(hopBy string, m map[string]string) string {
	if hopBy == "" {
		hopBy = "default"
	}
	def := "--hop-by " + hopBy
	var mapped []string
	for _, f := range []string{"hop", "kind", "name", "peer", "service"} {
		if k, ok := m[f]; ok && k != f {
			mapped = append(mapped, f+"="+k)
		}
	}
	if len(mapped) > 0 {
		def += " --map " + strings.Join(mapped, ",")
	}
	return def
}

// Is reports whether head, the first bytes of a file, starts a summary.
func Is(head []byte) bool { return bytes.HasPrefix(head, Magic) }

const (
	kindHead     = "HEAD"
	kindStats    = "STAT"
	kindHops     = "HOPS"
	kindFirst    = "FRST"
	kindExamples = "EXPL"
	kindAttr     = "ATTR"
	kindTimes    = "TIME"
	kindSample   = "SMPL"
	kindEnd      = "END."
)

// kinds are the sections in their order.
var kinds = []string{kindHead, kindStats, kindHops, kindFirst, kindExamples, kindAttr, kindTimes, kindSample}

// kindsOf are the sections of a file of version v, in their order.
func kindsOf(v uint16) []string {
	if v < 4 {
		return []string{kindHead, kindStats, kindHops, kindFirst, kindExamples, kindAttr, kindSample}
	}
	return kinds
}

// Encode returns s in the summary format.
func Encode(s *Summary) []byte {
	st := s.Accum.State()
	out := append([]byte(nil), Magic...)
	out = binary.LittleEndian.AppendUint16(out, Version)
	section := func(kind string, e *enc) {
		out = append(out, kind...)
		out = binary.LittleEndian.AppendUint64(out, uint64(len(e.b)))
		out = append(out, e.b...)
	}
	section(kindHead, encodeHead(s.HopDef))
	section(kindStats, encodeStats(s.Stats))
	section(kindHops, encodeHops(st.Hops))
	section(kindFirst, encodeFirst(st.Hops))
	section(kindExamples, encodeExamples(st.Hops))
	section(kindAttr, encodeAttr(st.Hops))
	section(kindTimes, encodeTimes(st.Hops))
	section(kindSample, encodeSample(st))
	sum := sha256.Sum256(out)
	out = append(out, kindEnd...)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(sum)))
	return append(out, sum[:]...)
}

// Write writes s to w in the summary format.
func Write(w io.Writer, s *Summary) error {
	_, err := w.Write(Encode(s))
	return err
}

// ReadFile reads the summary at path. Its errors name the file.
func ReadFile(path string) (*Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ErrNewer is wrapped by the error for a summary written by a newer
// tailscope.
var ErrNewer = errors.New("written by a newer tailscope")

// Decode reads a summary. A file that is not one, cut short, changed, of
// another version or made with other sketch parameters is an error saying
// which; nothing in b can make it panic or allocate much beyond len(b).
func Decode(b []byte) (*Summary, error) {
	if !Is(b) {
		return nil, errors.New("not a tailscope summary (no summary magic bytes)")
	}
	if len(b) < len(Magic)+2 {
		return nil, errors.New("summary truncated in its header")
	}
	v := binary.LittleEndian.Uint16(b[len(Magic):])
	switch {
	case v > Version:
		return nil, fmt.Errorf("summary format version %d: %w, which this one (format version %d) cannot read; upgrade tailscope", v, ErrNewer, Version)
	case v < 1:
		return nil, fmt.Errorf("summary format version %d is not one tailscope ever wrote", v)
	}
	const trailer = 4 + 8 + sha256.Size
	if len(b) < len(Magic)+2+trailer {
		return nil, errors.New("summary truncated (no checksum at its end)")
	}
	body, end := b[:len(b)-trailer], b[len(b)-trailer:]
	if string(end[:4]) != kindEnd || binary.LittleEndian.Uint64(end[4:]) != sha256.Size {
		return nil, errors.New("summary truncated or damaged (no checksum at its end)")
	}
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], end[12:]) {
		return nil, errors.New("summary checksum mismatch: the file was changed or damaged after it was written")
	}
	rest := body[len(Magic)+2:]
	kinds := kindsOf(v)
	sections := make([][]byte, len(kinds))
	for i, kind := range kinds {
		if len(rest) < 12 {
			return nil, fmt.Errorf("summary has no %s section", kind)
		}
		if string(rest[:4]) != kind {
			return nil, fmt.Errorf("summary section %q where %s was expected", rest[:4], kind)
		}
		n := binary.LittleEndian.Uint64(rest[4:])
		if n > uint64(len(rest)-12) {
			return nil, fmt.Errorf("summary section %s: truncated", kind)
		}
		sections[i], rest = rest[12:12+n], rest[12+n:]
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("summary has %d bytes after its last section", len(rest))
	}
	hopDef, err := decodeHead(&dec{b: sections[0]}, v)
	if err != nil {
		return nil, fmt.Errorf("summary section %s: %w", kindHead, err)
	}
	st, err := decodeStats(&dec{b: sections[1]})
	if err != nil {
		return nil, fmt.Errorf("summary section %s: %w", kindStats, err)
	}
	state := &analyze.State{}
	if state.Hops, err = decodeHops(&dec{b: sections[2]}); err != nil {
		return nil, fmt.Errorf("summary section %s: %w", kindHops, err)
	}
	for i, x := range []struct {
		kind string
		dec  func(*dec, []analyze.HopState) error
	}{{kindFirst, decodeFirst}, {kindExamples, decodeExamples}, {kindAttr, decodeAttr}} {
		if err := x.dec(&dec{b: sections[3+i]}, state.Hops); err != nil {
			return nil, fmt.Errorf("summary section %s: %w", x.kind, err)
		}
	}
	if v >= 4 {
		if err := decodeTimes(&dec{b: sections[6]}, state.Hops); err != nil {
			return nil, fmt.Errorf("summary section %s: %w", kindTimes, err)
		}
	}
	if err := decodeSample(&dec{b: sections[len(sections)-1]}, state, len(st.Files)); err != nil {
		return nil, fmt.Errorf("summary section %s: %w", kindSample, err)
	}
	if err := plausible(state); err != nil {
		return nil, fmt.Errorf("summary state: %w", err)
	}
	acc, err := analyze.FromState(state)
	if err != nil {
		return nil, fmt.Errorf("summary state: %w", err)
	}
	if st.Used != acc.Total() {
		return nil, fmt.Errorf("summary state: %d spans used by the reader, %d in the hops", st.Used, acc.Total())
	}
	return &Summary{Accum: acc, Stats: st, HopDef: hopDef}, nil
}

// maxNs bounds every duration and time a reader accepts
// (record.FiniteNs): a value a reader would refuse cannot come from one.
const maxNs = 9e18

// plausible checks the decoded values as the readers check spans: a
// summary edited and re-summed passes the checksum, so what no reader
// would give — a negative duration or start, an end past the range of
// time, a weight that is not a finite number above 0, a negative or
// unbounded timeout in force, an attempt or code below 0, an unknown
// kind, an empty hop — is refused, and so is a sample that contradicts
// the hops' counts (more sampled attempts, or failed ones, than the hop
// counts over all spans: a report would show failed requests on a hop
// whose table says it never failed).
func plausible(st *analyze.State) error {
	type seen struct{ n, failed int }
	hops := make(map[string]*analyze.HopState, len(st.Hops))
	for i := range st.Hops {
		h := &st.Hops[i]
		if h.Name == "" {
			return fmt.Errorf("hop %d has no name", i+1)
		}
		for _, d := range []*quantile.State{&h.Succ, &h.Flagged, &h.Other} {
			if d.N > 0 && float64(d.Max) >= maxNs {
				return fmt.Errorf("hop %q: a duration of %d ns, beyond what a reader accepts", h.Name, d.Max)
			}
		}
		hops[h.Name] = h
	}
	counts := map[string]*seen{}
	for i := range st.Sample {
		sp := &st.Sample[i].Span
		bad := ""
		switch {
		case sp.Duration < 0 || float64(sp.Duration) >= maxNs:
			bad = fmt.Sprintf("duration %d ns", sp.Duration)
		case sp.Start < 0 || float64(sp.Start) >= maxNs:
			bad = fmt.Sprintf("start %d ns", sp.Start)
		case sp.Start > 0 && sp.Start+sp.Duration < sp.Start:
			bad = "an end past the range of time"
		case !(sp.Weight > 0) || math.IsInf(sp.Weight, 0):
			bad = fmt.Sprintf("weight %g", sp.Weight)
		case sp.TimeoutInForce < 0 || float64(sp.TimeoutInForce) >= maxNs:
			bad = fmt.Sprintf("timeout in force %d ns", sp.TimeoutInForce)
		case sp.Attempt < 0 || sp.Code < 0:
			bad = fmt.Sprintf("attempt %d or code %d", sp.Attempt, sp.Code)
		case sp.Kind != "" && sp.Kind != "client" && sp.Kind != "server" && sp.Kind != "internal" && sp.Kind != "producer" && sp.Kind != "consumer":
			bad = fmt.Sprintf("kind %q", sp.Kind)
		case hops[sp.Hop] == nil:
			bad = fmt.Sprintf("hop %q, not among the hops", sp.Hop)
		}
		if bad != "" {
			return fmt.Errorf("sampled span %d: %s: no reader gives that", i+1, bad)
		}
		c := counts[sp.Hop]
		if c == nil {
			c = &seen{}
			counts[sp.Hop] = c
		}
		c.n++
		if sp.Status == span.Error {
			c.failed++
		}
	}
	for name, c := range counts {
		h := hops[name]
		if c.n > h.Attempts || c.failed > h.Failed {
			return fmt.Errorf("hop %q: the sample holds %d attempts (%d failed), the hop %d (%d failed) over all spans", name, c.n, c.failed, h.Attempts, h.Failed)
		}
	}
	return nil
}

// MergeFiles reads and merges the summaries at paths, one at a time (the
// memory a merge needs is that of two summaries, whatever their number).
//
// A file named twice (or through a link) is merged once, with a note:
// merged again it would count every span twice.
func MergeFiles(paths []string) (*Summary, error) { return MergeFilesMax(paths, 0, nil) }

// MergeFilesMax is MergeFiles held to maxHops distinct hops
// (analyze.DefaultMaxHops when 0), checked after each file: a merge that
// would hold more stops there with the error the logs read directly get,
// before it holds them all. That error names the settings by names.
func MergeFilesMax(paths []string, maxHops int, names option.Names) (*Summary, error) {
	var s *Summary
	paths, notes := distinct(paths)
	defer func() {
		if s != nil {
			s.Stats.Notes = append(s.Stats.Notes, notes...)
		}
	}()
	for _, p := range paths {
		x, err := ReadFile(p)
		if err != nil {
			return nil, err
		}
		if s == nil {
			s = x
		} else if s, err = Merge(s, x); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if err := s.Accum.OverHopLimit(maxHops, names); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	if s == nil {
		return nil, errors.New("no summaries to merge")
	}
	return s, nil
}

// distinct drops the paths that name a file named before (by device and
// inode), with a note for each.
func distinct(paths []string) (out, notes []string) {
	var seen []os.FileInfo
	var names []string
next:
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			for i, s := range seen {
				if os.SameFile(fi, s) {
					notes = append(notes, fmt.Sprintf("%s: the same file as %s, read once", p, names[i]))
					continue next
				}
			}
			seen, names = append(seen, fi), append(names, p)
		}
		out = append(out, p)
	}
	return out, notes
}

// Merge combines two summaries into the one a single read of both their
// inputs gives (see analyze.Accum.Absorb and ingest.MergeStats). a and b
// must not be used afterwards.
//
// Summaries whose hops are different things (HopDef: made with another
// --hop-by or --map) are refused: merged, every hop would be a mix of the
// two.
func Merge(a, b *Summary) (*Summary, error) {
	if a.HopDef != "" && b.HopDef != "" && a.HopDef != b.HopDef {
		return nil, fmt.Errorf("%w: one made with %s, the other with %s; read or summarize them all with the same options", ErrHopDef, a.HopDef, b.HopDef)
	}
	def := a.HopDef
	if def == "" {
		def = b.HopDef
	}
	st, af, bf := ingest.MergeStats(a.Stats, b.Stats, ingest.MaxErrors)
	if err := a.Accum.Absorb(b.Accum, af, bf); err != nil {
		return nil, err
	}
	return &Summary{Accum: a.Accum, Stats: st, HopDef: def}, nil
}

// ErrHopDef is wrapped by the error for summaries whose hops are
// different things.
var ErrHopDef = errors.New("the hops are not the same things (different --hop-by or --map), so they cannot merge")

func encodeHead(hopDef string) *enc {
	e := &enc{}
	e.n(quantile.ExactLimit)
	e.f(quantile.SketchAlpha)
	e.s(TraceHashName)
	e.s(hopDef)
	return e
}

// decodeHead checks the parameters of a file of version v and returns its
// HopDef ("" before version 3).
func decodeHead(d *dec, v uint16) (string, error) {
	limit, alpha, hash := d.n(), d.f(), d.s()
	var hopDef string
	if v >= 3 {
		hopDef = d.s()
	}
	if err := d.done(); err != nil {
		return "", err
	}
	if limit != quantile.ExactLimit || alpha != quantile.SketchAlpha {
		return "", fmt.Errorf("made with an exact limit of %d and sketch accuracy %g; this tailscope uses %d and %g, which do not mix",
			limit, alpha, quantile.ExactLimit, quantile.SketchAlpha)
	}
	if hash != TraceHashName {
		return "", fmt.Errorf("its trace sample was made with the hash %q; this tailscope uses %q", hash, TraceHashName)
	}
	return hopDef, nil
}

func encodeStats(st *ingest.Stats) *enc {
	e := &enc{}
	e.n(len(st.Files))
	for _, f := range st.Files {
		e.s(f)
		e.s(st.Formats[display(f)])
	}
	for _, x := range []int64{st.Read, st.Used, st.Skipped, st.Filtered, st.Ignored} {
		e.n(int(x))
	}
	for _, m := range []map[string]int64{st.SkippedByReason, st.FilteredByReason, st.IgnoredByField} {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		e.n(len(keys))
		for _, k := range keys {
			e.s(k)
			e.n(int(m[k]))
		}
	}
	for _, errs := range [][]*ingest.RecordError{st.Errors, st.IgnoredExamples} {
		e.n(len(errs))
		for _, x := range errs {
			e.s(x.File)
			e.i(x.Line)
			e.i(x.Index)
			e.s(x.Reason)
			e.s(x.Detail)
		}
	}
	e.n(len(st.Passed))
	for _, p := range st.Passed {
		e.s(p.File)
		e.s(p.Reason)
		e.bool(p.Strict)
	}
	notes := st.ReadNotes()
	e.n(len(notes))
	for _, n := range notes {
		e.s(n)
	}
	ids, full := st.FilteredIDs()
	e.bool(full)
	e.n(len(ids))
	prev := uint64(0)
	for _, x := range ids {
		e.u(x - prev)
		prev = x
	}
	return e
}

// display is the name a file is reported under ("-" is stdin).
func display(f string) string {
	if f == "-" {
		return "<stdin>"
	}
	return f
}

func decodeStats(d *dec) (*ingest.Stats, error) {
	st := &ingest.Stats{Formats: map[string]string{}}
	nf := d.count(2)
	for range nf {
		f, format := d.s(), d.s()
		st.Files = append(st.Files, f)
		st.Formats[display(f)] = format
	}
	counts := []*int64{&st.Read, &st.Used, &st.Skipped, &st.Filtered, &st.Ignored}
	for _, p := range counts {
		*p = int64(d.u() & (1<<62 - 1))
	}
	var sums [3]int64
	for i, m := range []*map[string]int64{&st.SkippedByReason, &st.FilteredByReason, &st.IgnoredByField} {
		*m = map[string]int64{}
		n := d.count(2)
		for range n {
			k, v := d.s(), int64(d.u()&(1<<62-1))
			(*m)[k] = v
			sums[i] += v
			if sums[i] > 1<<62 {
				return nil, errors.New("counts out of range")
			}
		}
	}
	for _, errs := range []*[]*ingest.RecordError{&st.Errors, &st.IgnoredExamples} {
		n := d.count(2)
		for range n {
			*errs = append(*errs, &ingest.RecordError{File: d.s(), Line: d.i(), Index: d.i(), Reason: d.s(), Detail: d.s()})
		}
	}
	np := d.count(3)
	for range np {
		st.Passed = append(st.Passed, ingest.PassedFile{File: d.s(), Reason: d.s(), Strict: d.bool()})
	}
	nn := d.count(1)
	for range nn {
		st.Notes = append(st.Notes, d.s())
	}
	full := d.bool()
	ni := d.count(1)
	ids := make([]uint64, 0, ni)
	prev := uint64(0)
	for i := range ni {
		x := prev + d.u()
		if i > 0 && x <= prev {
			return nil, errors.New("filtered span ids out of order")
		}
		ids = append(ids, x)
		prev = x
	}
	if err := d.done(); err != nil {
		return nil, err
	}
	st.SetFilteredIDs(ids, full)
	if st.Read != st.Used+st.Skipped+st.Filtered || st.Skipped != sums[0] || st.Filtered != sums[1] {
		return nil, fmt.Errorf("read %d ≠ used %d + skipped %d + filtered %d, or the reasons do not add up", st.Read, st.Used, st.Skipped, st.Filtered)
	}
	if st.Ignored > st.Used || sums[2] < st.Ignored {
		return nil, fmt.Errorf("%d spans with ignored values of %d used do not match the counts by field", st.Ignored, st.Used)
	}
	// Notes from the totals are written again from the decoded ones.
	st.Finish()
	return st, nil
}

func encodeDigest(e *enc, s *quantile.State) {
	e.bool(s.Sketch)
	e.n(s.N)
	e.i(s.Min)
	e.i(s.Max)
	if !s.Sketch {
		prev := int64(0)
		for _, v := range s.Values {
			e.u(uint64(v - prev))
			prev = v
		}
		return
	}
	e.n(s.Zero)
	e.n(s.Lo)
	e.n(len(s.Bins))
	for _, c := range s.Bins {
		e.u(c)
	}
}

func decodeDigest(d *dec) quantile.State {
	s := quantile.State{Sketch: d.bool(), N: d.n(), Min: d.i(), Max: d.i()}
	if !s.Sketch {
		if s.N > len(d.b) {
			d.fail(errShort)
			return s
		}
		s.Values = make([]int64, s.N)
		prev := int64(0)
		for i := range s.Values {
			delta := d.u()
			if delta > 1<<62 || prev > 1<<62 {
				d.fail(errors.New("value out of range"))
				return s
			}
			prev += int64(delta)
			s.Values[i] = prev
		}
		return s
	}
	s.Zero, s.Lo = d.n(), d.n()
	nb := d.count(1)
	s.Bins = make([]uint64, nb)
	for i := range s.Bins {
		s.Bins[i] = d.u()
	}
	return s
}

func encodeHops(hops []analyze.HopState) *enc {
	e := &enc{}
	e.n(len(hops))
	for i := range hops {
		h := &hops[i]
		e.s(h.Name)
		e.n(h.Attempts)
		e.n(h.Failed)
		e.n(h.Cut)
		encodeDigest(e, &h.Succ)
		encodeDigest(e, &h.Flagged)
		encodeDigest(e, &h.Other)
	}
	return e
}

func decodeHops(d *dec) ([]analyze.HopState, error) {
	n := d.count(16)
	hops := make([]analyze.HopState, 0, n)
	for range n {
		h := analyze.HopState{Name: d.s(), Attempts: d.n(), Failed: d.n(), Cut: d.n()}
		h.Succ, h.Flagged, h.Other = decodeDigest(d), decodeDigest(d), decodeDigest(d)
		if d.err != nil {
			return nil, d.err
		}
		hops = append(hops, h)
	}
	return hops, d.done()
}

// Each piece of per-hop state beyond the counts and digests has its own
// section, listing hops by their index in HOPS.

func encodeFirst(hops []analyze.HopState) *enc {
	e := &enc{}
	e.n(len(hops))
	for i := range hops {
		f := &hops[i].First
		e.s(f.Service)
		e.s(f.Name)
		e.s(f.Route)
		e.s(f.RouteKey)
	}
	return e
}

func decodeFirst(d *dec, hops []analyze.HopState) error {
	if n := d.n(); n != len(hops) && d.err == nil {
		return fmt.Errorf("%d hops, not the %d of %s", n, len(hops), kindHops)
	}
	for i := range hops {
		hops[i].First = analyze.HopFirst{Service: d.s(), Name: d.s(), Route: d.s(), RouteKey: d.s()}
	}
	return d.done()
}

func encodeExampleList(e *enc, xs []analyze.Example) {
	e.n(len(xs))
	for _, x := range xs {
		e.i(x.Duration)
		e.s(x.Trace)
	}
}

func decodeExampleList(d *dec) []analyze.Example {
	n := d.count(2)
	var xs []analyze.Example
	for range n {
		xs = append(xs, analyze.Example{Duration: d.i(), Trace: d.s()})
	}
	return xs
}

func encodeExamples(hops []analyze.HopState) *enc {
	e := &enc{}
	e.n(len(hops))
	for i := range hops {
		x := &hops[i].Examples
		for _, l := range [][]analyze.Example{x.Slowest, x.Flagged, x.Other, x.FastFail} {
			encodeExampleList(e, l)
		}
	}
	return e
}

func decodeExamples(d *dec, hops []analyze.HopState) error {
	if n := d.n(); n != len(hops) && d.err == nil {
		return fmt.Errorf("%d hops, not the %d of %s", n, len(hops), kindHops)
	}
	for i := range hops {
		x := &hops[i].Examples
		x.Slowest, x.Flagged, x.Other, x.FastFail = decodeExampleList(d), decodeExampleList(d), decodeExampleList(d), decodeExampleList(d)
	}
	return d.done()
}

func encodeAttr(hops []analyze.HopState) *enc {
	e := &enc{}
	n := 0
	for i := range hops {
		if hops[i].HasAttr {
			n++
		}
	}
	e.n(n)
	for i := range hops {
		h := &hops[i]
		if !h.HasAttr {
			continue
		}
		e.n(i)
		e.n(len(h.Attr))
		for _, k := range h.Attr {
			e.s(k.Key)
			e.bool(k.Dropped)
			e.n(len(k.Values))
			for _, v := range k.Values {
				e.s(v.Value)
				e.n(v.Attempts)
				e.n(v.Failed)
				e.n(v.Flagged)
				e.n(v.Zero)
				e.n(v.Lo)
				e.n(len(v.Bins))
				for _, c := range v.Bins {
					e.u(uint64(c))
				}
				encodeExampleList(e, v.Slow)
				encodeExampleList(e, v.Fail)
			}
		}
	}
	return e
}

func decodeAttr(d *dec, hops []analyze.HopState) error {
	n := d.count(2)
	prev := -1
	for range n {
		i := d.n()
		if d.err != nil {
			return d.err
		}
		if i <= prev || i >= len(hops) {
			return fmt.Errorf("hop %d out of order or not among the %d hops", i, len(hops))
		}
		prev = i
		h := &hops[i]
		h.HasAttr = true
		nk := d.count(3)
		for range nk {
			k := analyze.AttrKey{Key: d.s(), Dropped: d.bool()}
			nv := d.count(9)
			for range nv {
				v := analyze.AttrValue{Value: d.s(), Attempts: d.n(), Failed: d.n(), Flagged: d.n(), Zero: d.n(), Lo: d.n()}
				nb := d.count(1)
				v.Bins = make([]uint32, nb)
				for j := range v.Bins {
					c := d.u()
					if c > 1<<32-1 {
						d.fail(errors.New("bin count out of range"))
					}
					v.Bins[j] = uint32(c)
				}
				v.Slow, v.Fail = decodeExampleList(d), decodeExampleList(d)
				k.Values = append(k.Values, v)
			}
			h.Attr = append(h.Attr, k)
		}
	}
	return d.done()
}

// Span flags.
const (
	flagTimeout = 1 << iota
	flagAttemptSet
	flagLoose // no trace id: the sample hash follows
	// flagAttrs: the span's routing attributes follow (format version 2
	// on), which map its hop to an endpoint (see analyze.Endpoints).
	flagAttrs
)

func encodeSample(st *analyze.State) *enc {
	e := &enc{}
	e.n(st.SampleSpans)
	e.n(st.Limit)
	e.n(int(st.Level))
	e.u(uint64(st.Total))
	e.u(st.Loose)
	// The names spans share (service, name, kind, hop, peer, error
	// text) are written once, in a table.
	index := map[string]int{}
	var table []string
	ref := func(s string) int {
		i, ok := index[s]
		if !ok {
			i = len(table)
			index[s] = i
			table = append(table, s)
		}
		return i
	}
	for i := range st.Sample {
		sp := &st.Sample[i].Span
		for _, s := range []string{sp.Service, sp.Name, sp.Kind, sp.Hop, sp.Peer, sp.CodeText} {
			ref(s)
		}
		for _, a := range sp.Attrs {
			ref(a.Key)
			ref(a.Value)
		}
	}
	e.n(len(table))
	for _, s := range table {
		e.s(s)
	}
	e.n(len(st.Sample))
	prevStart := int64(0)
	for i := range st.Sample {
		x := &st.Sample[i]
		sp := &x.Span
		e.n(x.File)
		e.s(sp.TraceID)
		e.s(sp.SpanID)
		e.s(sp.ParentID)
		for _, s := range []string{sp.Service, sp.Name, sp.Kind, sp.Hop, sp.Peer, sp.CodeText} {
			e.n(index[s])
		}
		e.i(sp.Start - prevStart)
		prevStart = sp.Start
		e.i(sp.Duration)
		e.n(int(sp.Status))
		var flags uint64
		if sp.Timeout {
			flags |= flagTimeout
		}
		if sp.AttemptSet {
			flags |= flagAttemptSet
		}
		if sp.TraceID == "" {
			flags |= flagLoose
		}
		if len(sp.Attrs) > 0 {
			flags |= flagAttrs
		}
		e.u(flags)
		e.i(int64(sp.Code))
		e.i(int64(sp.Attempt))
		e.i(sp.TimeoutInForce)
		e.f(sp.Weight)
		if sp.TraceID == "" {
			e.u(x.Hash)
		}
		if len(sp.Attrs) > 0 {
			e.n(len(sp.Attrs))
			for _, a := range sp.Attrs {
				e.n(index[a.Key])
				e.n(index[a.Value])
			}
		}
	}
	return e
}

func decodeSample(d *dec, st *analyze.State, files int) error {
	st.SampleSpans, st.Limit, st.Level = d.n(), d.n(), uint(d.n())
	st.Total, st.Loose = int64(d.u()&(1<<62-1)), d.u()
	nt := d.count(1)
	table := make([]string, 0, nt)
	for range nt {
		table = append(table, d.s())
	}
	str := func() string {
		i := d.n()
		if i >= len(table) {
			d.fail(fmt.Errorf("name %d of a table of %d", i, len(table)))
			return ""
		}
		return table[i]
	}
	n := d.count(16)
	st.Sample = make([]analyze.Sampled, 0, n)
	prevStart := int64(0)
	for i := range n {
		var x analyze.Sampled
		sp := &x.Span
		x.File = d.n()
		sp.TraceID, sp.SpanID, sp.ParentID = d.s(), d.s(), d.s()
		sp.Service, sp.Name, sp.Kind, sp.Hop, sp.Peer, sp.CodeText = str(), str(), str(), str(), str(), str()
		sp.Start = prevStart + d.i()
		prevStart = sp.Start
		sp.Duration = d.i()
		status := d.n()
		flags := d.u()
		sp.Code, sp.Attempt = int(d.i()), int(d.i())
		sp.TimeoutInForce = d.i()
		sp.Weight = d.f()
		sp.Timeout, sp.AttemptSet = flags&flagTimeout != 0, flags&flagAttemptSet != 0
		if status > int(span.Error) || flags >= flagAttrs<<1 || flags&flagLoose != 0 != (sp.TraceID == "") {
			return fmt.Errorf("sampled span %d: bad status %d or flags %#x", i+1, status, flags)
		}
		sp.Status = span.Status(status)
		if flags&flagLoose != 0 {
			x.Hash = d.u()
		} else {
			x.Hash = analyze.TraceHash(sp.TraceID)
		}
		if flags&flagAttrs != 0 {
			na := d.count(2)
			sp.Attrs = make([]span.Attr, 0, na)
			for range na {
				k := str()
				// Credentials hidden, as the sample keeps them now
				// (a file written before kept a URL's token).
				sp.Attrs = append(sp.Attrs, span.Attr{Key: k, Value: secret.Scrub(str())})
			}
		}
		if x.File >= files {
			d.fail(fmt.Errorf("sampled span %d: file %d of %d", i+1, x.File, files))
		}
		if d.err != nil {
			return d.err
		}
		st.Sample = append(st.Sample, x)
	}
	return d.done()
}

// encodeTimes writes each hop's attempt times: its level, how many, then
// each start as a zigzag delta from the previous one (starts arrive
// nearly in order, so most deltas are short) and each duration (for a
// failure −1 − its duration) as a zigzag varint.
func encodeTimes(hops []analyze.HopState) *enc {
	e := &enc{}
	e.n(len(hops))
	for i := range hops {
		t := &hops[i].Times
		e.u(uint64(t.Level))
		e.n(len(t.At))
		prev := int64(0)
		for j, at := range t.At {
			e.i(at - prev)
			prev = at
			e.i(t.D[j])
		}
	}
	return e
}

func decodeTimes(d *dec, hops []analyze.HopState) error {
	if n := d.n(); n != len(hops) && d.err == nil {
		return fmt.Errorf("%d hops, not the %d of %s", n, len(hops), kindHops)
	}
	for i := range hops {
		if d.err != nil {
			break
		}
		level := d.u()
		if level > 63 {
			return fmt.Errorf("hop %q: times at level %d", hops[i].Name, level)
		}
		n := d.count(2)
		if n > analyze.MaxHopTimes {
			return fmt.Errorf("hop %q: %d attempt times, more than the %d a hop keeps", hops[i].Name, n, analyze.MaxHopTimes)
		}
		t := analyze.TimesState{Level: uint8(level), At: make([]int64, 0, n), D: make([]int64, 0, n)}
		prev := int64(0)
		for range n {
			prev += d.i()
			dur := d.i()
			if d.err != nil {
				break
			}
			t.At = append(t.At, prev)
			t.D = append(t.D, dur)
		}
		hops[i].Times = t
	}
	return d.done()
}
