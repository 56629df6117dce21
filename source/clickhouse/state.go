package clickhouse

// The analysis state of a window built on the server (push-down): the
// per-hop counts and digests (pushdown.go), each hop's examples, first
// span and attempt times, and the trace sample, as an analyze.State that
// analyze.FromState checks and turns into the Accum the readers would
// have filled, and each hop's attribution (attr.go).

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/span"
)

// Pushed is a window's state computed on the server.
type Pushed struct {
	// State is the analysis state.
	State *analyze.State
	// Groups counts the outcome groups the readers classified; Sampled
	// the spans pulled for the trace sample (and the hops' first spans).
	Groups  int
	Sampled int64
	// Bytes is what came over the wire for all the queries, in
	// Requests HTTP requests.
	Bytes    int64
	Requests int
	// Notes say what the read should know: columns the table lacks, and
	// what was computed on the server and pulled.
	Notes []string
	// attrAgain counts the attribute values whose examples were asked
	// for again, grouped by trace.
	attrAgain int
	// attrPerKey counts the attribute values' queries asked attribute by
	// attribute.
	attrPerKey int
	// censusScans counts the scans for the attribute values' census
	// (censusScan).
	censusScans int
	// traceList counts the samples read by the traces' ids the digests'
	// scan brought.
	traceList int
}

// stages are SQL expressions computed level by level over a query's
// rows: each level's expressions ("e AS alias") see the columns of the
// query and of the levels before. A hash step refers to its input twice;
// as a column of the level before, the input is computed once, where an
// expression written twice (or bound through a one-element array, as
// before) costs its own evaluation or an array a row: the trace hash and
// the attempts' ranks on 10M spans ~2 s -> ~0.8 s on the test machine.
type stages [][]string

// wrap is q with the stages' columns added, one subquery a level.
func (st stages) wrap(q string) string {
	for _, lvl := range st {
		q = "SELECT *, " + strings.Join(lvl, ", ") + " FROM (" + q + ")"
	}
	return q
}

// and is st and o computed side by side (level i of both at level i).
func (st stages) and(o stages) stages {
	out := make(stages, max(len(st), len(o)))
	for i := range out {
		if i < len(st) {
			out[i] = append(out[i], st[i]...)
		}
		if i < len(o) {
			out[i] = append(out[i], o[i]...)
		}
	}
	return out
}

// then is st followed by o.
func (st stages) then(o stages) stages { return append(append(stages{}, st...), o...) }

// mixStages is analyze's 64-bit mixer (the trace hash's) of the UInt64
// column x, into column out; next, when not "", is xored into the
// result in its last step (the next word of a hash).
func mixStages(x, out, next string) stages {
	last := "bitXor(" + out + "_b, bitShiftRight(" + out + "_b, 31))"
	if next != "" {
		last = "bitXor(" + last + ", " + next + ")"
	}
	return stages{
		{"bitXor(" + x + ", bitShiftRight(" + x + ", 30)) * 13787848793156543929 AS " + out + "_a"},
		{"bitXor(" + out + "_a, bitShiftRight(" + out + "_a, 27)) * 10723151780598845931 AS " + out + "_b"},
		{last + " AS " + out},
	}
}

// traceHashStages is analyze.TraceHash of the text column s of 32 bytes
// (the readers' trace id: the digests' scan refuses a window with any
// other), into column out (the rule TestTraceHash32SQL holds to the Go
// hash): the length times the golden ratio, each 8-byte little-endian
// word xored in and mixed, then 0xff (the empty rest), mixed once more.
func traceHashStages(s, out string) stages {
	word := func(i int) string {
		return "reinterpretAsUInt64(substring(" + s + ", " + strconv.Itoa(i*8+1) + ", 8))"
	}
	golden := uint64(11400714819323198485)
	h0 := strconv.FormatUint(32*golden, 10)
	st := stages{{"bitXor(toUInt64(" + h0 + "), " + word(0) + ") AS " + out + "_x0"}}
	for i := range 4 {
		next, to := "", out+"_x"+strconv.Itoa(i+1)
		if i < 3 {
			next = word(i + 1)
		} else {
			next = "toUInt64(255)"
		}
		st = st.then(mixStages(out+"_x"+strconv.Itoa(i), to, next))
	}
	return st.then(mixStages(out+"_x4", out, ""))
}

