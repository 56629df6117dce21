package clickhouse

// Attribution on the server (issue 41): each hop's attribution state —
// per attribute key and value, the attempts, failed and cut attempts, the
// other attempts' durations by sketch bin, and the slowest traces — as
// analyze keeps it from the readers' spans (analyze/attribution.go), so
// that a pushed-down report has the "where the tail is" of the pull
// path's.
//
// Which attributes a span carries is the readers' rule for an OTLP line
// (the pull path writes every row as one): the resource's attributes
// but service.name, the scope's name and version, then the span's own,
// each kept when its key is not one that restates the service, kind or
// outcome and its value is not empty and at most 1,024 bytes
// (record.KeepValue); attribution then ignores values over
// analyze.AttrMaxValueLen bytes. Text that is not valid UTF-8 would be
// repaired by the pull path (U+FFFD, which changes its length): such a
// window is ErrNotPushable.
//
// What analyze decides is left to analyze or to package secret, not
// written again here: which keys a hop keeps (the first AttrMaxKeys by
// analyze's order) is read off an Accum given one span carrying every
// key of the hop; a value is shown as secret.Scrub gives it, or as
// secret.Redacted for a key secret.Key names, and the server's groups of
// raw values that show alike are merged here. Three things are settled
// on the server's counts:
//   - a key with at most AttrMaxValues raw values is kept whole; one with
//     more is dropped when AttrMaxValues+1 of its raw values already show
//     as that many values (else ErrNotPushable: only all of them would
//     tell);
//   - a value's examples are the first AttrExamples distinct traces in
//     its attempts ordered by (duration descending, trace id): the
//     server returns the first attrTop attempts, and a group where they
//     hold fewer distinct traces than that while it has more attempts is
//     asked again, grouped by trace (analyze keeps the per-trace longest);
//   - the rest are sums (counts, bins).

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/secret"
	"github.com/tailscope/tailscope/span"
)

// notKept are the keys the readers leave out of a span's attributes
// (record.AttrKept), and maxKept the longest value they keep
// (record.MaxAttrValue). TestPushdownAttribution holds them to the
// readers: a span carrying each is compared with the file's.
const (
	notKept = "('', 'service.name', 'span.kind', 'error', 'otel.status_code', 'otel.status_description')"
	maxKept = 1024
)

// notKeptKey is notKept in Go, for the census (census).
var notKeptKey = map[string]bool{"": true, "service.name": true, "span.kind": true, "error": true, "otel.status_code": true, "otel.status_description": true}

// attrTop is how many of a value's slowest attempts the server returns
// for its examples (and as many failed ones).
const attrTop = 8

// tnum is the readers' trace id tn as a number whose order is the text's
// (tn is 32 lowercase hex digits: the digests' scan refuses any other),
// which the server sorts faster than text: 2.3 -> 2.0 s of the values'
// query on 1M spans.
const tnum = "reinterpretAsUInt128(reverse(unhex(tn)))"

// attrSQL is how a row of inner's attributes are read, in SQL over
// inner's aliases.
type attrSQL struct {
	// keys and vals are the row's attributes an OTLP line of it would
	// carry, before the readers' filter: the resource's, then the
	// scope's name and version, then the span's.
	keys, vals string
}

// censusSQL is the census of attribute values in the digests' scan:
// cols, the columns it reads (computed from inner's aliases, as
// "e AS alias"), names, those columns' aliases, and aggs, the aggregates
// over them: per source of attributes (the resource's map, the span's,
// the scope's name and version) and key, at most AttrMaxValues+1 of the
// values attribution reads (1 to AttrMaxValueLen bytes; the keys the
// readers leave out are left out in Go: census), and the spans with an
// attribute the readers keep (na) and with text that is not UTF-8 (nbad).
// Each map filtered by one condition of its value (mapFilter), not the
// sources joined into two arrays filtered by a condition evaluated twice
// (arrayConcat, arrayFilter): on 1M generated spans the census took
// ~0.45 s of the server's CPU against ~0.65 s.
type censusSQL struct {
	cols, names []string
	aggs        string
	// outs are the aggregates' aliases.
	outs []string
}

