package clickhouse

// The per-hop aggregates computed on the server (issue 41's push-down):
// what the readers keep per hop over every span (analyze.HopState's
// counts and its three duration digests), without pulling the spans.
//
// Which class an attempt falls in (success, failure cut by a timeout,
// other failure) is never written in SQL: the server groups the window's
// spans by what decides a span's hop and outcome (service, name, kind,
// status, message, and of the attributes only those the readers read an
// outcome from), one row per group goes through the readers (the same
// OTLP line and package ingest as the pull path) into an analyze.Accum,
// and the class that Accum gives the group's span is the class of every
// span of the group. The digests are then one GROUP BY per hop and class:
// the sorted durations while the hop has at most quantile.ExactLimit
// attempts, the sketch's bins (quantile.Bin, computed in SQL with a
// correction table so that it is the same bin for every integer) past it.

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/span"
)

// outcomeKeys are the span attributes the readers take a span's outcome
// from (record.TraceRecord.AddAttr, and "error", the OpenTracing flag):
// the only attributes a group's representative carries. A key added to
// the readers and not here makes TestPushdownClasses fail on the
// fixtures that use it.
var outcomeKeys = []string{
	"error", "error.type", "http.response.status_code", "http.status_code", "rpc.grpc.status_code", "grpc.status_code",
	"otel.status_code", "otel.status_description", "response_flags", "envoy.response_flags", "upstream.response_flags",
}

// groupHopKey is the attribute a group's span carries the server's name
// of its hop in, to be checked against the readers' name.
const groupHopKey = "tailscope.pushdown.hop"

// ErrNotPushable says a read cannot be aggregated on the server and
// must take the pull path; the message says why.
var ErrNotPushable = errors.New("not pushable")

// Aggregates are a window's per-hop state computed on the server.
type Aggregates struct {
	// Hops are by name, with the counts and digests of analyze.HopState
	// (the rest of a HopState is not pushed down yet).
	Hops []analyze.HopState
	// Spans counts the spans aggregated; Groups the outcome groups the
	// readers classified.
	Spans  int64
	Groups int
	// Bytes is what came over the wire for all the queries.
	Bytes int64

	// What the same scan gave for the rest of the state (state.go): the
	// examples by hop, the attempts' keepTime ranks by hop, and the
	// traces' ranks (leading zeros of the trace hash) over all spans.
	examples map[string]*analyze.HopExampleState
	aranks   map[string][]int
	tranks   []int64
	// firsts are the hashes (cityHash64) of the least order terms up to
	// the start (firstTerms) of each hop and class: the hops' first rows
	// are among the rows whose terms hash to one of them (sample).
	firsts []uint64
	// firstStart are those rows' start times (the order's term s): the
	// sample's read hashes the terms of the rows that start then only.
	firstStart []int64
	// census is each hop's attribute keys with their raw values (at most
	// AttrMaxValues+1 a hop id), when attribution needs a census scan
	// (censusScan); withAttr the hops with a span that has attributes
	// the readers keep, badText the spans whose attribute text is not
	// UTF-8, by hop (attribution).
	census   map[hopKey]map[string]bool
	withAttr map[string]bool
	badText  map[string]int
	// times are each hop's attempt times of rank ≥ floor[hop], timeRank
	// their ranks.
	floor    map[string]int
	times    map[string]*analyze.TimesState
	timeRank map[string][]uint8
	// ids are the hops by their id (hopCounts), which the later scans
	// group by.
	ids *hopIDs
	// traceIDs are the traces of rank ≥ traceFloor (when not 0) by their
	// traceIDSQL, with their ranks (digests).
	traceIDs   map[uint64]uint8
	traceFloor int
}

// Aggregate computes the per-hop counts and digests of the window of raw
// on the server. in is how the readers are asked to read (HopBy and Map
// as for the pull path); only the default hop is pushed down.
func Aggregate(ctx context.Context, raw string, o Options, in ingest.Options) (*Aggregates, error) {
	sa, err := serverAggregates(ctx, raw, o, in, 0)
	if err != nil {
		return nil, err
	}
	sa.agg.Groups = sa.groups
	sa.agg.Bytes = sa.c.wire.Load()
	return sa.agg, nil
}

// serverSide is what Aggregate and Pushdown both compute first: the
// client and its plan, the window's row query (inner), the outcome class
// of each group of rows, and the per-hop counts and digests.
type serverSide struct {
	c      *client
	p      *plan
	inner  string
	cls    map[uint64]class
	groups int
	agg    *Aggregates
}

// aggregateWait bounds the wait for a push-down query's answer to begin
// when the Timeout is shorter: an aggregation answers only once the
// server has read the whole window (at 10M spans on the test machine,
// some queries took 30 s).
var aggregateWait = 10 * time.Minute