// clzStages is the number of leading zero bits of the UInt64 column x,
// into column out: a trace's (or an attempt's) rank, which decides the
// levels that keep it. The highest set bit is floor(log2 x), settled
// against x's bits where the float rounds across a power of two.
func clzStages(x, out string) stages {
	e := out + "_e"
	return stages{
		{"toUInt8(floor(log2(" + x + "))) AS " + e},
		{"toUInt8(if(" + x + " = 0, 64, 63 - if(bitShiftRight(" + x + ", " + e + ") = 0, " + e + " - 1, if(" + e + " < 63 AND bitShiftRight(" + x + ", " + e + " + 1) != 0, " + e + " + 1, " + e + ")))) AS " + out},
	}
}

// keepRankStages is the rank analyze's keepTime gives an attempt: the
// leading zeros of mix(at ^ d * 0x9E3779B97F4A7C15), d being the
// duration or, for a failure, −1 − the duration (a level l keeps the
// attempts of rank ≥ l), of the Int64 columns at and d, into column out.
func keepRankStages(at, d, out string) stages {
	return stages{{"bitXor(toUInt64(" + at + "), toUInt64(" + d + ") * 11400714819323198485) AS " + out + "_k"}}.
		then(mixStages(out+"_k", out+"_m", "")).then(clzStages(out+"_m", out))
}

// Pushdown computes the state of the window of raw on the server: the
// aggregates of Aggregate and the rest of the per-hop state (examples,
// first span, attempt times, attribution), and the trace sample of
// sampleSpans spans as the readers keep it (whole traces under the
// level, pulled as spans through the readers). A window it cannot compute exactly is ErrNotPushable.
func Pushdown(ctx context.Context, raw string, o Options, in ingest.Options, sampleSpans int) (*Pushed, error) {
	if sampleSpans <= 0 {
		sampleSpans = analyze.DefaultSampleSpans
	}
	sa, err := serverAggregates(ctx, raw, o, in, sampleSpans)
	if err != nil {
		return nil, err
	}
	out, err := sa.pushdown(ctx, in, sampleSpans)
	sa.c.report(func(p *Progress) {
		p.Final, p.Failed = true, err != nil
		if out != nil {
			p.Rows, p.Bytes, p.Aggregated = int64(out.Groups)+out.Sampled, out.Bytes, out.State.Total
			out.Requests = p.Requests
		}
	})
	if out != nil {
		out.Notes = append(append(out.Notes, sa.p.notes...), fmt.Sprintf("ClickHouse: computed on the server (push-down) from %d spans of %s in %d outcome groups, %d spans pulled for the trace sample and the hops' first spans: %s over the wire in %d requests; the server applied %s",
			out.State.Total, sa.p.table, out.Groups, out.Sampled, units.Bytes(out.Bytes), out.Requests, strings.Join(sa.p.pushed, ", ")))
	}
	return out, err
}

// pushdown is the rest of Pushdown, once the counts and digests are in.
func (sa *serverSide) pushdown(ctx context.Context, in ingest.Options, sampleSpans int) (*Pushed, error) {
	c, p, inner, cls, groups, agg := sa.c, sa.p, sa.inner, sa.cls, sa.groups, sa.agg
	rows := rowsSQL(inner, aliases(inner), groupCols(aliases(inner)), cls)
	st := &analyze.State{SampleSpans: sampleSpans, Limit: sampleSpans, Total: agg.Spans}
	byHop := map[string]*analyze.HopState{}
	for i := range agg.Hops {
		byHop[agg.Hops[i].Name] = &agg.Hops[i]
	}
	for name, ex := range agg.examples {
		byHop[name].Examples = *ex
	}
	if err := c.times(ctx, rows, agg, byHop); err != nil {
		return nil, err
	}
	// The sample first: its spans tell attribution which keys not to ask
	// the values of (sampleCensus).
	hint := &sampleCensus{keys: map[hopKey]*sampleKey{}}
	n, err := c.sample(ctx, p, inner, agg, in, st, byHop, hint)
	if err != nil {
		return nil, err
	}
	if err := c.attribution(ctx, inner, cls, byHop, agg, hint); err != nil {
		return nil, err
	}
	st.Hops = agg.Hops
	return &Pushed{State: st, Groups: groups, Sampled: n, Bytes: c.wire.Load(), attrAgain: c.attrAgain, attrPerKey: c.attrPerKey, censusScans: c.censusScans, traceList: c.traceList}, nil
}

