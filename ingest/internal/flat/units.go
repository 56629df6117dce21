package flat

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"github.com/tailscope/tailscope/ingest/internal/jsonscan"
	"github.com/tailscope/tailscope/ingest/internal/record"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/option"
)

// Units of times and durations.
//
// A flat log names the unit of each number by its field (duration_ms,
// start_us, …; a bare duration or start is nanoseconds), and --map can
// name any column as any of those fields. Nothing stops a log, or a --map,
// from naming the wrong unit: `--map duration=Duration` on a column of
// microseconds reads every latency a thousand times too short, and
// nothing looks wrong until the numbers are absurd. So the reader checks:
//
//   - durations against their start and end, when a record has all three:
//     end − start agrees with the duration read in the unit named, or in a
//     unit a power of 1000 away. For JSON lines and CSV the first records
//     (what the format sniffer already holds) are checked before reading:
//     when nearly all agree on one other unit, that unit is the one read,
//     and a note says so (the start and end settle it); when they do not
//     agree as clearly, a note says which unit fits best. Parquet and
//     Arrow are checked on the records read, with a note only.
//   - starts by their size: unix time in nanoseconds is about 1.7e18 today;
//     a start of 1.7e12 read as nanoseconds is milliseconds misnamed, and
//     a file whose starts fall in several such sizes mixes units.

// maxUnitSamples bounds the records a file's duration check looks at.
const maxUnitSamples = 512

// unitStats gathers what the unit checks need, per decoding goroutine.
type unitStats struct {
	// starts counts start values by size, once read as nanoseconds:
	// 0 seconds, 1 ms, 2 µs, 3 ns, 4 too small to tell (relative times).
	starts  [5]int64
	samples []unitSample
	// durField and durKey are the field and the input key of the
	// samples' durations (the first seen), when probing.
	durField field
	durKey   string
}

// unitSample is a record's end − start and duration as read, in ns.
type unitSample struct {
	span, dur int64
	f         field
}

// startClass sorts a start in ns by size.
func startClass(ns int64) int {
	switch {
	case ns >= 1e17:
		return 3
	case ns >= 1e14:
		return 2
	case ns >= 1e11:
		return 1
	case ns >= 1e8:
		return 0
	}
	return 4
}

// record takes what a finished record says about units.
func (u *unitStats) record(r *flatRecord) {
	if r.hasStart {
		u.starts[startClass(r.sp.Start)]++
	}
	if len(u.samples) < maxUnitSamples && r.hasDur && r.hasStart && r.hasEnd && r.durField != fNone {
		if u.samples == nil {
			u.samples = make([]unitSample, 0, maxUnitSamples)
		}
		u.samples = append(u.samples, unitSample{r.end - r.sp.Start, r.sp.Duration, r.durField})
		if u.durField == fNone {
			u.durField, u.durKey = r.durField, r.durKey
		}
	}
}

func (u *unitStats) merge(o *unitStats) {
	if o == nil {
		return
	}
	for i := range u.starts {
		u.starts[i] += o.starts[i]
	}
	for _, s := range o.samples {
		if len(u.samples) >= maxUnitSamples {
			break
		}
		u.samples = append(u.samples, s)
	}
	if u.durField == fNone {
		u.durField, u.durKey = o.durField, o.durKey
	}
}

// durUnits are the units a duration field can name, smallest first: the
// field, its name and its size in ns.
var durUnits = []struct {
	f    field
	name string
	ns   float64
}{{fDurationNs, "nanoseconds", 1}, {fDurationUs, "microseconds", 1e3}, {fDurationMs, "milliseconds", 1e6}, {fDurationS, "seconds", 1e9}}

// unitOf is the size in ns of the unit a duration field names.
func unitOf(f field) float64 {
	for _, d := range durUnits {
		if d.f == f {
			return d.ns
		}
	}
	return 1 // duration: an integer of ns
}

// durationFit reports the unit the sampled durations are in, as a power k
// of 1000 away from the unit their field names (0: the named one), with
// the number of samples that fit it and of those checked.
func (u *unitStats) durationFit() (k, fit, total int) {
	var counts [9]int // k from -4 to 4
	for _, s := range u.samples {
		if s.span <= 0 || s.dur <= 0 || s.f != u.durField {
			continue
		}
		total++
		r := float64(s.span) / float64(s.dur)
		e := int(math.Round(math.Log10(r) / 3))
		if e < -4 || e > 4 {
			continue
		}
		want := math.Pow(1000, float64(e))
		// Within 2%, or within a unit of the duration's last digit (an
		// export that truncates durations to whole microseconds).
		if math.Abs(r/want-1) <= 0.02 || math.Abs(float64(s.span)-float64(s.dur)*want) <= want {
			counts[e+4]++
		}
	}
	best := 4
	for i, c := range counts {
		if c > counts[best] {
			best = i
		}
	}
	return best - 4, counts[best], total
}

// durationVerdict decides from the samples: the field the durations
// should be read as (fNone when the named one fits or nothing can be
// said), whether that is clear enough to read them so, and a note.
func (u *unitStats) durationVerdict(file string, names option.Names) (to field, auto bool, note string) {
	k, fit, total := u.durationFit()
	if total < 5 || k == 0 || float64(fit) < 0.9*float64(total) {
		return fNone, false, ""
	}
	named := unitOf(u.durField)
	trueNs := named * math.Pow(1000, float64(k))
	key := u.durKey
	if key == "" {
		key = fieldName(u.durField)
	}
	for _, d := range durUnits {
		if d.ns == trueNs {
			auto = fit >= 20 && float64(fit) >= 0.95*float64(total)
			canon := fieldName(d.f)
			what := fmt.Sprintf("%s: duration field %q looks like %s, not %s (read so, its values match end − start in %s of %d records with a start and an end)",
				file, key, d.name, unitName(named), units.PercentOf(fit, total, 0), total)
			if auto {
				return d.f, true, what + fmt.Sprintf("; read as %s: the start and end settle it (name the unit with %s %s=%s)", d.name, names.Of(option.Map), canon, key)
			}
			return d.f, false, what + fmt.Sprintf("; name it with %s %s=%s", names.Of(option.Map), canon, key)
		}
	}
	return fNone, false, fmt.Sprintf("%s: duration field %q, read as %s, is end − start ÷%g in %s of %d records: no duration unit fits; check the field with %s",
		file, key, unitName(named), trueNs/named, units.PercentOf(fit, total, 0), total, names.Of(option.Map))
}