// serverAggregates runs the steps Aggregate and Pushdown share, refusing
// what only the pull path reads exactly (another hop, a field map, a hop
// filter ClickHouse's match may read otherwise than Go). The hop and its
// filters are in's, so that the server's query and the readers agree.
//
// sampleSpans, when not 0, is the trace sample's bound: the digests'
// scan brings the ids (cityHash64) of the traces the sample may take
// (digests).
func serverAggregates(ctx context.Context, raw string, o Options, in ingest.Options, sampleSpans int) (*serverSide, error) {
	if in.HopBy != "" && in.HopBy != "service+name" || len(in.Map) > 0 {
		return nil, fmt.Errorf("%w: only the default hop, without %s, is aggregated on the server", ErrNotPushable, o.Names.Of(option.Map))
	}
	for _, x := range []struct {
		opt option.Option
		re  *regexp.Regexp
	}{{option.Hops, in.Hops}, {option.ExcludeHops, in.ExcludeHops}} {
		if x.re != nil && !pushable(x.re) {
			return nil, fmt.Errorf("%w: %s %q may not mean to ClickHouse's match what it means to Go", ErrNotPushable, o.Names.Of(x.opt), x.re.String())
		}
	}
	o.HopBy, o.Hops, o.ExcludeHops = in.HopBy, in.Hops, in.ExcludeHops
	t, err := parse(raw, o.Names)
	if err != nil {
		return nil, err
	}
	o = o.withDefaults(time.Now())
	var mu sync.Mutex
	prog := Progress{Source: t.Raw, Pushdown: true}
	c := &client{t: t, o: o, begin: aggregateWait, report: func(f func(*Progress)) {
		mu.Lock()
		f(&prog)
		p := prog
		mu.Unlock()
		if o.Progress != nil {
			o.Progress(p)
		}
	}}
	p, err := c.plan(ctx)
	if err != nil {
		return nil, err
	}
	inner, err := c.inner(p)
	if err != nil {
		return nil, err
	}
	ids, err := c.hopCounts(ctx, p)
	if err != nil {
		return nil, err
	}
	cls, groups, agg, err := c.digests(ctx, p, inner, in, ids, sampleSpans)
	if err != nil {
		return nil, err
	}
	return &serverSide{c: c, p: p, inner: inner, cls: cls, groups: groups, agg: agg}, nil
}

// sigSQL is the outcome group of a row of inner: the hash of what the
// readers take its outcome from.
const sigSQL = "cityHash64(c, m, fk, fv, fek, fev)"

// groupCols are the outcome group's columns over inner's aliases.
func groupCols(has map[string]bool) []string {
	keys := make([]string, len(outcomeKeys))
	for i, k := range outcomeKeys {
		keys[i] = quoteString(k)
	}
	in := "(" + strings.Join(keys, ", ") + ")"
	exc := "('exception.type', 'exception.message')"
	arr := func(a, e string) string {
		if has[a] {
			return e
		}
		return "CAST([], 'Array(String)')"
	}
	arr2 := func(a, e string) string {
		if has[a] {
			return e
		}
		return "CAST([], 'Array(Array(String))')"
	}
	return []string{
		arr(aKeys, "arrayFilter(x -> x IN "+in+", ak)") + " AS fk",
		arr(aKeys, "arrayFilter((v, x) -> x IN "+in+", av, ak)") + " AS fv",
		arr(aResKeys, "arrayFilter(x -> x = 'service.name', rk)") + " AS frk",
		arr(aResKeys, "arrayFilter((v, x) -> x = 'service.name', rv, rk)") + " AS frv",
		arr2(aExcKeys, "arrayMap(e -> arrayFilter(x -> x IN "+exc+", e), ek)") + " AS fek",
		arr2(aExcKeys, "arrayMap((v, e) -> arrayFilter((y, x) -> x IN "+exc+", v, e), ev, ek)") + " AS fev",
	}
}

// aliases lists which of the pull query's aliases inner selects.
func aliases(inner string) map[string]bool {
	has := map[string]bool{}
	for a := range aliasType {
		if strings.Contains(inner, " AS "+a+",") || strings.Contains(inner, " AS "+a+" FROM") {
			has[a] = true
		}
	}
	return has
}

// class is an attempt's class in a hop's digests.
type class uint8

const (
	cSucc class = iota
	cFlagged
	cOther
)

// hopIDs are the hops of a window by the hash of the columns that name
// them (hidSQL), each hop's attempts, and the SQL of the hash.
type hopIDs struct {
	sql  string
	hop  map[uint64]string
	hops map[string]int
}