// inner is the pull query without its order and format, with the hop
// (h) and the fields a table may lack (k, m) as columns.
func (c *client) inner(p *plan) (string, error) {
	hop := c.hopExpr(p.sel)
	if hop == "" {
		return "", fmt.Errorf("%w: the hop is not a function of the table's columns", ErrNotPushable)
	}
	if strings.Count(p.sql, " ORDER BY ") != 1 {
		return "", fmt.Errorf("%w: the query's shape", ErrNotPushable)
	}
	inner, _, _ := strings.Cut(p.sql, " ORDER BY ")
	has := aliases(inner)
	for _, a := range []string{aService, aName, aStatus} {
		if !has[a] {
			return "", fmt.Errorf("%w: the table has no %s", ErrNotPushable, a)
		}
	}
	extra := hop + " AS h, "
	for _, a := range []string{aKind, aMessage} {
		if !has[a] {
			extra += "'' AS " + a + ", "
		}
	}
	return strings.Replace(inner, "SELECT ", "SELECT "+extra, 1), nil
}

// jsonLines calls f with each row of a JSONEachRow answer.
func (c *client) jsonLines(ctx context.Context, q string, f func([]byte) error) error {
	body, err := c.queryAll(ctx, q+" FORMAT JSONEachRow")
	if err != nil {
		return fmt.Errorf("%s: %w", c.t.Raw, err)
	}
	for _, line := range bytes.Split(body, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := f(line); err != nil {
			return err
		}
	}
	return nil
}

// normTraceSQL is the readers' text of a hex trace id x (record.NormID
// for hex: lowercase, left-padded with zeros to 32 digits); the reads
// that use it first check that every id of the window is hex and not all
// zeros (examples: else ErrNotPushable), the ids NormID keeps as hex.
func normTraceSQL(x string) string {
	return "leftPad(lower(" + x + "), greatest(32, length(" + x + ")), '0')"
}

// times fills each hop's attempt times: all of them while the hop has
// at most analyze.MaxHopTimes, else those of the least level at which
// the attempts it keeps fit (hoptimes.go). The scan of digests brought
// the attempts of rank ≥ a floor under that level; a hop whose level is
// below its floor (a hash that far from its expectation) is asked for
// again.
func (c *client) times(ctx context.Context, rows string, agg *Aggregates, byHop map[string]*analyze.HopState) error {
	level := map[string]uint8{}
	var again []string
	for h, rs := range agg.aranks {
		// The least level whose kept attempts (rank ≥ level) fit.
		kept, l := 0, 0
		for _, n := range rs {
			kept += n
		}
		for kept > analyze.MaxHopTimes && l < 63 {
			kept -= rs[l]
			l++
		}
		level[h] = uint8(l)
		if l < agg.floor[h] {
			again = append(again, h)
		}
	}
	for h, ts := range agg.times {
		hs := byHop[h]
		if hs == nil {
			return fmt.Errorf("%s: attempt times of hop %q, not among the hops", c.t.Raw, h)
		}
		hs.Times.Level = level[h]
		for i, r := range agg.timeRank[h] {
			if r >= level[h] {
				hs.Times.At = append(hs.Times.At, ts.At[i])
				hs.Times.D = append(hs.Times.D, ts.D[i])
			}
		}
	}
	if len(again) == 0 {
		return nil
	}
	var cond, list []string
	for _, h := range again {
		byHop[h].Times = analyze.TimesState{Level: level[h]}
		list = append(list, quoteString(h))
		cond = append(cond, "(h = "+quoteString(h)+" AND r >= "+strconv.Itoa(int(level[h]))+")")
	}
	// The condition on the rank in the aggregates, not in a WHERE (which
	// ClickHouse would push down through the stages: sample).
	tr := keepRankStages("s", "dd", "r").wrap("SELECT h, s, dd FROM (" + rows + ") WHERE h IN (" + strings.Join(list, ", ") + ")")
	kc := strings.Join(cond, " OR ")
	q := "SELECT h, groupArrayIf(s, " + kc + ") AS xat, groupArrayIf(dd, " + kc + ") AS xdd FROM (" + tr + ") GROUP BY h"
	return c.jsonLines(ctx, q, func(line []byte) error {
		var x struct {
			H  string
			At []json.Number `json:"xat"`
			Dd []json.Number `json:"xdd"`
		}
		if err := json.Unmarshal(line, &x); err != nil || byHop[x.H] == nil || len(x.At) != len(x.Dd) {
			return fmt.Errorf("%s: a hop's attempt times are not what was asked: %.200q", c.t.Raw, line)
		}
		ts := &byHop[x.H].Times
		for i := range x.At {
			ts.At = append(ts.At, int64(num(x.At[i])))
			ts.D = append(ts.D, int64(num(x.Dd[i])))
		}
		return nil
	})
}