// census is the census of a row of inner (censusSQL); without values,
// only the spans with attributes and with bad text (na, nbad), which the
// digests' scan counts (the values come from the trace sample, or from a
// scan of their own: censusScan).
func census(has map[string]bool, values bool) censusSQL {
	keep := "(ky, vl) -> ky NOT IN " + notKept + " AND length(vl) > 0 AND length(vl) <= " + strconv.Itoa(maxKept)
	read := "length(vl) > 0 AND length(vl) <= " + strconv.Itoa(analyze.AttrMaxValueLen)
	var c censusSQL
	var anyOf, texts, aggs []string
	for _, s := range []struct{ alias, key string }{{aScope, "vsn"}, {aScopeVer, "vsr"}} {
		if has[s.alias] {
			c.cols, c.names = append(c.cols, s.alias+" AS c"+s.alias), append(c.names, "c"+s.alias)
			anyOf = append(anyOf, "length(c"+s.alias+") > 0")
			texts = append(texts, "[c"+s.alias+"]")
			aggs = append(aggs, "groupUniqArrayIf("+strconv.Itoa(analyze.AttrMaxValues+1)+")(c"+s.alias+", "+strings.ReplaceAll(read, "vl", "c"+s.alias)+") AS "+s.key)
		}
	}
	for _, m := range []struct{ k, v, out string }{{aResKeys, aResVals, "vr"}, {aKeys, aVals, "va"}} {
		if has[m.k] {
			if values {
				c.cols = append(c.cols, "mapFilter((ky, vl) -> "+read+", mapFromArrays("+m.k+", "+m.v+")) AS c"+m.out)
				c.names = append(c.names, "c"+m.out)
			}
			anyOf = append(anyOf, "arrayExists("+keep+", "+m.k+", "+m.v+")")
			texts = append(texts, m.k, m.v)
			aggs = append(aggs, "groupUniqArrayMap("+strconv.Itoa(analyze.AttrMaxValues+1)+")(c"+m.out+") AS "+m.out)
		}
	}
	any, bad := "0", "0"
	if len(anyOf) > 0 {
		// A row with an attribute the readers keep (OR is
		// short-circuited: the scope's, usually there, first).
		any = "(" + strings.Join(anyOf, " OR ") + ")"
		// Every text checked at once, joined by a newline and ended by
		// one: the whole is UTF-8 exactly when each text is (a text's
		// bad byte or unfinished sequence stays bad beside an ASCII
		// byte, and a good text stays good), with no lambda a row.
		bad = "NOT isValidUTF8(concat(arrayStringConcat(arrayConcat(" + strings.Join(texts, ", ") + "), '\\n'), '\\n'))"
	}
	c.cols = append(c.cols, any+" AS kany", bad+" AS kbad")
	c.names = append(c.names, "kany", "kbad")
	if !values {
		aggs = nil
	}
	c.aggs = strings.Join(append([]string{"countIf(kany) AS na", "countIf(kbad) AS nbad"}, aggs...), ", ")
	for _, a := range append([]string{"x AS na", "x AS nbad"}, aggs...) {
		c.outs = append(c.outs, a[strings.LastIndex(a, " AS ")+4:])
	}
	return c
}

// filterSQL is the keys (or, with vals, the values) of kall and vall
// that attribution reads of the keys keys says (an SQL condition on the
// key ky, and the row's hop id hid: keysIn), of at most AttrMaxValueLen
// bytes. As two arrays filtered by one (key, value) condition rather
// than an array of tuples (arrayZip, a CAST of the scope's): on 1M spans
// ~0.65 -> ~0.35 s of the server's CPU a scan.
func filterSQL(vals bool, keys string) string {
	cond := keys + " AND length(vl) > 0 AND length(vl) <= " + strconv.Itoa(analyze.AttrMaxValueLen)
	if vals {
		return "arrayFilter((vl, ky) -> " + cond + ", vall, kall)"
	}
	return "arrayFilter((ky, vl) -> " + cond + ", kall, vall)"
}

// kvSQL is the attributes of a row of inner (attrSQL).
func kvSQL(has map[string]bool) attrSQL {
	var keys, vals []string
	if has[aResKeys] {
		keys, vals = append(keys, "rk"), append(vals, "rv")
	}
	var sk, sv []string
	for _, s := range []struct{ alias, key string }{{aScope, scopeName}, {aScopeVer, scopeVersion}} {
		if has[s.alias] {
			sk, sv = append(sk, quoteString(s.key)), append(sv, s.alias)
		}
	}
	if len(sk) > 0 {
		keys, vals = append(keys, "["+strings.Join(sk, ", ")+"]"), append(vals, "["+strings.Join(sv, ", ")+"]")
	}
	if has[aKeys] {
		keys, vals = append(keys, "ak"), append(vals, "av")
	}
	if len(keys) == 0 {
		return attrSQL{keys: "CAST([], 'Array(String)')", vals: "CAST([], 'Array(String)')"}
	}
	return attrSQL{keys: "arrayConcat(" + strings.Join(keys, ", ") + ")", vals: "arrayConcat(" + strings.Join(vals, ", ") + ")"}
}

// The attribute keys of the scope's name and version (record's).
const (
	scopeName    = "otel.scope.name"
	scopeVersion = "otel.scope.version"
)

// attrRowsSQL is the rows of inner with their hop id (hid: hopCounts),
// duration, the readers'
// trace id (tn), class (cl), the sketch bin of a duration that is not cut
// (b: binSQL, in a query that starts with binWith), the examples' sort
// key (sk: once a span, not once an attribute), and the attributes
// attribution reads of the keys live (keys kk, values kvv: filterSQL).
func attrRowsSQL(inner string, has map[string]bool, gc []string, cls map[uint64]class, keys string, ids *hopIDs) string {
	kv := kvSQL(has)
	return "SELECT hid, d, tn, " + keySQL("d", true, false) + " AS sk, cl, kk, kvv, if(cl != 1 AND d >= 1, " + binSQL("d") + ", 0) AS b FROM (SELECT hid, d, " + normTraceSQL("t") + " AS tn, cl, " +
		filterSQL(false, keys) + " AS kk, " + filterSQL(true, keys) + " AS kvv FROM (SELECT hid, d, t, " + classSQL(has, cls) + " AS cl, kall, vall " +
		"FROM (SELECT *, " + strings.Join(gc, ", ") + ", " + kv.keys + " AS kall, " + kv.vals + " AS vall FROM (" + strings.Replace(inner, "SELECT ", "SELECT "+ids.sql+" AS hid, ", 1) + "))))"
}

