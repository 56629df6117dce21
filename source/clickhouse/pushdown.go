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
	// AttrMaxValues+1 a class), withAttr the hops with a span that has
	// attributes the readers keep, badText the spans whose attribute text
	// is not UTF-8, by hop (attribution).
	census   map[hopKey]map[string]bool
	withAttr map[string]bool
	badText  map[string]int
	// times are each hop's attempt times of rank ≥ floor[hop], timeRank
	// their ranks.
	floor    map[string]int
	times    map[string]*analyze.TimesState
	timeRank map[string][]uint8
}

// Aggregate computes the per-hop counts and digests of the window of raw
// on the server. in is how the readers are asked to read (HopBy and Map
// as for the pull path); only the default hop is pushed down.
func Aggregate(ctx context.Context, raw string, o Options, in ingest.Options) (*Aggregates, error) {
	sa, err := serverAggregates(ctx, raw, o, in)
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
func serverAggregates(ctx context.Context, raw string, o Options, in ingest.Options) (*serverSide, error) {
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
	cls, hops, groups, err := c.classes(ctx, inner, in)
	if err != nil {
		return nil, err
	}
	agg, err := c.digests(ctx, p, inner, cls, hops)
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

// classes reads one span of every outcome group through the readers and
// returns each group's class, by the group's hash.
func (c *client) classes(ctx context.Context, inner string, in ingest.Options) (map[uint64]class, map[string]int, int, error) {
	has := aliases(inner)
	// A group whose span the readers skip is classified by none: its
	// rows are class 255, which fails the read (digests).
	// Grouped by the hash of what the group is (as the classes are
	// looked up by sigSQL's), not by those columns, arrays among them:
	// 1M spans, 0.6 -> 0.47 s of the server's CPU.
	var anyOf []string
	for _, a := range []string{"fk", "fv", "frk", "frv", "fek", "fev", "sv", "n", "k", "c", "m"} {
		anyOf = append(anyOf, "any("+a+") AS "+a)
	}
	q := "SELECT h, " + strings.Join(anyOf, ", ") + ", any(s) AS s0, any(d) AS d0, count() AS cnt FROM (SELECT h, " + strings.Join(groupCols(has), ", ") +
		", sv, n, k, c, m, s, d, cityHash64(sv, n, k, c, m, fk, fv, frk, frv, fek, fev) AS gh FROM (" + inner + ")) GROUP BY h, gh"
	// The representative rows, spelled with the pull query's aliases so
	// that the same decoder writes them as OTLP lines: the group's hash
	// is its trace and span id, by which its span comes back.
	rep := "SELECT s0 AS s, d0 AS d, leftPad(lower(hex(" + sigSQL + ")), 32, '0') AS t, lower(hex(cityHash64(h, sv, n, k, " + sigSQL + "))) AS i, sv, n, k, c, m, frk AS rk, frv AS rv, arrayConcat(fk, ['tailscope.pushdown.hop', 'tailscope.pushdown.count']) AS ak, arrayConcat(fv, [h, toString(cnt)]) AS av, fek AS ek, fev AS ev FROM (" + q + ")"
	cols := "s, d, t, i, sv, n, k, c, m, rk, rv, ak, av, ek, ev"
	if !has[aExcKeys] {
		cols = strings.TrimSuffix(cols, ", ek, ev")
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := c.stream(ctx, &plan{sql: "SELECT " + cols + " FROM (" + rep + ") FORMAT RowBinaryWithNamesAndTypes"}, pw)
		pw.CloseWithError(err)
	}()
	out := map[uint64]class{}
	hops := map[string]int{}
	var bad error
	groups := 0
	iopt := in
	iopt.Since, iopt.Until, iopt.HasSince, iopt.HasUntil = 0, 0, false, false
	iopt.Exclude = nil
	_, err := ingest.ReadStream("clickhouse-groups.jsonl", pr, iopt, ingest.SinkFunc(func(sp *span.Span) {
		sig, perr := strconv.ParseUint(strings.TrimLeft(sp.TraceID, "0"), 16, 64)
		if perr != nil || len(sp.TraceID) != 32 {
			bad = fmt.Errorf("a group's span came back with trace id %q", sp.TraceID)
			return
		}
		h := ""
		n := 0
		for _, a := range sp.Attrs {
			switch a.Key {
			case groupHopKey:
				h = a.Value
			case groupHopKey[:len(groupHopKey)-3] + "count":
				n, _ = strconv.Atoi(a.Value)
			}
		}
		hops[h] += n
		groups++
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
	pr.Close()
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, nil, 0, err
	}
	return out, hops, groups, nil
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
// the state needs (Aggregates' unexported fields), in one scan: the
// classes' counts, examples and ranks; the sorted durations of the hops
// of at most quantile.ExactLimit attempts (hops counts each hop's
// attempts, from the classes' scan), the sketch's bins of the others;
// and the attempt times of each hop, all of them for a hop of at most
// analyze.MaxHopTimes attempts, else those of a rank that the hop's level
// cannot be below (times.go settles the level and, in the rare case it
// is lower, asks again).
func (c *client) digests(ctx context.Context, p *plan, inner string, cls map[uint64]class, hops map[string]int) (*Aggregates, error) {
	has := aliases(inner)
	gc := groupCols(has)
	// The same scan brings what attribution's census and the sample's
	// read need (one scan of the window fewer each): the rows' order
	// terms (ord, their least by hop and class: the hops' first rows),
	// and the attributes attribution reads (keys kk, values kvv; kany,
	// whether the readers keep any; kbad, whether any text is not UTF-8).
	terms := firstTerms(p)
	cen := census(has)
	rows := rowsSQL(strings.Replace(inner, "SELECT ", "SELECT tuple("+terms+") AS ord, ", 1), has, gc, cls,
		"", "ord, "+strings.Join(cen.cols, ", "), "ord, "+strings.Join(cen.names, ", "))
	type cnt struct {
		H                    string
		Cl                   int
		N, Lo, Hi, Zero, Bad json.Number
		Odd                  json.Number
		Sl, Ff               json.RawMessage
		Tra, Ara             [2][]json.Number
		Vals                 []json.Number
		Bns                  [2][]json.Number
		Tms                  [][3]json.Number
		Fh, Fs               json.Number
		Na, Nbad             json.Number
		Vr, Va               map[string][]string
		Vsn, Vsr             []string
	}
	var exact, sketched, hk, hl []string
	agg := &Aggregates{examples: map[string]*analyze.HopExampleState{}, aranks: map[string][]int{}, tranks: make([]int64, 65),
		floor: map[string]int{}, times: map[string]*analyze.TimesState{}, timeRank: map[string][]uint8{},
		census: map[hopKey]map[string]bool{}, withAttr: map[string]bool{}, badText: map[string]int{}}
	for h, n := range hops {
		if n > quantile.ExactLimit {
			sketched = append(sketched, quoteString(h))
		} else {
			exact = append(exact, quoteString(h))
		}
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
		hk, hl = append(hk, quoteString(h)), append(hl, strconv.Itoa(l))
	}
	sort.Strings(exact)
	sort.Strings(sketched)
	in := func(list []string) string {
		if len(list) == 0 {
			return "0"
		}
		return "h IN (" + strings.Join(list, ", ") + ")"
	}
	floor := "toUInt8(0)"
	if len(hk) > 0 {
		floor = "transform(h, [" + strings.Join(hk, ", ") + "], CAST([" + strings.Join(hl, ", ") + "], 'Array(UInt8)'), toUInt8(0))"
	}
	// A span the readers would skip (no trace or span id, no hop, a
	// negative duration) makes the read ErrNotPushable: the readers
	// count it with its reason. A trace id the readers would write
	// otherwise (odd): not hex, all zeros, or longer than 32 digits
	// (one pattern, not two; tn's length is t's, or 32).
	q := binWith() + "SELECT h, cl, count() AS n, min(d) AS lo, max(d) AS hi, countIf(d < 1) AS zero, " +
		"countIf(t = '' OR i = '' OR h = '' OR d < 0) AS bad, countIf(length(t) > 32 OR NOT match(t, '^[0-9a-fA-F]*[1-9a-fA-F][0-9a-fA-F]*$')) AS odd, " +
		"max(" + keySQL("d", false, true) + ") AS sl, min(" + keySQL("d", false, false) + ") AS ff, " +
		"sumMap([toUInt8(tr)], [toUInt64(1)]) AS tra, sumMap([toUInt8(ar)], [toUInt64(1)]) AS ara, " +
		"groupArrayIf(d, " + in(exact) + ") AS vals, " +
		"sumMapIf([toInt32(b)], [toUInt64(1)], " + in(sketched) + " AND d >= 1) AS bns, " +
		"groupArrayIf((s, dd, ar), ar >= " + floor + ") AS tms, cityHash64(min(ord)) AS fh, tupleElement(min(ord), " + strconv.Itoa(startTerm(p)) + ") AS fs, " +
		cen.aggs + " " +
		"FROM (SELECT *, if(" + in(sketched) + " AND d >= 1, " + binSQL("d") + ", 0) AS b FROM (" +
		traceHashStages("tn", "th").then(clzStages("th", "tr")).and(keepRankStages("s", "dd", "ar")).wrap(rows) + ")) GROUP BY h, cl FORMAT JSONEachRow"
	body, err := c.queryAll(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.t.Raw, err)
	}
	byHop := map[string]*analyze.HopState{}
	var names []string
	counts := map[string]*[3]cnt{}
	for _, line := range bytes.Split(body, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r cnt
		if err := json.Unmarshal(line, &r); err != nil || r.Cl < 0 || len(r.Bns[0]) != len(r.Bns[1]) {
			return nil, fmt.Errorf("%s: a hop's counts are not what was asked: %.200q", c.t.Raw, line)
		}
		if r.Cl > 2 {
			return nil, fmt.Errorf("%w: %s spans of hop %q fall in no outcome group the readers classified", ErrNotPushable, r.N, r.H)
		}
		if counts[r.H] == nil {
			counts[r.H] = &[3]cnt{}
			names = append(names, r.H)
		}
		counts[r.H][r.Cl] = r
		if num(r.Bad) != 0 {
			return nil, fmt.Errorf("%w: %s spans of hop %q lack an id or a hop or have a negative duration (the readers skip them with their reason)", ErrNotPushable, r.Bad, r.H)
		}
		if num(r.Odd) != 0 {
			return nil, fmt.Errorf("%w: trace ids the readers would write otherwise (%s of hop %q)", ErrNotPushable, r.Odd, r.H)
		}
		if err := agg.ranks(r.H, r.Tra, r.Ara); err != nil {
			return nil, fmt.Errorf("%s: %v", c.t.Raw, err)
		}
		sl, err1 := unkey(r.Sl, false, true)
		ff, err2 := unkey(r.Ff, false, false)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: a hop's examples are not what was asked: %.200q", c.t.Raw, line)
		}
		ex := agg.examples[r.H]
		if ex == nil {
			ex = &analyze.HopExampleState{}
			agg.examples[r.H] = ex
		}
		// The longest attempt of every class, the longest cut attempt,
		// the longest and the shortest other failure (analyze's top1
		// and bottom1).
		if len(ex.Slowest) == 0 || sl.Duration > ex.Slowest[0].Duration || sl.Duration == ex.Slowest[0].Duration && sl.Trace < ex.Slowest[0].Trace {
			ex.Slowest = []analyze.Example{sl}
		}
		switch class(r.Cl) {
		case cFlagged:
			ex.Flagged = []analyze.Example{sl}
		case cOther:
			ex.Other, ex.FastFail = []analyze.Example{sl}, []analyze.Example{ff}
		}
		fh, err := strconv.ParseUint(strings.Trim(string(r.Fh), `"`), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: a hop's first row is not what was asked: %.200q", c.t.Raw, line)
		}
		agg.firsts = append(agg.firsts, fh)
		agg.firstStart = append(agg.firstStart, int64(num(r.Fs)))
		// The census: per key, the union of the classes' raw values (at
		// most AttrMaxValues+1 each: a key with more has more in all).
		if num(r.Na) > 0 {
			agg.withAttr[r.H] = true
		}
		agg.badText[r.H] += num(r.Nbad)
		add := func(k string, vs []string) {
			if notKeptKey[k] || len(vs) == 0 {
				return
			}
			set := agg.census[hopKey{r.H, k}]
			if set == nil {
				set = map[string]bool{}
				agg.census[hopKey{r.H, k}] = set
			}
			for _, v := range vs {
				set[v] = true
			}
		}
		add(scopeName, r.Vsn)
		add(scopeVersion, r.Vsr)
		for _, m := range []map[string][]string{r.Vr, r.Va} {
			for k, vs := range m {
				add(k, vs)
			}
		}
		ts := agg.times[r.H]
		if ts == nil {
			ts = &analyze.TimesState{}
			agg.times[r.H] = ts
		}
		for _, x := range r.Tms {
			ts.At = append(ts.At, int64(num(x[0])))
			ts.D = append(ts.D, int64(num(x[1])))
			agg.timeRank[r.H] = append(agg.timeRank[r.H], uint8(num(x[2])))
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if hops[name] == 0 {
			return nil, fmt.Errorf("%w: hop %q is not among the outcome groups' hops", ErrNotPushable, name)
		}
		hs := &analyze.HopState{Name: name}
		sk := hops[name] > quantile.ExactLimit
		for k, r := range counts[name] {
			n := num(r.N)
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
			st.Min, st.Max = int64(num(r.Lo)), int64(num(r.Hi))
			if !sk {
				st.Values = make([]int64, len(r.Vals))
				for i, v := range r.Vals {
					st.Values[i] = int64(num(v))
				}
				slices.Sort(st.Values)
				continue
			}
			st.Sketch, st.Zero = true, num(r.Zero)
			if len(r.Bns[0]) == 0 {
				continue
			}
			lo, hi := num(r.Bns[0][0]), num(r.Bns[0][0])
			for _, b := range r.Bns[0] {
				lo, hi = min(lo, num(b)), max(hi, num(b))
			}
			st.Lo, st.Bins = lo, make([]uint64, hi-lo+1)
			for i, b := range r.Bns[0] {
				st.Bins[num(b)-lo] += uint64(num(r.Bns[1][i]))
			}
		}
		for _, st := range []*quantile.State{&hs.Succ, &hs.Flagged, &hs.Other} {
			st.Sketch = sk // a class without attempts too
		}
		if hs.Attempts != hops[name] || sk != (hs.Attempts > quantile.ExactLimit) {
			return nil, fmt.Errorf("%w: hop %q: %d attempts, %d in its outcome groups", ErrNotPushable, name, hs.Attempts, hops[name])
		}
		for _, d := range []quantile.State{hs.Succ, hs.Flagged, hs.Other} {
			if _, err := quantile.FromState(d); err != nil {
				return nil, fmt.Errorf("%s: hop %q: the server's digest does not check: %v", c.t.Raw, name, err)
			}
		}
		agg.Spans += int64(hs.Attempts)
		byHop[name] = hs
	}
	for _, name := range names {
		agg.Hops = append(agg.Hops, *byHop[name])
	}
	return agg, nil
}

// floorBelow is how many levels under the expected one the attempt
// times' floor lies (a test sets it negative to reach the second ask).
var floorBelow = 1

// example reads a (duration, trace id) tuple.

// ranks adds a hop's and class's rank counts (sumMap's keys and counts).
func (a *Aggregates) ranks(hop string, tra, ara [2][]json.Number) error {
	if len(tra[0]) != len(tra[1]) || len(ara[0]) != len(ara[1]) {
		return fmt.Errorf("hop %q: the ranks are not what was asked", hop)
	}
	if a.aranks[hop] == nil {
		a.aranks[hop] = make([]int, 65)
	}
	for i, r := range tra[0] {
		if num(r) < 0 || num(r) > 64 {
			return fmt.Errorf("hop %q: rank %s", hop, r)
		}
		a.tranks[num(r)] += int64(num(tra[1][i]))
	}
	for i, r := range ara[0] {
		if num(r) < 0 || num(r) > 64 {
			return fmt.Errorf("hop %q: rank %s", hop, r)
		}
		a.aranks[hop][num(r)] += num(ara[1][i])
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