// readSpans runs the pull query q (p's, with another WHERE or LIMIT)
// through the readers, calling f with each span.
func (c *client) readSpans(ctx context.Context, q string, in ingest.Options, f func(*span.Span)) (int64, error) {
	pr, pw := io.Pipe()
	var n int64
	go func() {
		var err error
		n, err = c.stream(ctx, &plan{sql: q}, pw)
		pw.CloseWithError(err)
	}()
	iopt := in
	iopt.Since, iopt.Until, iopt.HasSince, iopt.HasUntil = 0, 0, false, false
	iopt.Exclude, iopt.Remote, iopt.Borrowed = nil, nil, false
	_, err := ingest.ReadStream("clickhouse-pushdown.jsonl", pr, iopt, ingest.SinkFunc(f))
	pr.Close()
	return n, err
}

// sample fills st's trace sample and each hop's first span (its
// service, name and route), in one ordered read through the readers: the
// level is the least at which the spans of the traces of rank ≥ level
// fit sampleSpans (what an Accum reaches level by level); the read takes
// those traces' spans and each hop's first row in the pull query's order
// (among those with the least of its order terms up to the start:
// firstTerms), so that the first span of a hop in the read is the hop's
// first.
//
// Every span read (the sample's and the hops' first ones: spans of the
// window) goes into cen, attribution's census of the sample.
func (c *client) sample(ctx context.Context, p *plan, inner string, agg *Aggregates, in ingest.Options, st *analyze.State, byHop map[string]*analyze.HopState, cen *sampleCensus) (int64, error) {
	ranks := agg.tranks
	var kept int64
	for _, n := range ranks {
		kept += n
	}
	l := 0
	for kept > int64(st.SampleSpans) && l < 63 {
		kept -= ranks[l]
		l++
	}
	if kept == 0 && st.Total > 0 {
		return 0, fmt.Errorf("%w: one trace outgrows the sample", ErrNotPushable)
	}
	st.Level = uint(l)
	body, order, _ := strings.Cut(p.sql, " ORDER BY ")
	q := body
	if l > 0 {
		// Each hop's first row: its order terms up to the start hash to
		// one of the least of the hop's classes, which the digests' scan
		// gave (not a second scan here: 1M spans, ~1 s of the server's
		// CPU less). The other rows they bring (a class's least that is
		// not its hop's, rows that share those terms) come after their
		// hop's first in the read. Like the
		// outcome groups', the hash is 64 bits: a row of another hop
		// that hashed alike and came before that hop's first would be
		// taken for it.
		// The terms are hashed only for the rows that start when one of
		// those rows does (AND is short-circuited).
		firsts := "0"
		if len(agg.firsts) > 0 {
			fs := make([]string, len(agg.firsts))
			ss := make([]string, len(agg.firstStart))
			for i, f := range agg.firsts {
				fs[i] = strconv.FormatUint(f, 10)
			}
			for i, f := range agg.firstStart {
				ss[i] = strconv.FormatInt(f, 10)
			}
			firsts = "(s IN (" + strings.Join(ss, ", ") + ") AND cityHash64(tuple(" + firstTerms(p) + ")) IN (" + strings.Join(fs, ", ") + "))"
		}
		// The sampled traces: those of rank ≥ l among the ones the
		// digests' scan brought, by a 56-bit hash of their ids (a trace
		// that hashes alike is read and left out here), sent as one
		// base64 text of their 8 bytes each (~11 bytes an id, where a
		// decimal list takes ~22: the query stays under ClickHouse's
		// default max_query_size, 256 KiB, at the default sample's ~16k
		// traces), when l is not under their floor and the text is
		// short enough; else their ids gathered by an aggregate of the
		// traces' hash rather than filtered by a WHERE: ClickHouse
		// pushes a WHERE down through the stages' subqueries, writing
		// the hash out as one expression whose size doubles with each
		// step (1M spans: 0.2 s -> 25 s).
		sampled := "t IN (SELECT arrayJoin(groupArrayIf(t, bitShiftRight(th, " + strconv.Itoa(64-l) + ") = 0)) FROM (" + traceHashStages("tn", "th").wrap("SELECT t, "+normTraceSQL("t")+" AS tn FROM ("+inner+")") + "))"
		if agg.traceFloor > 0 && l >= agg.traceFloor {
			hs := make([]uint64, 0, len(agg.traceIDs))
			for id, r := range agg.traceIDs {
				if int(r) >= l {
					hs = append(hs, id)
				}
			}
			slices.Sort(hs)
			b := make([]byte, 8*len(hs))
			for i, h := range hs {
				binary.LittleEndian.PutUint64(b[8*i:], h)
			}
			if enc := base64.StdEncoding.EncodeToString(b); len(hs) > 0 && len(enc) <= maxTraceText {
				c.traceList++
				sampled = traceIDSQL + " IN (SELECT arrayJoin(arrayMap(j -> reinterpretAsUInt64(substring(b, j * 8 + 1, 8)), range(" + strconv.Itoa(len(hs)) + "))) FROM (SELECT base64Decode('" + enc + "') AS b))"
			}
		}
		q += " AND (" + sampled + " OR " + firsts + ")"
	}
	q += " ORDER BY " + order
	acc := analyze.NewAccum(st.SampleSpans)
	seen := map[string]bool{}
	var bad error
	n, err := c.readSpans(ctx, q, in, func(sp *span.Span) {
		cen.add(sp)
		if !seen[sp.Hop] {
			seen[sp.Hop] = true
			hs := byHop[sp.Hop]
			if hs == nil {
				bad = fmt.Errorf("%w: a span of hop %q the aggregates do not have", ErrNotPushable, sp.Hop)
				return
			}
			first := analyze.NewAccum(1)
			first.Add(sp)
			hs.First = first.State().Hops[0].First
		}
		if l == 0 || analyze.TraceHash(sp.TraceID)>>(64-l) == 0 {
			acc.Add(sp)
		}
	})
	if err == nil {
		err = bad
	}
	if err == nil && len(seen) != len(byHop) {
		err = fmt.Errorf("%w: %d hops' first spans for %d hops", ErrNotPushable, len(seen), len(byHop))
	}
	if err != nil {
		return n, err
	}
	sub := acc.State()
	if sub.Level != 0 || sub.Limit != st.SampleSpans || int64(len(sub.Sample)) != kept {
		return n, fmt.Errorf("%w: the sample pulled (%d spans, level %d) is not the one counted (%d spans)", ErrNotPushable, len(sub.Sample), sub.Level, kept)
	}
	st.Sample = sub.Sample
	return n, nil
}

