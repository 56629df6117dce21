package clickhouse

// The analysis state of a window built on the server (push-down): the
// per-hop counts and digests (pushdown.go), each hop's examples, first
// span and attempt times, and the trace sample, as an analyze.State that
// analyze.FromState checks and turns into the Accum the readers would
// have filled — but for attribution, which is not pushed down (a hop's
// state has none: HasAttr false).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/span"
)

// Pushed is a window's state computed on the server.
type Pushed struct {
	// State is the analysis state, without attribution.
	State *analyze.State
	// Groups counts the outcome groups the readers classified; Sampled
	// the spans pulled for the trace sample (and the hops' first spans).
	Groups  int
	Sampled int64
	// Bytes is what came over the wire for all the queries.
	Bytes int64
}

// mixSQL is analyze's 64-bit mixer (the trace hash's) of x, in SQL.
func mixSQL(x string) string {
	x = "bitXor(" + x + ", bitShiftRight(" + x + ", 30))"
	x = "(" + x + " * 13787848793156543929)"
	x = "bitXor(" + x + ", bitShiftRight(" + x + ", 27))"
	x = "(" + x + " * 10723151780598845931)"
	return "bitXor(" + x + ", bitShiftRight(" + x + ", 31))"
}

// traceHashSQL is analyze.TraceHash of the text expression s (the rule
// TestTraceHashSQL holds to the Go hash).
func traceHashSQL(s string) string {
	h0 := "(toUInt64(length(" + s + ")) * 11400714819323198485)"
	words := "arrayMap(i -> reinterpretAsUInt64(substring(" + s + ", i * 8 + 1, 8)), range(intDiv(length(" + s + "), 8)))"
	h := "arrayFold((acc, v) -> " + mixSQL("bitXor(acc, v)") + ", " + words + ", " + h0 + ")"
	rest := "reinterpretAsUInt64(substring(" + s + ", intDiv(length(" + s + "), 8) * 8 + 1))"
	return mixSQL("bitXor(bitXor(" + h + ", " + rest + "), 255)")
}

// clzSQL is the number of leading zero bits of the UInt64 x: a trace's
// (or an attempt's) rank, which decides the levels that keep it.
func clzSQL(x string) string {
	return "if(" + x + " = 0, 64, arrayFirstIndex(j -> bitShiftRight(" + x + ", 64 - j) != 0, range(1, 65)) - 1)"
}

// keepSQL is analyze's keepTime rank of an attempt: the leading zeros
// of mix(at ^ d * 0x9E3779B97F4A7C15), d being the duration or, for a
// failure, −1 − the duration (a level l keeps the attempts of rank ≥ l).
func keepSQL(at, d string) string {
	return clzSQL(mixSQL("bitXor(toUInt64(" + at + "), toUInt64(" + d + ") * 11400714819323198485)"))
}