// hopKey is one key of one hop; attrGroup one raw value of one.
type (
	hopKey    struct{ hop, key string }
	attrGroup struct{ h, k, v string }
)

// inList is the SQL set of the tuples in (an IN's right side; one tuple
// is written twice, so that the parentheses are a set, not the tuple).
func inList(in []string) string {
	if len(in) == 1 {
		in = append(in, in[0])
	}
	return "(" + strings.Join(in, ", ") + ")"
}

// attribution fills each hop's attribution (HasAttr, Attr) from the
// server. Which keys to ask the values of comes from the trace sample's
// spans (hint, sampleCensus: the keys certainly dropped or pushed out),
// the values of every other key from the server (attrHinted); when that
// cannot be done in one bounded query (a readonly user, or more
// combinations of attributes than attrCombos: a key of many values the
// sample did not show as such), from a census of the window's values
// (censusScan) first, then the values of the keys it leaves.
func (c *client) attribution(ctx context.Context, inner string, cls map[uint64]class, byHop map[string]*analyze.HopState, agg *Aggregates, hint *sampleCensus) error {
	has := aliases(inner)
	hops := make([]string, 0, len(agg.badText))
	for h := range agg.badText {
		hops = append(hops, h)
	}
	sort.Strings(hops)
	anyAttr := false
	for _, h := range hops {
		if n := agg.badText[h]; n > 0 {
			return fmt.Errorf("%w: %d spans of hop %q have attribute text that is not UTF-8 (the readers would repair it)", ErrNotPushable, n, h)
		}
		if byHop[h] == nil {
			return fmt.Errorf("%s: attribute keys of hop %q, not among the hops", c.t.Raw, h)
		}
		byHop[h].HasAttr = agg.withAttr[h]
		anyAttr = anyAttr || agg.withAttr[h]
	}
	if !anyAttr {
		return nil
	}
	if hint != nil && !c.bare {
		done, err := c.attrHinted(ctx, inner, has, cls, byHop, agg, hint)
		if err != nil || done {
			return err
		}
	}
	c.censusScans++
	if err := c.censusScan(ctx, inner, agg); err != nil {
		return err
	}
	// The census: per hop and key, its raw values, the union of each
	// class's AttrMaxValues+1 (the -Map combinators aggregate each key of
	// the row's map of attributes, duplicates included, without an ARRAY
	// JOIN; a key with more than AttrMaxValues values in all has more
	// than that in the union: either one class has AttrMaxValues+1, or
	// each class gave all of its own); the spans with attributes and
	// those with bad text.
	type census struct {
		nv int
		vs []string
	}
	keys := map[string][]string{}
	cens := map[hopKey]census{}
	for hk, set := range agg.census {
		vs := make([]string, 0, len(set))
		for v := range set {
			vs = append(vs, v)
		}
		sort.Strings(vs)
		keys[hk.hop] = append(keys[hk.hop], hk.key)
		cens[hk] = census{nv: len(vs), vs: vs}
	}
	for h := range keys {
		sort.Strings(keys[h])
	}
	// Which keys each hop keeps, and which of them are dropped.
	// The (hop, key) pairs whose values are asked for, and the others
	// (dropped, or past the hop's AttrMaxKeys), which the query leaves
	// out: usually the shorter list to write into it.
	var live, skip []string
	liveKeys := map[string]bool{}
	groups := 0 // the (hop, key, raw value) groups the values' query gives at most
	secrets := map[string]bool{}
	kept := map[string][]analyze.AttrKey{}
	for h, ks := range keys {
		for _, k := range keptKeys(h, ks) {
			ak := analyze.AttrKey{Key: k}
			ce := cens[hopKey{h, k}]
			switch {
			case secret.Key(k):
				secrets[k] = true
			case ce.nv > analyze.AttrMaxValues:
				shown := map[string]bool{}
				for _, v := range ce.vs {
					shown[secret.Scrub(v)] = true
				}
				if len(shown) <= analyze.AttrMaxValues {
					return fmt.Errorf("%w: hop %q's attribute %q has %d values, some alike once credentials are hidden: whether more than %d remain only the readers can tell", ErrNotPushable, h, k, ce.nv, analyze.AttrMaxValues)
				}
				ak.Dropped = true
			}
			kept[h] = append(kept[h], ak)
			if !ak.Dropped {
				live = append(live, "("+quoteString(h)+", "+quoteString(k)+")")
				liveKeys[k] = true
				groups += ce.nv
			}
		}
		in := map[string]bool{}
		for _, ak := range kept[h] {
			in[ak.Key] = !ak.Dropped
		}
		for _, k := range ks {
			if !in[k] {
				skip = append(skip, "("+quoteString(h)+", "+quoteString(k)+")")
			}
		}
	}
	vals := map[hopKey]map[string]*analyze.AttrValue{}
	if len(live) > 0 {
		var err error
		lk := make([]string, 0, len(liveKeys))
		for k := range liveKeys {
			lk = append(lk, quoteString(k))
		}
		sort.Strings(lk)
		attempts := map[string]int{}
		for h, hs := range byHop {
			attempts[h] = hs.Attempts
		}
		if vals, err = c.attrValues(ctx, attrRowsSQL(inner, has, groupCols(has), cls, "ky IN "+inList(lk), agg.ids), agg.ids.of(quoteString, "Array(String)", "''"), skip, secrets, attempts, groups+len(byHop), -1); err != nil {
			return err
		}
	}
	for h, ks := range kept {
		hs := byHop[h]
		if !hs.HasAttr {
			return fmt.Errorf("%s: hop %q has attribute keys but no span with attributes", c.t.Raw, h)
		}
		for i := range ks {
			if ks[i].Dropped {
				continue
			}
			m := vals[hopKey{h, ks[i].Key}]
			if len(m) > analyze.AttrMaxValues {
				ks[i].Dropped = true
				continue
			}
			for _, v := range m {
				ks[i].Values = append(ks[i].Values, *v)
			}
			sort.Slice(ks[i].Values, func(a, b int) bool { return ks[i].Values[a].Value < ks[i].Values[b].Value })
		}
		hs.Attr = ks
	}
	return nil
}