// maxTraceText bounds the text of the sampled traces' ids in the sample's
// query (ClickHouse parses at most max_query_size, 256 KiB by default).
var maxTraceText = 200 << 10

// State computes the state of the window of path on the server, for
// pipeline.Pushdown (which Remote is, without importing it): the state,
// the read's statistics as the pull path would give them (the URL read as
// OTLP, every span used), and declined, the reason, when the window
// cannot be computed exactly here (ErrNotPushable, or a reader option
// that only the readers apply) and must be pulled.
func (r Remote) State(path string, in ingest.Options, sampleSpans int) (*analyze.State, *ingest.Stats, string, error) {
	switch {
	case in.Format != "" && in.Format != "auto" && in.Format != "otlp":
		return nil, nil, fmt.Sprintf("%s %s: the server's rows are OTLP", r.Options.Names.Of(option.Input), in.Format), nil
	case len(in.Exclude) > 0:
		return nil, nil, r.Options.Names.Of(option.ExcludeWindow) + " is applied by the readers", nil
	}
	p, err := Pushdown(context.Background(), path, r.Options, in, sampleSpans)
	if errors.Is(err, ErrNotPushable) {
		return nil, nil, strings.TrimPrefix(err.Error(), ErrNotPushable.Error()+": "), nil
	}
	if err != nil {
		return nil, nil, "", err
	}
	st := &ingest.Stats{Files: []string{path}, Formats: map[string]string{path: "otlp"}, SkippedByReason: map[string]int64{}, FilteredByReason: map[string]int64{},
		Read: p.State.Total, Used: p.State.Total, Notes: p.Notes}
	return p.State, st, "", nil
}