// Pushdown computes the state of the window of raw on the server: the
// aggregates of Aggregate and the rest of the per-hop state but
// attribution, and the trace sample of sampleSpans spans as the readers
// keep it (whole traces under the level, pulled as spans through the
// readers). A window it cannot compute exactly is ErrNotPushable.
func Pushdown(ctx context.Context, raw string, o Options, in ingest.Options, sampleSpans int) (*Pushed, error) {
	if sampleSpans <= 0 {
		sampleSpans = analyze.DefaultSampleSpans
	}
	if in.HopBy != "" && in.HopBy != "service+name" || len(in.Map) > 0 || in.Hops != nil || in.ExcludeHops != nil {
		return nil, fmt.Errorf("%w: only the default hop, without --map or hop filters, is aggregated on the server", ErrNotPushable)
	}
	t, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	o = o.withDefaults(time.Now())
	var mu sync.Mutex
	var prog Progress
	c := &client{t: t, o: o, report: func(f func(*Progress)) { mu.Lock(); f(&prog); mu.Unlock() }}
	p, err := c.plan(ctx)
	if err != nil {
		return nil, err
	}
	inner, err := c.inner(p)
	if err != nil {
		return nil, err
	}
	cls, groups, err := c.classes(ctx, inner, in)
	if err != nil {
		return nil, err
	}
	agg, err := c.digests(ctx, inner, cls)
	if err != nil {
		return nil, err
	}
	has := aliases(inner)
	rows := "SELECT h, d, s, t, " + normTraceSQL("t") + " AS tn, i, p, " + classSQL(has, cls) + " AS cl FROM (SELECT *, " + strings.Join(groupCols(has), ", ") + " FROM (" + inner + "))"
	if !has[aParent] {
		rows = strings.Replace(rows, "SELECT h, d, s, t, "+normTraceSQL("t")+" AS tn, i, p,", "SELECT h, d, s, t, "+normTraceSQL("t")+" AS tn, i, '' AS p,", 1)
	}
	st := &analyze.State{SampleSpans: sampleSpans, Limit: sampleSpans, Total: agg.Spans}
	byHop := map[string]*analyze.HopState{}
	for i := range agg.Hops {
		byHop[agg.Hops[i].Name] = &agg.Hops[i]
	}
	if err := c.examples(ctx, rows, byHop); err != nil {
		return nil, err
	}
	if err := c.times(ctx, rows, byHop); err != nil {
		return nil, err
	}
	pulled, err := c.firsts(ctx, p, in, byHop)
	if err != nil {
		return nil, err
	}
	n, err := c.sample(ctx, p, rows, in, st)
	if err != nil {
		return nil, err
	}
	st.Hops = agg.Hops
	return &Pushed{State: st, Groups: groups, Sampled: n + pulled, Bytes: c.wire.Load()}, nil
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

// examples fills each hop's examples: the longest attempt, cut attempt
// and other failure, the shortest other failure (ties: the smaller
// trace id), as analyze's top1 and bottom1 keep them.
func (c *client) examples(ctx context.Context, rows string, byHop map[string]*analyze.HopState) error {
	q := "SELECT h, countIf(NOT match(t, '^[0-9a-fA-F]+$') OR match(t, '^0+$')) AS odd, " +
		"argMin((d, tn), (-d, tn)) AS sl, argMinIf((d, tn), (-d, tn), cl = 1) AS fl, argMinIf((d, tn), (-d, tn), cl = 2) AS ot, argMinIf((d, tn), (d, tn), cl = 2) AS ff FROM (" + rows + ") GROUP BY h"
	return c.jsonLines(ctx, q, func(line []byte) error {
		var r struct {
			H              string
			Odd            json.Number
			Sl, Fl, Ot, Ff [2]json.RawMessage
		}
		if err := json.Unmarshal(line, &r); err != nil || byHop[r.H] == nil {
			return fmt.Errorf("%s: a hop's examples are not what was asked: %.200q", c.t.Raw, line)
		}
		if num(r.Odd) != 0 {
			return fmt.Errorf("%w: trace ids the readers would write otherwise (%s of hop %q)", ErrNotPushable, r.Odd, r.H)
		}
		hs := byHop[r.H]
		for _, x := range []struct {
			dst *[]analyze.Example
			src [2]json.RawMessage
		}{{&hs.Examples.Slowest, r.Sl}, {&hs.Examples.Flagged, r.Fl}, {&hs.Examples.Other, r.Ot}, {&hs.Examples.FastFail, r.Ff}} {
			var d json.Number
			var tr string
			if json.Unmarshal(x.src[0], &d) != nil || json.Unmarshal(x.src[1], &tr) != nil {
				return fmt.Errorf("%s: a hop's examples are not what was asked: %.200q", c.t.Raw, line)
			}
			if tr != "" {
				*x.dst = []analyze.Example{{Duration: int64(num(d)), Trace: tr}}
			}
		}
		return nil
	})
}

// times fills each hop's attempt times: all of them while the hop has
// at most analyze.MaxHopTimes, else those of the least level at which
// the attempts it keeps fit (hoptimes.go), in the query's order.
func (c *client) times(ctx context.Context, rows string, byHop map[string]*analyze.HopState) error {
	tr := "SELECT h, s, t, i, p, d, if(cl = 0, d, -1 - d) AS dd, " + keepSQL("s", "dd") + " AS r FROM (" + rows + ")"
	level := map[string]uint8{}
	ranks := map[string][]int{}
	err := c.jsonLines(ctx, "SELECT h, r, count() AS n FROM ("+tr+") GROUP BY h, r", func(line []byte) error {
		var x struct {
			H    string
			R, N json.Number
		}
		if err := json.Unmarshal(line, &x); err != nil || byHop[x.H] == nil || num(x.R) < 0 || num(x.R) > 64 {
			return fmt.Errorf("%s: a hop's attempt ranks are not what was asked: %.200q", c.t.Raw, line)
		}
		if ranks[x.H] == nil {
			ranks[x.H] = make([]int, 65)
		}
		ranks[x.H][num(x.R)] += num(x.N)
		return nil
	})
	if err != nil {
		return err
	}
	var cond []string
	for h, rs := range ranks {
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
		if l > 0 {
			cond = append(cond, "(h = "+quoteString(h)+" AND r < "+strconv.Itoa(l)+")")
		}
	}
	where := ""
	if len(cond) > 0 {
		where = " WHERE NOT (" + strings.Join(cond, " OR ") + ")"
	}
	q := "SELECT h, arrayMap(x -> x.1, arraySort(x -> (x.1, x.3, x.4, x.5, x.6), groupArray((s, dd, t, i, p, d)))) AS xat, " +
		"arrayMap(x -> x.2, arraySort(x -> (x.1, x.3, x.4, x.5, x.6), groupArray((s, dd, t, i, p, d)))) AS xdd FROM (" + tr + ")" + where + " GROUP BY h"
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
		ts.Level = level[x.H]
		ts.At, ts.D = make([]int64, len(x.At)), make([]int64, len(x.At))
		for i := range x.At {
			a, _ := strconv.ParseInt(strings.Trim(string(x.At[i]), `"`), 10, 64)
			d, _ := strconv.ParseInt(strings.Trim(string(x.Dd[i]), `"`), 10, 64)
			ts.At[i], ts.D[i] = a, d
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

// firsts fills each hop's first span (its service, name and route), the
// first in the query's order, read through the readers.
func (c *client) firsts(ctx context.Context, p *plan, in ingest.Options, byHop map[string]*analyze.HopState) (int64, error) {
	body, _, _ := strings.Cut(p.sql, " FORMAT ")
	q := body + " LIMIT 1 BY " + c.hopExpr(p.sel) + " FORMAT RowBinaryWithNamesAndTypes"
	seen := map[string]bool{}
	var bad error
	n, err := c.readSpans(ctx, q, in, func(sp *span.Span) {
		hs := byHop[sp.Hop]
		if hs == nil || seen[sp.Hop] {
			bad = fmt.Errorf("%w: a first span of hop %q the aggregates do not have", ErrNotPushable, sp.Hop)
			return
		}
		seen[sp.Hop] = true
		acc := analyze.NewAccum(1)
		acc.Add(sp)
		hs.First = acc.State().Hops[0].First
	})
	if err == nil {
		err = bad
	}
	if err == nil && len(seen) != len(byHop) {
		err = fmt.Errorf("%w: %d hops' first spans for %d hops", ErrNotPushable, len(seen), len(byHop))
	}
	return n, err
}

// sample fills st's trace sample: the level is the least at which the
// spans of the traces of rank ≥ level fit sampleSpans (what an Accum
// reaches level by level), and those traces' spans are pulled, in the
// query's order, through the readers.
func (c *client) sample(ctx context.Context, p *plan, rows string, in ingest.Options, st *analyze.State) (int64, error) {
	ranks := make([]int64, 65)
	err := c.jsonLines(ctx, "SELECT "+clzSQL(traceHashSQL("tn"))+" AS r, count() AS n FROM ("+rows+") GROUP BY r", func(line []byte) error {
		var x struct{ R, N json.Number }
		if err := json.Unmarshal(line, &x); err != nil || num(x.R) < 0 || num(x.R) > 64 {
			return fmt.Errorf("%s: the traces' ranks are not what was asked: %.200q", c.t.Raw, line)
		}
		ranks[num(x.R)] += int64(num(x.N))
		return nil
	})
	if err != nil {
		return 0, err
	}
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
	body, _, _ := strings.Cut(p.sql, " ORDER BY ")
	_, order, _ := strings.Cut(p.sql, " ORDER BY ")
	q := body
	if l > 0 {
		q += " AND bitShiftRight(" + traceHashSQL(normTraceSQL("ifNull(toString("+p.sel[FieldTraceID]+"), '')")) + ", " + strconv.Itoa(64-l) + ") = 0"
	}
	q += " ORDER BY " + order
	acc := analyze.NewAccum(st.SampleSpans)
	n, err := c.readSpans(ctx, q, in, func(sp *span.Span) { acc.Add(sp) })
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