// keptKeys is which of keys a hop keeps (analyze's AttrMaxKeys first by
// its order), read off an Accum given one span carrying them all.
func keptKeys(hop string, keys []string) []string {
	sp := span.Span{Hop: hop, TraceID: "1", SpanID: "1", Duration: 1}
	for _, k := range keys {
		sp.Attrs = append(sp.Attrs, span.Attr{Key: k, Value: "x"})
	}
	acc := analyze.NewAccum(1)
	acc.Add(&sp)
	var out []string
	for _, ak := range acc.State().Hops[0].Attr {
		out = append(out, ak.Key)
	}
	return out
}

// attrCombos bounds the groups of the values' first level (each span's
// combination of attributes, by hop): past it the server stops
// (group_by_overflow_mode 'break': the server's memory stays bounded)
// and the values are asked for attribute by attribute. A test sets it
// low to reach that.
var attrCombos = 100_000

// attrValues asks for the values of every (hop, key) pair but those of
// skip, and returns them by the value shown, merged. rows are
// attrRowsSQL's, hop the SQL of a row's hop by its id; attempts are the
// hops' attempts, groups a bound on the (hop, key, raw value) groups.
//
// First the spans are grouped by hop and their combination of the
// attributes asked for (kk, kvv), the groups then by attribute (ARRAY
// JOIN: one row a group and attribute, not one a span and attribute):
// counts and bins are sums, the examples the first attrTop of the
// groups' first attrTop. The spans are grouped by their hop's id, the
// hop named over the groups (1M generated spans: ~0.1 s of the server's
// CPU less than grouping by the hop's name). On 1M generated spans (five attributes, 42
// combinations a hop) the query took 0.9 s of the server's CPU against
// 1.4 s. A window with more combinations than attrCombos (and the
// second level's groups) makes the server stop (a key its block brings
// past the bound: max_rows_to_group_by); that, seen as more first-level
// groups than the bound or as a hop whose spans the first level did not
// all count (the empty key counts them, and the groups), or a readonly
// user, who may set nothing, takes the values attribute by attribute, as
// before.
//
// maxCombined ≥ 0 (attrHinted) bounds the first level's groups: past
// it, or when that level cannot be asked (a readonly user), the answer
// is errNotWhole, not the values attribute by attribute.
func (c *client) attrValues(ctx context.Context, rows, hop string, skip []string, secrets map[string]bool, attempts map[string]int, groups, maxCombined int) (map[hopKey]map[string]*analyze.AttrValue, error) {
	v := "x2"
	if len(secrets) > 0 {
		var sk []string
		for k := range secrets {
			sk = append(sk, quoteString(k))
		}
		sort.Strings(sk)
		// Every value of a secret key shows as one: one group.
		v = "if(x1 IN (" + strings.Join(sk, ", ") + "), '', x2)"
	}
	top := strconv.Itoa(attrTop)
	ar := "SELECT " + hop + " AS h, x1 AS k, " + v + " AS v, d, tn, sk, cl, b FROM (" + rows + ") ARRAY JOIN kk AS x1, kvv AS x2"
	if len(skip) > 0 {
		ar += " WHERE (h, x1) NOT IN " + inList(skip)
	}
	perAttr := binWith() + "SELECT h, k, v, count() AS n, countIf(cl > 0) AS nf, countIf(cl = 1) AS nfl, countIf(cl != 1 AND d < 1) AS nz, " +
		"sumMapIf(map(toInt32(b), toUInt64(1)), cl != 1 AND d >= 1) AS bns, groupArraySorted(" + top + ")(sk) AS slow, " +
		"groupArraySortedIf(" + top + ")(sk, cl > 0) AS fail FROM (" + ar + ") GROUP BY h, k, v"
	// The two levels. The empty key (no attribute's: notKept) is each
	// first-level group's count, summed by hop.
	combos := "SELECT hid, arrayConcat(kk, ['']) AS kk, arrayConcat(kvv, ['']) AS kvv, count() AS n, countIf(cl > 0) AS nf, countIf(cl = 1) AS nfl, countIf(cl != 1 AND d < 1) AS nz, " +
		"sumMapIf(map(toInt32(b), toUInt64(1)), cl != 1 AND d >= 1) AS bns, groupArraySorted(" + top + ")(sk) AS slow, " +
		"groupArraySortedIf(" + top + ")(sk, cl > 0) AS fail FROM (" + rows + ") GROUP BY hid, kk, kvv"
	byCombo := "SELECT " + hop + " AS h, x1 AS k, " + v + " AS v, sum(n) AS n, sum(nf) AS nf, sum(nfl) AS nfl, sum(nz) AS nz, sumMap(bns) AS bns, " +
		"groupArraySortedArray(" + top + ")(slow) AS slow, groupArraySortedArray(" + top + ")(fail) AS fail, count() AS g FROM (" + combos + ") ARRAY JOIN kk AS x1, kvv AS x2"
	if len(skip) > 0 {
		byCombo += " WHERE (h, x1) NOT IN " + inList(skip)
	}
	limit := attrCombos + groups
	byCombo = binWith() + byCombo + " GROUP BY h, k, v SETTINGS max_rows_to_group_by = " + strconv.Itoa(limit) + ", group_by_overflow_mode = 'break'"
	out := map[hopKey]map[string]*analyze.AttrValue{}
	type group = attrGroup
	var again []group
	raw := map[group]*analyze.AttrValue{}
	counted := map[string]int{}
	combined := 0
	line := func(line []byte) error {
		var r struct {
			H, K, V           string
			N, Nf, Nfl, Nz, G json.Number
			Bns               map[string]json.Number
			Slow, Fail        []json.RawMessage
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("%s: a hop's attribute values are not what was asked: %.200q", c.t.Raw, line)
		}
		av := &analyze.AttrValue{Attempts: num(r.N), Failed: num(r.Nf), Flagged: num(r.Nfl), Zero: num(r.Nz)}
		if len(r.Bns) > 0 {
			bins := map[int]int{}
			lo, hi := math.MaxInt, math.MinInt
			for k, cnt := range r.Bns {
				b, err := strconv.Atoi(k)
				if err != nil {
					return fmt.Errorf("%s: a hop's attribute values are not what was asked: %.200q", c.t.Raw, line)
				}
				bins[b] = num(cnt)
				lo, hi = min(lo, b), max(hi, b)
			}
			av.Lo, av.Bins = lo, make([]uint32, hi-lo+1)
			for b, n := range bins {
				av.Bins[b-lo] += uint32(n)
			}
		}
		var ok1, ok2 bool
		slow, err1 := keyRows(r.Slow, true, false)
		fail, err2 := keyRows(r.Fail, true, false)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("%s: an attribute value's examples are not what was asked: %.200q", c.t.Raw, line)
		}
		if r.K == "" {
			counted[r.H] += av.Attempts
			combined += num(r.G)
			return nil
		}
		av.Slow, ok1 = topTraces(slow, av.Attempts)
		av.Fail, ok2 = topTraces(fail, av.Failed)
		g := group{r.H, r.K, r.V}
		if !ok1 || !ok2 {
			again = append(again, g)
		}
		raw[g] = av
		return nil
	}
	whole := false
	if !c.bare {
		err := c.jsonLines(ctx, byCombo, line)
		switch {
		case err != nil && !c.bare:
			return nil, err
		case err == nil:
			// Past the bound, the server may have read the whole
			// window in the block that passed it; but it may not.
			whole = combined <= limit
			for h, n := range attempts {
				if counted[h] != n {
					whole = false
				}
			}
			for h := range counted {
				if _, ok := attempts[h]; !ok {
					return nil, fmt.Errorf("%s: attribute values of hop %q, not among the hops", c.t.Raw, h)
				}
			}
		}
	}
	if maxCombined >= 0 && (!whole || combined > maxCombined) {
		return nil, errNotWhole
	}
	if !whole {
		c.attrPerKey++
		again, raw = nil, map[group]*analyze.AttrValue{}
		if err := c.jsonLines(ctx, perAttr, line); err != nil {
			return nil, err
		}
	}
	c.attrAgain += len(again)
	if len(again) > 0 {
		if err := c.attrExamples(ctx, ar, again, func(h, k, v string, slow, fail []analyze.Example) error {
			av := raw[group{h, k, v}]
			if av == nil {
				return fmt.Errorf("%s: examples of an attribute value not asked for", c.t.Raw)
			}
			av.Slow, av.Fail = slow, fail
			return nil
		}); err != nil {
			return nil, err
		}
	}
	// Merge the raw values by the value shown, in a fixed order.
	gs := make([]group, 0, len(raw))
	for g := range raw {
		gs = append(gs, g)
	}
	sort.Slice(gs, func(i, j int) bool {
		a, b := gs[i], gs[j]
		if a.h != b.h {
			return a.h < b.h
		}
		if a.k != b.k {
			return a.k < b.k
		}
		return a.v < b.v
	})
	for _, g := range gs {
		shown := secret.Redacted
		if !secret.Key(g.k) {
			shown = secret.Scrub(g.v)
		}
		hk := hopKey{g.h, g.k}
		if out[hk] == nil {
			out[hk] = map[string]*analyze.AttrValue{}
		}
		av := raw[g]
		if prev := out[hk][shown]; prev != nil {
			mergeValue(prev, av)
			continue
		}
		av.Value = shown
		out[hk][shown] = av
	}
	return out, nil
}