// unitName names a unit by its size in ns.
func unitName(ns float64) string {
	for _, d := range durUnits {
		if d.ns == ns {
			return d.name
		}
	}
	return fmt.Sprintf("%g ns", ns)
}

// startNotes says when starts look misnamed or mixed.
func (u *unitStats) startNotes(file string, settings option.Names) []string {
	names := [...]string{"seconds", "milliseconds", "microseconds", "nanoseconds"}
	var total int64
	for _, c := range u.starts[:4] {
		total += c
	}
	if total == 0 {
		return nil
	}
	var parts []string
	classes := 0
	for i := 3; i >= 0; i-- {
		if c := u.starts[i]; c > 0 {
			classes++
			parts = append(parts, fmt.Sprintf("%d like %s", c, names[i]))
		}
	}
	switch {
	case classes > 1:
		return []string{fmt.Sprintf("%s: start times are in mixed units (%s, read as the field names them); spans from different clocks or loggers cannot be ordered against each other: give each unit its own field (start, start_us, start_ms)",
			file, strings.Join(parts, ", "))}
	case u.starts[3] == 0:
		for i := 2; i >= 0; i-- {
			if u.starts[i] > 0 {
				return []string{fmt.Sprintf("%s: start times fall in 1970 as read (%d spans): their unit looks %s larger than the one their field names (a bare start is nanoseconds; milliseconds are start_ms, microseconds start_us, seconds start_s: name it with %s start_ms=KEY)",
					file, u.starts[i], [...]string{"10⁹×", "10⁶×", "1000×"}[i], settings.Of(option.Map))}
			}
		}
	}
	return nil
}

// probeUnits reads the first records of a flat JSON-lines or CSV input
// (what the sniffer holds, not consumed) to check the duration unit before
// the file is read: when they settle it, tab is changed to read the
// duration field in the unit that fits.
func probeUnits(src *record.Source, tab *fieldTable, csv bool) {
	head, _ := src.R.Peek(record.SniffWindow)
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	if i := bytes.LastIndexByte(head, '\n'); i >= 0 {
		head = head[:i+1]
	} else {
		return
	}
	u := &unitStats{}
	rec := &flatRecord{intern: &record.Interner{}, units: u, probe: true}
	lines := bytes.Split(head, jsonscan.Newline)
	if csv {
		probeCSV(src, tab, rec, lines)
	} else {
		var sc jsonscan.Scanner
		for _, l := range lines {
			if len(u.samples) >= maxUnitSamples {
				break
			}
			if l = trimEOL(l); !isBlank(l) {
				tab.decodeLine(&sc, rec, l)
			}
		}
	}
	to, auto, note := u.durationVerdict(src.Name, src.Options().Names)
	if note != "" {
		src.Stats().Notes = append(src.Stats().Notes, note)
	}
	if auto && u.durKey != "" {
		tab.remap(u.durKey, to)
	}
}

// probeCSV is probeUnits' reading of CSV lines (a quoted field over
// several lines ends the probe).
func probeCSV(src *record.Source, tab *fieldTable, rec *flatRecord, lines [][]byte) {
	var sp csvSplitter
	sp.delim = csvDelim(lines[0])
	var names []string
	var cols []colSpec
	for _, l := range lines {
		l = trimEOL(l)
		if isBlank(l) {
			continue
		}
		complete, err := sp.split(l)
		if !complete || err != nil {
			return
		}
		if cols == nil {
			for _, h := range sp.fields {
				n := strings.TrimSpace(string(bytes.TrimPrefix(h, []byte("\xef\xbb\xbf"))))
				names = append(names, n)
				cols = append(cols, tab.column(n))
			}
			continue
		}
		if len(sp.fields) != len(cols) {
			continue
		}
		rec.reset()
		for i, c := range cols {
			if !c.used() {
				continue
			}
			if rec.setText(c, sp.fields[i]) != nil {
				break
			}
			if isDurationField(c.f) {
				rec.durKey = names[i]
			}
		}
		rec.finish()
	}
}

// isDurationField reports whether f is a duration in some unit.
func isDurationField(f field) bool {
	switch f {
	case fDuration, fDurationMs, fDurationUs, fDurationNs, fDurationS:
		return true
	}
	return false
}

// remap makes key read as field f.
func (t *fieldTable) remap(key string, f field) {
	keys := make(map[string]field, len(t.keys))
	for k, v := range t.keys {
		keys[k] = v
	}
	keys[key] = f
	t.keys = keys
}

// unitNotes adds the notes of a file's finished reading.
func unitNotes(s *record.Source, u *unitStats, durations bool) {
	if u == nil {
		return
	}
	if durations {
		if _, _, note := u.durationVerdict(s.Name, s.Options().Names); note != "" {
			s.Stats().Notes = append(s.Stats().Notes, note)
		}
	}
	s.Stats().Notes = append(s.Stats().Notes, u.startNotes(s.Name, s.Options().Names)...)
}