// of is the SQL of what f gives a row's hop (SQL literals of the
// array type typ), by its hop id; or for an id not among them.
func (h *hopIDs) of(f func(hop string) string, typ, or string) string {
	ids := make([]uint64, 0, len(h.hop))
	for id := range h.hop {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	ks, vs := make([]string, len(ids)), make([]string, len(ids))
	for i, id := range ids {
		ks[i], vs[i] = strconv.FormatUint(id, 10), f(h.hop[id])
	}
	return "transform(hid, CAST([" + strings.Join(ks, ", ") + "], 'Array(UInt64)'), CAST([" + strings.Join(vs, ", ") + "], '" + typ + "'), " + or + ")"
}

// in is the SQL condition that a row's hop id is one of the hops keep
// says.
func (h *hopIDs) in(keep func(hop string) bool) string {
	var ks []string
	for id, hop := range h.hop {
		if keep(hop) {
			ks = append(ks, strconv.FormatUint(id, 10))
		}
	}
	if len(ks) == 0 {
		return "0"
	}
	sort.Strings(ks)
	return "hid IN (" + strings.Join(ks, ", ") + ")"
}

// hopCounts counts each hop's spans in the window (the pull query's
// WHERE: the window and the hop filters), before the digests' scan,
// which needs them to choose exact values or a sketch and the attempt
// times' floor. The rows are grouped by a hash of the columns that name
// the hop (service, name, kind: the hop id), and the hop is named over
// the groups, not over every row: on 10M generated spans ~0.35 s of the
// server's CPU, where grouping by the columns took ~0.85 s and naming
// each row's hop more. The later scans take the hop id, not the hop's
// name, a row (a number to group by and look up, where the name is text
// put together from three columns), and name the hop over their groups.
// Two column triples that hashed alike would be taken for one hop: the
// span the digests' scan brings of each outcome group, which carries its
// columns, would then be named another hop by the readers
// (ErrNotPushable), never give wrong numbers.
func (c *client) hopCounts(ctx context.Context, p *plan) (*hopIDs, error) {
	from := " FROM " + quoteIdent(c.t.Database) + "." + quoteIdent(c.t.Table) + " WHERE "
	i := strings.LastIndex(p.sql, from)
	j := strings.LastIndex(p.sql, " ORDER BY ")
	if i < 0 || j < i {
		return nil, fmt.Errorf("%w: the query's shape", ErrNotPushable)
	}
	cols := []string{p.sel[FieldService], p.sel[FieldName]}
	sub := map[string]string{FieldService: "_sv", FieldName: "_nm"}
	if p.sel[FieldKind] != "" {
		cols = append(cols, p.sel[FieldKind])
		sub[FieldKind] = "_kd"
	}
	hop := c.hopExpr(sub)
	if hop == "" {
		return nil, fmt.Errorf("%w: the hop is not a function of the table's columns", ErrNotPushable)
	}
	anyOf := make([]string, len(cols))
	for k, a := range []string{"_sv", "_nm", "_kd"}[:len(cols)] {
		anyOf[k] = "any(" + cols[k] + ") AS " + a
	}
	ids := &hopIDs{sql: "cityHash64(" + strings.Join(cols, ", ") + ")", hop: map[uint64]string{}, hops: map[string]int{}}
	q := "SELECT hid, hex(" + hop + ") AS hx, _c AS n FROM (SELECT " + ids.sql + " AS hid, " + strings.Join(anyOf, ", ") + ", count() AS _c" + p.sql[i:j] + " GROUP BY hid)"
	err := c.jsonLines(ctx, q, func(line []byte) error {
		var r struct {
			Hid, N json.Number
			Hx     string
		}
		bad := fmt.Errorf("%s: a hop's count is not what was asked: %.200q", c.t.Raw, line)
		if json.Unmarshal(line, &r) != nil || num(r.N) <= 0 {
			return bad
		}
		h, err1 := hex.DecodeString(r.Hx)
		id, err2 := strconv.ParseUint(strings.Trim(string(r.Hid), `"`), 10, 64)
		if err1 != nil || err2 != nil {
			return bad
		}
		ids.hop[id] = string(h)
		ids.hops[string(h)] += num(r.N)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n := ids.hops[""]; n > 0 {
		return nil, fmt.Errorf("%w: %d spans have no hop (the readers skip them with their reason)", ErrNotPushable, n)
	}
	return ids, nil
}

// group is one outcome group of the digests' scan, spelt as the pull
// query's row (rows.go) of one of its spans.
type group struct {
	r   row
	hop string
}

// classify reads one span of every outcome group through the readers
// (the same OTLP line and package ingest as the pull path) and returns
// each group's class, by the hash of what decides it (the group's span
// comes back with that hash as its trace id); a group the readers skip
// is classified by none: its spans fail the read (digests).
func classify(gs []group, in ingest.Options) (map[uint64]class, error) {
	var buf bytes.Buffer
	var conv converter
	for i := range gs {
		g := &gs[i]
		conv.r = g.r
		conv.r.AK = append(append([][]byte(nil), g.r.AK...), []byte(groupHopKey))
		conv.r.AV = append(append([][]byte(nil), g.r.AV...), []byte(g.hop))
		buf.Write(conv.line())
	}
	out := map[uint64]class{}
	var bad error
	iopt := in
	iopt.Since, iopt.Until, iopt.HasSince, iopt.HasUntil = 0, 0, false, false
	iopt.Exclude = nil
	_, err := ingest.ReadStream("clickhouse-groups.jsonl", &buf, iopt, ingest.SinkFunc(func(sp *span.Span) {
		sig, perr := strconv.ParseUint(strings.TrimLeft(sp.TraceID, "0"), 16, 64)
		if perr != nil || len(sp.TraceID) != 32 {
			bad = fmt.Errorf("a group's span came back with trace id %q", sp.TraceID)
			return
		}
		h := ""
		for _, a := range sp.Attrs {
			if a.Key == groupHopKey {
				h = a.Value
			}
		}
		if h != sp.Hop {
			bad = fmt.Errorf("%w: the server names a hop %q, the readers %q", ErrNotPushable, h, sp.Hop)
			return
		}
		acc := analyze.NewAccum(1)
		x := *sp
		x.Attrs = nil
		acc.Add(&x)
		hs := acc.State().Hops[0]
		k := cSucc
		switch {
		case hs.Cut == 1:
			k = cFlagged
		case hs.Failed == 1:
			k = cOther
		}
		if prev, ok := out[sig]; ok && prev != k {
			bad = fmt.Errorf("%w: one outcome group in two classes", ErrNotPushable)
		}
		out[sig] = k
	}))
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// classSQL is the class of a row of inner, given the groups' classes.
func classSQL(has map[string]bool, cls map[uint64]class) string {
	keys := make([]uint64, 0, len(cls))
	for k := range cls {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	var ks, vs []string
	for _, k := range keys {
		ks = append(ks, strconv.FormatUint(k, 10))
		vs = append(vs, strconv.Itoa(int(cls[k])))
	}
	// A row of a group the readers did not classify is class 255, which
	// fails the read (digests): never counted as a success.
	return "transform(" + sigSQL + ", CAST([" + strings.Join(ks, ",") + "], 'Array(UInt64)'), CAST([" + strings.Join(vs, ",") + "], 'Array(UInt8)'), toUInt8(255))"
}

// digests computes each hop's counts and digests, and what the rest of
// the state needs (Aggregates' unexported fields), in one scan of the
// window grouped by hop and outcome group (what decides a span's hop and
// outcome: groupCols, with service, name, kind, status and message), so
// that the groups are classified after the scan, here, and not by a scan
// of their own before it (10M generated spans: ~4.2 s of the server's CPU
// that scan took). Per group: a span of the group to classify; the
// counts, examples and ranks; the sorted durations of the hops of at most
// quantile.ExactLimit attempts (hops counts each hop's attempts:
// hopCounts), the sketch's bins of the others; and the attempt times of
// each hop, all of them for a hop of at most analyze.MaxHopTimes
// attempts, else those of a rank that the hop's level cannot be below
// (times settles the level and, in the rare case it is lower, asks
// again). An attempt's rank depends on whether it failed (analyze's
// keepTime hashes −1 − the duration of a failure), which the server does
// not know: it computes both ranks, and the group's class picks one.
// The groups are then merged by hop and class, as the readers' state
// has them. It returns the groups' classes (by sigSQL) and their number.
//
// With sampleSpans, the scan also brings the traces whose rank (tr) is
// at least one level under the one sampleSpans is expected to reach (the
// least level whose share of the spans fits it), as the cityHash64 of
// their ids with their ranks: the sample's read takes its traces by
// them (sample) rather than hashing every trace of the window again.
func (c *client) digests(ctx context.Context, p *plan, inner string, in ingest.Options, ids *hopIDs, sampleSpans int) (map[uint64]class, int, *Aggregates, error) {
	hops := ids.hops
	has := aliases(inner)
	gc := groupCols(has)
	// The same scan brings what attribution and the sample's read need
	// (one scan of the window fewer each): the rows' order terms (ord,
	// their least by hop and class: the hops' first rows), and whether a
	// span has attributes the readers keep (kany) and text that is not
	// UTF-8 (kbad). Not the census of attribute values: that comes from
	// the trace sample (attribution; ~0.45 s of the server's CPU a
	// million spans, a third of this scan's).
	terms := firstTerms(p)
	cen := census(has, false)
	rows := "SELECT hid, d, s, t, " + normTraceSQL("t") + " AS tn, i, -1 - d AS df, gh, sv, n, k, c, m, fk, fv, frk, frv, fek, fev, ord, " + strings.Join(cen.names, ", ") +
		" FROM (SELECT *, cityHash64(sv, n, k, c, m, fk, fv, frk, frv, fek, fev) AS gh FROM (SELECT *, " + strings.Join(gc, ", ") + ", " + strings.Join(cen.cols, ", ") +
		" FROM (" + strings.Replace(inner, "SELECT ", "SELECT "+ids.sql+" AS hid, tuple("+terms+") AS ord, ", 1) + ")))"
	type cnt struct {
		Hx                   string
		Xsv, Xn, Xk, Xc, Xm  string
		Xfk, Xfv, Xfrk, Xfrv []string
		Xfek, Xfev           [][]string
		Gs, Gd               json.Number
		T, I                 string
		N, Lo, Hi, Zero, Bad json.Number
		Odd                  json.Number
		Sl, Ff               json.RawMessage
		Tra, Ara, Araf       map[string]json.Number
		Vals                 []json.Number
		Bns                  map[string]json.Number
		Tms                  [][4]json.Number
		Trh                  []json.Number
		Fh, Fs               json.Number
		Na, Nbad             json.Number
	}
	agg := &Aggregates{examples: map[string]*analyze.HopExampleState{}, aranks: map[string][]int{}, tranks: make([]int64, 65),
		floor: map[string]int{}, times: map[string]*analyze.TimesState{}, timeRank: map[string][]uint8{},
		census: map[hopKey]map[string]bool{}, withAttr: map[string]bool{}, badText: map[string]int{}, ids: ids}
	for h, n := range hops {
		// A floor under the level of a hop's times: one below the least
		// level e whose expected share of n fits the bound (a level l
		// keeps the attempts whose hash has l leading zeros: 1 in 2^l),
		// so that the scan brings at most about twice the bound. The
		// level is below the floor only if the attempts of rank ≥ e−2,
		// expected to be 2 to 4 times the bound, fit it: then times asks
		// again.
		l := 0
		for n>>l > analyze.MaxHopTimes {
			l++
		}
		l = max(0, l-floorBelow)
		if n <= analyze.MaxHopTimes {
			l = 0
		}
		agg.floor[h] = l
	}
	exact := ids.in(func(h string) bool { return hops[h] <= quantile.ExactLimit })
	sketched := ids.in(func(h string) bool { return hops[h] > quantile.ExactLimit })
	floor := ids.of(func(h string) string { return strconv.Itoa(agg.floor[h]) }, "Array(UInt8)", "toUInt8(0)")
	// The traces' floor: one level under the expected one (as the
	// attempt times'), so that the sample's level is below it only when
	// the ranks are that far from their expectation (then the sample
	// hashes the traces itself).
	var total int
	for _, n := range hops {
		total += n
	}
	trh := "CAST([], 'Array(UInt64)') AS trh"
	if sampleSpans > 0 {
		l := 0
		for total>>l > sampleSpans {
			l++
		}
		if l-traceFloorBelow > 0 {
			agg.traceFloor = l - traceFloorBelow
			// One number a trace: the hash's upper 56 bits, the rank
			// in the lowest byte (1M generated spans: ~0.2 s of the
			// server's CPU less than a tuple of both).
			trh = "groupUniqArrayIf(bitOr(" + traceIDSQL + ", tr), tr >= " + strconv.Itoa(agg.traceFloor) + ") AS trh"
		}
	}
	hexs := func(a string) string { return "arrayMap(x -> hex(x), " + a + ")" }
	// A span the readers would skip (no trace or span id, no hop, a
	// negative duration) makes the read ErrNotPushable: the readers
	// count it with its reason. A trace id the readers would write
	// otherwise (odd): not hex, all zeros, or longer than 32 digits
	// (one pattern, not two; tn's length is t's, or 32).
	// The attempt times carry both ranks (ars: of a success, arf: of a
	// failure), and come when either reaches the floor.
	aggs := "SELECT hid, gh, any(sv) AS gsv, any(n) AS gn, any(k) AS gk, any(c) AS gc, any(m) AS gm, any(fk) AS gfk, any(fv) AS gfv, any(frk) AS gfrk, any(frv) AS gfrv, " +
		"any(fek) AS gfek, any(fev) AS gfev, any(s) AS gs, any(d) AS gd, " +
		"count() AS cnt, min(d) AS lo, max(d) AS hi, countIf(d < 1) AS zero, " +
		"countIf(t = '' OR i = '' OR d < 0) AS bad, countIf(length(t) > 32 OR NOT match(t, '^[0-9a-fA-F]*[1-9a-fA-F][0-9a-fA-F]*$')) AS odd, " +
		"max(" + keySQL("d", false, true) + ") AS sl, min(" + keySQL("d", false, false) + ") AS ff, " +
		"sumMap(map(toUInt8(tr), toUInt64(1))) AS tra, sumMap(map(toUInt8(ars), toUInt64(1))) AS ara, sumMap(map(toUInt8(arf), toUInt64(1))) AS araf, " +
		"groupArrayIf(d, " + exact + ") AS vals, " +
		"sumMapIf(map(toInt32(b), toUInt64(1)), " + sketched + " AND d >= 1) AS bns, " +
		"groupArrayIf((s, d, ars, arf), greatest(ars, arf) >= " + floor + ") AS tms, min(ord) AS mo, " + trh + ", " +
		cen.aggs + " " +
		"FROM (SELECT *, if(" + sketched + " AND d >= 1, " + binSQL("d") + ", 0) AS b FROM (" +
		traceHashStages("tn", "th").then(clzStages("th", "tr")).and(keepRankStages("s", "d", "ars")).and(keepRankStages("s", "df", "arf")).wrap(rows) + ")) GROUP BY hid, gh"
	// The groups in the order of their least order terms by hop, so that
	// a class's first group has the class's least (the hops' first rows),
	// each with the span that stands for it spelt as the pull query's row
	// (text as hex: the readers must see its bytes), its trace id the
	// hash of what decides its class (sigSQL), its span id one of the
	// group's hop too.
	q := binWith() + "SELECT hex(h) AS hx, hex(gsv) AS xsv, hex(gn) AS xn, hex(gk) AS xk, hex(gc) AS xc, hex(gm) AS xm, " +
		hexs("gfk") + " AS xfk, " + hexs("gfv") + " AS xfv, " + hexs("gfrk") + " AS xfrk, " + hexs("gfrv") + " AS xfrv, " +
		"arrayMap(e -> " + hexs("e") + ", gfek) AS xfek, arrayMap(e -> " + hexs("e") + ", gfev) AS xfev, gs, gd, " +
		"leftPad(lower(hex(cityHash64(gc, gm, gfk, gfv, gfek, gfev))), 32, '0') AS t, lower(hex(cityHash64(h, gsv, gn, gk, cityHash64(gc, gm, gfk, gfv, gfek, gfev)))) AS i, " +
		"cnt AS n, lo, hi, zero, bad, odd, sl, ff, tra, ara, araf, vals, bns, tms, trh, cityHash64(mo) AS fh, tupleElement(mo, " + strconv.Itoa(startTerm(p)) + ") AS fs, " +
		strings.Join(cen.outs, ", ") + " FROM (SELECT *, " + ids.of(quoteString, "Array(String)", "''") + " AS h FROM (" + aggs + ")) ORDER BY h, mo FORMAT JSONEachRow"
	body, err := c.queryAll(ctx, q)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("%s: %w", c.t.Raw, err)
	}
	var rs []cnt
	var gs []group
	unhex := func(s string) ([]byte, error) { return hex.DecodeString(s) }
	unhexs := func(ss []string) ([][]byte, error) {
		out := make([][]byte, len(ss))
		for i, s := range ss {
			b, err := hex.DecodeString(s)
			if err != nil {
				return nil, err
			}
			out[i] = b
		}
		return out, nil
	}
	for _, line := range bytes.Split(body, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r cnt
		bad := func() error { return fmt.Errorf("%s: a hop's counts are not what was asked: %.200q", c.t.Raw, line) }
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, 0, nil, bad()
		}
		h, err := unhex(r.Hx)
		if err != nil {
			return nil, 0, nil, bad()
		}
		r.Hx = string(h)
		g := group{hop: r.Hx}
		var errs [13]error
		g.r.SV, errs[0] = unhex(r.Xsv)
		g.r.N, errs[1] = unhex(r.Xn)
		g.r.K, errs[2] = unhex(r.Xk)
		g.r.C, errs[3] = unhex(r.Xc)
		g.r.M, errs[4] = unhex(r.Xm)
		g.r.AK, errs[5] = unhexs(r.Xfk)
		g.r.AV, errs[6] = unhexs(r.Xfv)
		g.r.RK, errs[7] = unhexs(r.Xfrk)
		g.r.RV, errs[8] = unhexs(r.Xfrv)
		for _, e := range r.Xfek {
			x, err := unhexs(e)
			errs[9] = errors.Join(errs[9], err)
			g.r.EK = append(g.r.EK, x)
		}
		for _, e := range r.Xfev {
			x, err := unhexs(e)
			errs[10] = errors.Join(errs[10], err)
			g.r.EV = append(g.r.EV, x)
		}
		g.r.S, g.r.D = value{int64(num(r.Gs)), true}, value{int64(num(r.Gd)), true}
		g.r.T, g.r.I = []byte(r.T), []byte(r.I)
		if errors.Join(errs[:]...) != nil {
			return nil, 0, nil, bad()
		}
		rs, gs = append(rs, r), append(gs, g)
	}
	cls, err := classify(gs, in)
	if err != nil {
		return nil, 0, nil, err
	}
	byHop := map[string]*analyze.HopState{}
	var names []string
	type merged struct {
		n, lo, hi, zero int
		vals            []int64
		bins            map[int]uint64
		first           bool
	}
	counts := map[string]*[3]merged{}
	for _, r := range rs {
		sig, err := strconv.ParseUint(r.T, 16, 64)
		k, ok := cls[sig]
		if err != nil || !ok {
			return nil, 0, nil, fmt.Errorf("%w: %s spans of hop %q fall in no outcome group the readers classified", ErrNotPushable, r.N, r.Hx)
		}
		if counts[r.Hx] == nil {
			counts[r.Hx] = &[3]merged{}
			names = append(names, r.Hx)
		}
		if num(r.Bad) != 0 {
			return nil, 0, nil, fmt.Errorf("%w: %s spans of hop %q lack an id or a hop or have a negative duration (the readers skip them with their reason)", ErrNotPushable, r.Bad, r.Hx)
		}
		if num(r.Odd) != 0 {
			return nil, 0, nil, fmt.Errorf("%w: trace ids the readers would write otherwise (%s of hop %q)", ErrNotPushable, r.Odd, r.Hx)
		}
		ara := r.Ara
		if k != cSucc {
			ara = r.Araf
		}
		if err := agg.ranks(r.Hx, r.Tra, ara); err != nil {
			return nil, 0, nil, fmt.Errorf("%s: %v", c.t.Raw, err)
		}
		sl, err1 := unkey(r.Sl, false, true)
		ff, err2 := unkey(r.Ff, false, false)
		if err1 != nil || err2 != nil {
			return nil, 0, nil, fmt.Errorf("%s: a hop's examples are not what was asked: %.200q", c.t.Raw, r.T)
		}
		ex := agg.examples[r.Hx]
		if ex == nil {
			ex = &analyze.HopExampleState{}
			agg.examples[r.Hx] = ex
		}
		// The longest attempt of every class, the longest cut attempt,
		// the longest and the shortest other failure (analyze's top1
		// and bottom1), over the class's groups.
		longer := func(a analyze.Example, b []analyze.Example) bool {
			return len(b) == 0 || a.Duration > b[0].Duration || a.Duration == b[0].Duration && a.Trace < b[0].Trace
		}
		if longer(sl, ex.Slowest) {
			ex.Slowest = []analyze.Example{sl}
		}
		switch k {
		case cFlagged:
			if longer(sl, ex.Flagged) {
				ex.Flagged = []analyze.Example{sl}
			}
		case cOther:
			if longer(sl, ex.Other) {
				ex.Other = []analyze.Example{sl}
			}
			if len(ex.FastFail) == 0 || ff.Duration < ex.FastFail[0].Duration || ff.Duration == ex.FastFail[0].Duration && ff.Trace < ex.FastFail[0].Trace {
				ex.FastFail = []analyze.Example{ff}
			}
		}
		m := &counts[r.Hx][k]
		n := num(r.N)
		if m.n == 0 {
			m.lo, m.hi = num(r.Lo), num(r.Hi)
		}
		m.n += n
		m.lo, m.hi, m.zero = min(m.lo, num(r.Lo)), max(m.hi, num(r.Hi)), m.zero+num(r.Zero)
		for _, v := range r.Vals {
			m.vals = append(m.vals, int64(num(v)))
		}
		for b, x := range r.Bns {
			if m.bins == nil {
				m.bins = map[int]uint64{}
			}
			bin, err := strconv.Atoi(b)
			if err != nil {
				return nil, 0, nil, fmt.Errorf("%s: a hop's bins are not what was asked: %.200q", c.t.Raw, b)
			}
			m.bins[bin] += uint64(num(x))
		}
		if !m.first {
			// The class's first group in the order has its least terms.
			m.first = true
			fh, err := strconv.ParseUint(strings.Trim(string(r.Fh), `"`), 10, 64)
			if err != nil {
				return nil, 0, nil, fmt.Errorf("%s: a hop's first row is not what was asked: %.200q", c.t.Raw, r.Fh)
			}
			agg.firsts = append(agg.firsts, fh)
			agg.firstStart = append(agg.firstStart, int64(num(r.Fs)))
		}
		// The spans with attributes the readers keep, and with text that
		// is not UTF-8 (the values are the sample's or censusScan's).
		if num(r.Na) > 0 {
			agg.withAttr[r.Hx] = true
		}
		agg.badText[r.Hx] += num(r.Nbad)
		// The traces of rank ≥ the traces' floor.
		for _, x := range r.Trh {
			id, err := strconv.ParseUint(strings.Trim(string(x), `"`), 10, 64)
			id, rank := id&^0xff, int(id&0xff)
			if err != nil || rank < agg.traceFloor || rank > 64 {
				return nil, 0, nil, fmt.Errorf("%s: a trace's id is not what was asked: %.200q", c.t.Raw, x)
			}
			if agg.traceIDs == nil {
				agg.traceIDs = map[uint64]uint8{}
			}
			agg.traceIDs[id] = uint8(rank)
		}
		// The attempt times of rank ≥ the floor, by the group's class.
		ts := agg.times[r.Hx]
		if ts == nil {
			ts = &analyze.TimesState{}
			agg.times[r.Hx] = ts
		}
		for _, x := range r.Tms {
			d, rank := int64(num(x[1])), num(x[2])
			if k != cSucc {
				d, rank = -1-d, num(x[3])
			}
			if rank >= agg.floor[r.Hx] {
				ts.At = append(ts.At, int64(num(x[0])))
				ts.D = append(ts.D, d)
				agg.timeRank[r.Hx] = append(agg.timeRank[r.Hx], uint8(rank))
			}
		}
	}
	sort.Strings(names)
	if len(names) != len(hops) {
		return nil, 0, nil, fmt.Errorf("%w: %d hops counted, %d in the digests' scan", ErrNotPushable, len(hops), len(names))
	}
	for _, name := range names {
		if hops[name] == 0 {
			return nil, 0, nil, fmt.Errorf("%w: hop %q is not among the hops counted", ErrNotPushable, name)
		}
		hs := &analyze.HopState{Name: name}
		sk := hops[name] > quantile.ExactLimit
		for k, m := range counts[name] {
			n := m.n
			switch class(k) {
			case cFlagged:
				hs.Failed += n
				hs.Cut += n
			case cOther:
				hs.Failed += n
			}
			hs.Attempts += n
			st := [3]*quantile.State{&hs.Succ, &hs.Flagged, &hs.Other}[k]
			*st = quantile.State{N: n, Sketch: sk}
			if n == 0 {
				continue
			}
			st.Min, st.Max = int64(m.lo), int64(m.hi)
			if !sk {
				st.Values = m.vals
				slices.Sort(st.Values)
				continue
			}
			st.Sketch, st.Zero = true, m.zero
			if len(m.bins) == 0 {
				continue
			}
			lo, hi := math.MaxInt, math.MinInt
			for b := range m.bins {
				lo, hi = min(lo, b), max(hi, b)
			}
			st.Lo, st.Bins = lo, make([]uint64, hi-lo+1)
			for b, x := range m.bins {
				st.Bins[b-lo] += x
			}
		}
		for _, st := range []*quantile.State{&hs.Succ, &hs.Flagged, &hs.Other} {
			st.Sketch = sk // a class without attempts too
		}
		if hs.Attempts != hops[name] || sk != (hs.Attempts > quantile.ExactLimit) {
			return nil, 0, nil, fmt.Errorf("%w: hop %q: %d attempts, %d counted", ErrNotPushable, name, hs.Attempts, hops[name])
		}
		for _, d := range []quantile.State{hs.Succ, hs.Flagged, hs.Other} {
			if _, err := quantile.FromState(d); err != nil {
				return nil, 0, nil, fmt.Errorf("%s: hop %q: the server's digest does not check: %v", c.t.Raw, name, err)
			}
		}
		agg.Spans += int64(hs.Attempts)
		byHop[name] = hs
	}
	for _, name := range names {
		agg.Hops = append(agg.Hops, *byHop[name])
	}
	return cls, len(gs), agg, nil
}

// traceIDSQL is a trace's id in the sample's read (sample): the upper 56
// bits of cityHash64 of the pull query's t.
const traceIDSQL = "bitAnd(cityHash64(t), 18446744073709551360)"

// floorBelow is how many levels under the expected one the attempt
// times' floor lies (a test sets it negative to reach the second ask);
// traceFloorBelow the traces' (sample).
var floorBelow, traceFloorBelow = 1, 1

// example reads a (duration, trace id) tuple.

// ranks adds a hop's and class's rank counts (sumMap's of a Map a row:
// rank to count).
func (a *Aggregates) ranks(hop string, tra, ara map[string]json.Number) error {
	if a.aranks[hop] == nil {
		a.aranks[hop] = make([]int, 65)
	}
	for _, x := range []struct {
		m   map[string]json.Number
		add func(r, n int)
	}{{tra, func(r, n int) { a.tranks[r] += int64(n) }}, {ara, func(r, n int) { a.aranks[hop][r] += n }}} {
		for k, n := range x.m {
			r, err := strconv.Atoi(k)
			if err != nil || r < 0 || r > 64 {
				return fmt.Errorf("hop %q: rank %q", hop, k)
			}
			x.add(r, num(n))
		}
	}
	return nil
}

// rowsSQL is the rows of inner with their class (cl), the readers'
// trace id (tn) and the duration as a hop's times hold it (dd: −1 − the
// duration for a failure).
// extra, when given, are more columns of the rows, at each of the
// three levels: computed from inner's, then from those, then from those.
func rowsSQL(inner string, has map[string]bool, gc []string, cls map[uint64]class, extra ...string) string {
	p := "p"
	if !has[aParent] {
		p = "'' AS p"
	}
	var x [3]string
	for i, e := range extra {
		if e != "" {
			x[i] = ", " + e
		}
	}
	return "SELECT h, d, s, t, " + normTraceSQL("t") + " AS tn, i, " + p + ", cl, if(cl = 0, d, -1 - d) AS dd" + x[2] + " FROM (SELECT h, d, s, t, i, " + p + ", " +
		classSQL(has, cls) + " AS cl" + x[1] + " FROM (SELECT *, " + strings.Join(gc, ", ") + x[0] + " FROM (" + inner + ")))"
}

// startTerm is the place (from 1) of the start time (s) among the
// terms of the pull query's order (build: the schema's, then s, t, i,
// p, d; none has a comma).
func startTerm(p *plan) int {
	for i, t := range strings.Split(orderTerms(p), ", ") {
		if t == aStart {
			return i + 1
		}
	}
	return 0
}

// firstTerms is the terms of the pull query's order up to the start
// time (s), by which the hops' first rows are found: a hop's first row in
// the order has the least of them among the hop's rows, and the rows
// that share those terms with it come after it (the order goes on by
// the other terms); taking the least of the prefix rather than of all
// terms (t, i, p, d: text) cost ~0.1-0.15 s less of the server's CPU on
// 1M spans.
func firstTerms(p *plan) string {
	n := startTerm(p)
	if n == 0 {
		return orderTerms(p)
	}
	return strings.Join(strings.Split(orderTerms(p), ", ")[:n], ", ")
}

// orderTerms is the terms of the pull query's total order.
func orderTerms(p *plan) string {
	_, order, _ := strings.Cut(p.sql, " ORDER BY ")
	terms, _, _ := strings.Cut(order, " FORMAT ")
	return terms
}

// num reads a count ClickHouse wrote as a number or as a quoted one.
func num(n json.Number) int {
	x, _ := strconv.ParseInt(strings.Trim(string(n), `"`), 10, 64)
	return int(x)
}

// queryAll POSTs q and returns the whole answer, however long (the
// aggregates' answers: at most ExactLimit durations a hop and class).
func (c *client) queryAll(ctx context.Context, q string) ([]byte, error) {
	resp, err := c.post(ctx, q)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// Bins in SQL. quantile.Bin(x) is ceil(ln x / ln γ); ClickHouse's log
// may round differently from Go's at a bin's edge, so the SQL takes its
// own estimate c and settles it against the least integer of bins c and
// c+1 (binLo, computed here with quantile.Bin itself): the estimate is
// never off by more than one bin. Below binSmall, where bins hold at
// most one integer, a table gives the bin outright.
const binSmall = 1024

var binTables = sync.OnceValues(func() (small []int, lo []uint64) {
	small = make([]int, binSmall)
	for x := 1; x < binSmall; x++ {
		small[x] = quantile.Bin(int64(x))
	}
	// lo[j] is the least integer whose bin is at least first+j, for the
	// bins from that of binSmall up to MaxBin+1 (2^63: no int64 there).
	first := quantile.Bin(binSmall)
	for b := first; b <= quantile.MaxBin+1; b++ {
		if b == quantile.MaxBin+1 {
			lo = append(lo, 1<<63)
			break
		}
		// The least x ≥ binSmall with Bin(x) ≥ b.
		l, h := int64(binSmall), int64(math.MaxInt64)
		for l < h {
			m := l + (h-l)/2
			if quantile.Bin(m) >= b {
				h = m
			} else {
				l = m + 1
			}
		}
		lo = append(lo, uint64(l))
	}
	return small, lo
})

// binWith is the WITH clause binSQL needs: the tables, once a query.
func binWith() string {
	small, lo := binTables()
	var sb strings.Builder
	sb.WriteString("WITH CAST([")
	for i, b := range small[1:] {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(b))
	}
	sb.WriteString("], 'Array(Int32)') AS _bsmall, CAST([")
	for i, v := range lo {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.FormatUint(v, 10))
	}
	sb.WriteString("], 'Array(UInt64)') AS _blo ")
	return sb.String()
}

// binSQL is quantile.Bin of the Int64 expression x (≥ 1) in SQL, in a
// query that starts with binWith.
func binSQL(x string) string {
	first := quantile.Bin(binSmall)
	lnG := strconv.FormatFloat(math.Log((1+quantile.SketchAlpha)/(1-quantile.SketchAlpha)), 'g', -1, 64)
	// c is the estimate; _blo[c - first + 1] is bin c's least integer,
	// _blo[c - first + 2] bin c+1's.
	c := "toInt32(ceil(log(toFloat64(" + x + ")) / " + lnG + "))"
	j := "greatest(" + c + " - " + strconv.Itoa(first) + " + 1, 1)"
	u := "toUInt64(" + x + ")"
	return "if(" + x + " < " + strconv.Itoa(binSmall) + ", arrayElement(_bsmall, toUInt32(greatest(" + x + ", 1))), " +
		c + " + toInt32(" + u + " >= arrayElement(_blo, " + j + " + 1)) - toInt32(" + u + " < arrayElement(_blo, " + j + ")))"
}