// topTraces is a value's examples from its attrTop slowest attempts,
// in order (duration descending, trace): the first AttrExamples
// distinct traces (a trace's first attempt there is its longest). ok is
// false when they hold fewer distinct traces while the value has more
// attempts than were returned: only the attempts grouped by trace tell
// then.
func topTraces(rows []analyze.Example, n int) (out []analyze.Example, ok bool) {
	seen := map[string]bool{}
	for _, x := range rows {
		if seen[x.Trace] {
			continue
		}
		seen[x.Trace] = true
		if len(out) < analyze.AttrExamples {
			out = append(out, x)
		}
	}
	return out, len(out) == analyze.AttrExamples || n <= len(rows)
}

// textRows reads (−duration, trace id) tuples.
func textRows(rows [][2]json.RawMessage) ([]analyze.Example, error) {
	out := make([]analyze.Example, 0, len(rows))
	for _, x := range rows {
		var d json.Number
		var tr string
		if json.Unmarshal(x[0], &d) != nil || json.Unmarshal(x[1], &tr) != nil || tr == "" {
			return nil, fmt.Errorf("an attribute value's examples are not what was asked")
		}
		out = append(out, analyze.Example{Duration: -int64(num(d)), Trace: tr})
	}
	return out, nil
}

// keySQL is an attempt's duration d and trace (tnum) as one UInt256 that
// the server sorts and compares faster than the tuple (d, tnum) (1M
// spans: ~0.3 s less of the server's CPU for the values' examples):
// the duration in the upper 128 bits, the trace in the lower. desc
// stores MaxInt64 − d, so that the least key is the longest attempt;
// neg stores the trace's bits inverted, so that the greatest key of a
// duration is its least trace. d is never negative here (the digests'
// scan refuses a window with a negative duration).
func keySQL(d string, desc, neg bool) string {
	hi, lo := "toUInt256("+d+")", "toUInt256("+tnum+")"
	if desc {
		hi = "toUInt256(9223372036854775807 - " + d + ")"
	}
	if neg {
		lo = "toUInt256(bitNot(" + tnum + "))"
	}
	return "bitOr(bitShiftLeft(" + hi + ", 128), " + lo + ")"
}

var mask128 = new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))

// unkey reads a keySQL key (decimal, quoted or not as the server's
// settings say) back as an example.
func unkey(raw json.RawMessage, desc, neg bool) (analyze.Example, error) {
	var b big.Int
	if _, ok := b.SetString(strings.Trim(string(raw), `"`), 10); !ok || b.Sign() < 0 || b.BitLen() > 256 {
		return analyze.Example{}, fmt.Errorf("an example is not what was asked: %.80q", raw)
	}
	hi := new(big.Int).Rsh(&b, 128)
	lo := new(big.Int).And(&b, mask128)
	if !hi.IsInt64() {
		return analyze.Example{}, fmt.Errorf("an example is not what was asked: %.80q", raw)
	}
	d := hi.Int64()
	if desc {
		d = math.MaxInt64 - d
	}
	if neg {
		lo.Sub(mask128, lo)
	}
	return analyze.Example{Duration: d, Trace: fmt.Sprintf("%032x", lo)}, nil
}

// keyRows reads keySQL keys.
func keyRows(rows []json.RawMessage, desc, neg bool) ([]analyze.Example, error) {
	out := make([]analyze.Example, 0, len(rows))
	for _, r := range rows {
		x, err := unkey(r, desc, neg)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// attrExamples asks for the examples of the groups again, the attempts
// grouped by trace first (each trace's longest attempt, and longest
// failed one), and calls f with each group's.
func (c *client) attrExamples(ctx context.Context, ar string, groups []attrGroup, f func(h, k, v string, slow, fail []analyze.Example) error) error {
	var in []string
	for _, g := range groups {
		in = append(in, "("+quoteString(g.h)+", "+quoteString(g.k)+", "+quoteString(g.v)+")")
	}
	ex := strconv.Itoa(analyze.AttrExamples)
	q := binWith() + "SELECT h, k, v, groupArraySorted(" + ex + ")((-md, tn)) AS slow, groupArraySortedIf(" + ex + ")((-mf, tn), nf > 0) AS fail FROM (" +
		"SELECT h, k, v, tn, max(d) AS md, maxIf(d, cl > 0) AS mf, countIf(cl > 0) AS nf FROM (" + ar + ") WHERE (h, k, v) IN " + inList(in) +
		" GROUP BY h, k, v, tn) GROUP BY h, k, v"
	n := 0
	err := c.jsonLines(ctx, q, func(line []byte) error {
		var r struct {
			H, K, V    string
			Slow, Fail [][2]json.RawMessage
		}
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("%s: an attribute value's examples are not what was asked: %.200q", c.t.Raw, line)
		}
		sr, err1 := textRows(r.Slow)
		fr, err2 := textRows(r.Fail)
		slow, _ := topTraces(sr, 0)
		fail, _ := topTraces(fr, 0)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("%s: an attribute value's examples are not what was asked: %.200q", c.t.Raw, line)
		}
		n++
		return f(r.H, r.K, r.V, slow, fail)
	})
	if err == nil && n != len(groups) {
		err = fmt.Errorf("%s: examples of %d attribute values for %d asked", c.t.Raw, n, len(groups))
	}
	return err
}

// mergeValue adds o to v, as analyze merges two values that show alike:
// counts and bins add, and the examples are the best of both by
// (duration descending, trace id), one per trace.
func mergeValue(v, o *analyze.AttrValue) {
	v.Attempts += o.Attempts
	v.Failed += o.Failed
	v.Flagged += o.Flagged
	v.Zero += o.Zero
	if len(o.Bins) > 0 {
		if len(v.Bins) == 0 {
			v.Lo, v.Bins = o.Lo, append([]uint32(nil), o.Bins...)
		} else {
			lo := min(v.Lo, o.Lo)
			hi := max(v.Lo+len(v.Bins), o.Lo+len(o.Bins))
			bins := make([]uint32, hi-lo)
			for i, c := range v.Bins {
				bins[v.Lo-lo+i] += c
			}
			for i, c := range o.Bins {
				bins[o.Lo-lo+i] += c
			}
			v.Lo, v.Bins = lo, bins
		}
	}
	v.Slow = bestExamples(v.Slow, o.Slow)
	v.Fail = bestExamples(v.Fail, o.Fail)
}

// bestExamples is the first AttrExamples of a and b by (duration
// descending, trace id), one per trace (its longest).
func bestExamples(a, b []analyze.Example) []analyze.Example {
	all := append(append([]analyze.Example(nil), a...), b...)
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].Duration != all[j].Duration {
			return all[i].Duration > all[j].Duration
		}
		return all[i].Trace < all[j].Trace
	})
	var out []analyze.Example
	seen := map[string]bool{}
	for _, x := range all {
		if !seen[x.Trace] && len(out) < analyze.AttrExamples {
			seen[x.Trace] = true
			out = append(out, x)
		}
	}
	return out
}

// maxSkipText bounds the text of the keys attrHinted leaves out (a
// test sets it low to take the census scan's way).
var maxSkipText = 64 << 10

// errNotWhole says the attribute values could not be asked in one
// bounded query (attrValues).
var errNotWhole = errors.New("the attribute values' combinations past the bound")

// sampleCensus is the census of the attribute values in the spans the
// trace sample's read pulled (sample): per hop and key that attribution
// reads (not one the readers leave out, values of 1 to AttrMaxValueLen
// bytes), whether more than AttrMaxValues values show (secret.Scrub, or
// secret.Redacted for a key secret.Key names). Those spans are some of
// the window's, so a key that shows more values there shows more in the
// window (analyze drops it), and a key pushed out of a hop's
// AttrMaxKeys by the keys seen there is pushed out by the window's
// (keyLess is a fixed order: more keys only push more out).
type sampleCensus struct {
	keys map[hopKey]*sampleKey
}

// sampleKey is one key of one hop in the sample: its raw values seen
// (at most 4·AttrMaxValues, so as not to scrub them again) and shown.
type sampleKey struct {
	raw, shown map[string]bool
	over       bool
}

func (sc *sampleCensus) add(sp *span.Span) {
	for _, a := range sp.Attrs {
		if notKeptKey[a.Key] || len(a.Value) == 0 || len(a.Value) > analyze.AttrMaxValueLen {
			continue
		}
		hk := hopKey{sp.Hop, a.Key}
		k := sc.keys[hk]
		if k == nil {
			k = &sampleKey{raw: map[string]bool{}, shown: map[string]bool{}}
			sc.keys[hopKey{strings.Clone(sp.Hop), strings.Clone(a.Key)}] = k
		}
		if k.over || k.raw[a.Value] {
			continue
		}
		if len(k.raw) < 4*analyze.AttrMaxValues {
			k.raw[strings.Clone(a.Value)] = true
		}
		shown := secret.Redacted
		if !secret.Key(a.Key) {
			shown = secret.Scrub(a.Value)
		}
		k.shown[shown] = true
		if len(k.shown) > analyze.AttrMaxValues {
			k.over, k.raw, k.shown = true, nil, nil
		}
	}
}

// attrHinted fills each hop's attribution with the values of every key
// but those the sample shows dropped (more than AttrMaxValues values) or
// pushed out (past AttrMaxKeys), asked in one query (attrValues'
// combinations, whose count it bounds): the keys are then the sample's
// and the answer's, each hop keeps its first AttrMaxKeys (keptKeys), and
// a key is dropped when the sample said so or its values, all of them
// in the answer, show as more than AttrMaxValues. It returns false, with
// nothing filled, when that one query cannot answer (errNotWhole), or
// the sample and the answer disagree on what a hop keeps.
func (c *client) attrHinted(ctx context.Context, inner string, has map[string]bool, cls map[uint64]class, byHop map[string]*analyze.HopState, agg *Aggregates, hint *sampleCensus) (bool, error) {
	ids := map[string][]string{}
	for id, h := range agg.ids.hop {
		ids[h] = append(ids[h], strconv.FormatUint(id, 10))
	}
	seen := map[string][]string{}
	for hk := range hint.keys {
		seen[hk.hop] = append(seen[hk.hop], hk.key)
	}
	// Why a key the sample saw is not asked: dropped, or pushed out.
	const (
		notSkipped = iota
		skipDropped
		skipOut
	)
	skipped := map[hopKey]int{}
	var skip []string
	secrets := map[string]bool{}
	pairs := 0
	for h, ks := range seen {
		sort.Strings(ks)
		kept := map[string]bool{}
		for _, k := range keptKeys(h, ks) {
			kept[k] = true
		}
		for _, k := range ks {
			why := notSkipped
			switch {
			case !kept[k]:
				why = skipOut
			case hint.keys[hopKey{h, k}].over:
				why = skipDropped
			}
			if why == notSkipped {
				pairs++
				if secret.Key(k) {
					secrets[k] = true
				}
				continue
			}
			skipped[hopKey{h, k}] = why
			for _, id := range ids[h] {
				skip = append(skip, "("+id+", "+quoteString(k)+")")
			}
		}
	}
	sort.Strings(skip)
	keys := "ky NOT IN " + notKept
	if len(skip) > 0 {
		keys += " AND (hid, ky) NOT IN " + inList(skip)
	}
	if len(keys) > maxSkipText {
		// So many keys left out (by hop id) that the query would pass
		// ClickHouse's max_query_size: the census scan's way.
		return false, nil
	}
	attempts := map[string]int{}
	for h, hs := range byHop {
		attempts[h] = hs.Attempts
	}
	vals, err := c.attrValues(ctx, attrRowsSQL(inner, has, groupCols(has), cls, keys, agg.ids), agg.ids.of(quoteString, "Array(String)", "''"),
		nil, secrets, attempts, (analyze.AttrMaxValues+1)*pairs+len(byHop), attrCombos)
	if errors.Is(err, errNotWhole) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	all := map[string]map[string]bool{}
	note := func(hk hopKey) {
		if all[hk.hop] == nil {
			all[hk.hop] = map[string]bool{}
		}
		all[hk.hop][hk.key] = true
	}
	for hk := range hint.keys {
		note(hk)
	}
	for hk := range vals {
		note(hk)
	}
	attr := map[string][]analyze.AttrKey{}
	for h, set := range all {
		hs := byHop[h]
		if hs == nil {
			return false, fmt.Errorf("%s: attribute values of hop %q, not among the hops", c.t.Raw, h)
		}
		if !hs.HasAttr {
			return false, fmt.Errorf("%s: hop %q has attribute keys but no span with attributes", c.t.Raw, h)
		}
		ks := make([]string, 0, len(set))
		for k := range set {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range keptKeys(h, ks) {
			hk := hopKey{h, k}
			ak := analyze.AttrKey{Key: k}
			m := vals[hk]
			switch {
			case skipped[hk] == skipOut:
				return false, nil // cannot be: fewer keys push fewer out
			case skipped[hk] == skipDropped || len(m) > analyze.AttrMaxValues:
				ak.Dropped = true
			case len(m) == 0:
				return false, fmt.Errorf("%s: hop %q's attribute %q, in the sample, has no values on the server", c.t.Raw, h, k)
			default:
				for _, v := range m {
					ak.Values = append(ak.Values, *v)
				}
				sort.Slice(ak.Values, func(a, b int) bool { return ak.Values[a].Value < ak.Values[b].Value })
			}
			attr[h] = append(attr[h], ak)
		}
	}
	for h, ks := range attr {
		byHop[h].Attr = ks
	}
	return true, nil
}

// censusScan fills agg.census by a scan of the window of its own: per
// hop and key, at most AttrMaxValues+1 of its raw values (censusSQL),
// for attribution when the sample's census cannot do (attrHinted).
func (c *client) censusScan(ctx context.Context, inner string, agg *Aggregates) error {
	cen := census(aliases(inner), true)
	rows := "SELECT hid, " + strings.Join(cen.names, ", ") + " FROM (SELECT *, " + strings.Join(cen.cols, ", ") + " FROM (" +
		strings.Replace(inner, "SELECT ", "SELECT "+agg.ids.sql+" AS hid, ", 1) + "))"
	q := "SELECT hex(" + agg.ids.of(quoteString, "Array(String)", "''") + ") AS hx, " + strings.Join(cen.outs, ", ") +
		" FROM (SELECT hid, " + cen.aggs + " FROM (" + rows + ") GROUP BY hid)"
	return c.jsonLines(ctx, q, func(line []byte) error {
		var r struct {
			Hx       string
			Vr, Va   map[string][]string
			Vsn, Vsr []string
		}
		bad := fmt.Errorf("%s: a hop's attribute census is not what was asked: %.200q", c.t.Raw, line)
		if json.Unmarshal(line, &r) != nil {
			return bad
		}
		h, err := hex.DecodeString(r.Hx)
		if err != nil || agg.ids.hops[string(h)] == 0 {
			return bad
		}
		agg.addCensus(string(h), r.Vsn, r.Vsr, r.Vr, r.Va)
		return nil
	})
}

// addCensus adds one group's census to agg's: per key, the union of the
// groups' raw values (at most AttrMaxValues+1 each: a key with more has
// more in all).
func (a *Aggregates) addCensus(hop string, vsn, vsr []string, vr, va map[string][]string) {
	add := func(key string, vs []string) {
		if notKeptKey[key] || len(vs) == 0 {
			return
		}
		set := a.census[hopKey{hop, key}]
		if set == nil {
			set = map[string]bool{}
			a.census[hopKey{hop, key}] = set
		}
		for _, v := range vs {
			set[v] = true
		}
	}
	add(scopeName, vsn)
	add(scopeVersion, vsr)
	for _, mp := range []map[string][]string{vr, va} {
		for key, vs := range mp {
			add(key, vs)
		}
	}
}
