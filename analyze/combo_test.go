package analyze

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/span"
	"github.com/tailscope/tailscope/span/spantest"
)

// comboSpans is a stream that takes every path of the attribution's
// state: hops whose spans share a few combinations (pods by zones), a hop
// whose routes outnumber maxCombos and whose raw combinations churn, a
// request id dropped at AttrMaxValues (mid-span, beside a duplicate key),
// keys past AttrMaxKeys pushing each other out, a credential, values too
// long, an empty key, failures, cuts and zero durations.
func comboSpans(n int, seed uint64) []span.Span {
	r := rand.New(rand.NewPCG(seed, 3))
	out := make([]span.Span, n)
	for i := range out {
		hop := []string{"cart", "pay", "routes", "keys"}[r.IntN(4)]
		pod := r.IntN(5)
		d := int64(spantest.Lognormal(r, 20*time.Millisecond, 1.5))
		if r.IntN(50) == 0 {
			d = 0
		}
		sp := span.Span{TraceID: fmt.Sprintf("t%05d", r.IntN(n/3+1)), Hop: hop, Duration: d, Status: span.OK, Weight: 1}
		switch r.IntN(20) {
		case 0:
			sp.Status = span.Error
		case 1:
			sp.Status, sp.Timeout = span.Error, true
		}
		attrs := []span.Attr{
			{Key: "k8s.pod.name", Value: fmt.Sprintf("%s-%d", hop, pod)},
			{Key: "zone", Value: []string{"a", "b", "c"}[(pod+r.IntN(2))%3]},
			{Key: "api.token", Value: fmt.Sprintf("tok%d", r.IntN(2))},
		}
		switch hop {
		case "pay":
			attrs = append(attrs, span.Attr{Key: "a.request.id", Value: fmt.Sprint(i)}, span.Attr{Key: "zone", Value: "z" + fmt.Sprint(r.IntN(3))})
		case "routes":
			attrs = append(attrs, span.Attr{Key: "http.route", Value: fmt.Sprintf("/r%d", r.IntN(40))}, span.Attr{Key: "user", Value: fmt.Sprintf("u%d", r.IntN(80))})
		case "keys":
			attrs = append(attrs, span.Attr{Key: fmt.Sprintf("k%03d", r.IntN(90)), Value: "v"}, span.Attr{Key: "", Value: "x"})
		}
		if r.IntN(30) == 0 {
			attrs = append(attrs, span.Attr{Key: "note", Value: strings.Repeat("n", AttrMaxValueLen+1)})
		}
		sp.Attrs = attrs
		out[i] = sp
	}
	return out
}

// interned gives spans the strings of one of two interners, in turn per
// span (one text may come as two strings, as from two dictionaries),
// with StableAttrs.
func interned(spans []span.Span) []span.Span {
	in := [2]map[string]string{{}, {}}
	get := func(m map[string]string, s string) string {
		if x, ok := m[s]; ok {
			return x
		}
		x := strings.Clone(s)
		m[x] = x
		return x
	}
	out := make([]span.Span, len(spans))
	for i, sp := range spans {
		m := in[i%2]
		attrs := make([]span.Attr, len(sp.Attrs))
		for j, a := range sp.Attrs {
			attrs[j] = span.Attr{Key: get(m, a.Key), Value: get(m, a.Value)}
		}
		sp.Attrs, sp.StableAttrs = attrs, true
		out[i] = sp
	}
	return out
}

// sharedLists is stable with each attribute list interned too, as a
// reader of shared lists gives them (span.Span.SharedAttrs): one slice for
// one list, per reader (even and odd spans).
func sharedLists(stable []span.Span) []span.Span {
	in := [2]map[string][]span.Attr{{}, {}}
	out := make([]span.Span, len(stable))
	for i, sp := range stable {
		var k strings.Builder
		for _, a := range sp.Attrs {
			fmt.Fprintf(&k, "%q=%q,", a.Key, a.Value)
		}
		m := in[i%2]
		l, ok := m[k.String()]
		if !ok {
			l = sp.Attrs
			m[k.String()] = l
		}
		sp.Attrs, sp.SharedAttrs = l, true
		out[i] = sp
	}
	return out
}

// attrState is the attribution of every hop of h, as a summary writes it.
func attrState(hops map[string]*hopAcc) string {
	var b strings.Builder
	for _, name := range []string{"cart", "pay", "routes", "keys"} {
		if h := hops[name]; h != nil && h.at != nil {
			js, _ := json.Marshal(attrOut(h.at))
			fmt.Fprintf(&b, "%s %s\n", name, js)
		}
	}
	return b.String()
}

// Combinations, raw combinations and their bounds change nothing: the
// state is the one every value counting every attempt itself gives (the
// reference, a hop told to count directly from the start), with the
// reader's strings stable or not, alone or split into Parts merged in
// either order.
func TestAttributionCombosExact(t *testing.T) {
	spans := comboSpans(60_000, 1)
	ref := map[string]*hopAcc{}
	for i := range spans {
		sp := spans[i]
		h := ref[sp.Hop]
		if h == nil {
			h = &hopAcc{name: sp.Hop, at: &hopAttr{keys: map[string]*keyAttr{}, direct: true}}
			ref[sp.Hop] = h
		}
		h.add(&sp)
	}
	want := attrState(ref)
	if !strings.Contains(want, `"Key":"a.request.id","Dropped":true`) || strings.Count(want, `"Dropped":true`) < 2 {
		t.Fatalf("the stream should drop keys:\n%.2000s", want)
	}
	stable := interned(spans)
	for _, c := range []struct {
		name  string
		spans []span.Span
	}{{"unstable", spans}, {"stable", stable}, {"shared", sharedLists(stable)}} {
		solo := map[string]*hopAcc{}
		for i := range c.spans {
			sp := c.spans[i]
			h := solo[sp.Hop]
			if h == nil {
				h = &hopAcc{name: sp.Hop}
				solo[sp.Hop] = h
			}
			h.add(&sp)
		}
		if got := attrState(solo); got != want {
			t.Errorf("%s: differs from counting directly:\n%.3000s\nwant\n%.3000s", c.name, got, want)
		}
		for _, rev := range []bool{false, true} {
			acc := NewAccum(0)
			parts := []*Part{acc.Part(), acc.Part(), acc.Part()}
			for i := range c.spans {
				sp := c.spans[i]
				parts[(i/1000)%3].Add(&sp)
			}
			if rev {
				parts[0], parts[2] = parts[2], parts[0]
			}
			for _, p := range parts {
				acc.Merge(p)
			}
			if got := attrState(acc.hops); got != want {
				t.Errorf("%s, parts (reversed %v): differs from counting directly", c.name, rev)
			}
		}
	}
	// The paths were taken: combinations made and flushed when full, a
	// hop counting directly, raw combinations skipped after churn.
	solo := map[string]*hopAcc{}
	for i := range stable {
		sp := stable[i]
		if solo[sp.Hop] == nil {
			solo[sp.Hop] = &hopAcc{name: sp.Hop}
		}
		solo[sp.Hop].add(&sp)
	}
	if a := solo["cart"].at; a.direct || len(a.combos) == 0 || len(a.raws) == 0 {
		t.Errorf("cart: direct %v, %d combinations, %d raw", a.direct, len(a.combos), len(a.raws))
	}
	if a := solo["routes"].at; !a.direct || a.rawBack <= rawBackoff {
		t.Errorf("routes: direct %v, raw backoff %d", a.direct, a.rawBack)
	}
	// Shared lists are held as the reader's, not copied.
	shared := sharedLists(stable)
	solo = map[string]*hopAcc{}
	for i := range shared {
		sp := shared[i]
		if solo[sp.Hop] == nil {
			solo[sp.Hop] = &hopAcc{name: sp.Hop}
		}
		solo[sp.Hop].add(&sp)
	}
	held := 0
	for _, e := range solo["cart"].at.raws {
		for i := range shared {
			if len(e.attrs) > 0 && len(shared[i].Attrs) > 0 && &e.attrs[0] == &shared[i].Attrs[0] {
				held++
				break
			}
		}
	}
	if n := len(solo["cart"].at.raws); n == 0 || held != n {
		t.Errorf("cart: %d of %d raw combinations hold the reader's list", held, n)
	}
}

// A shared list is found by its address, never by its hash alone: a
// second list with the same hash and length (a collision, forced here)
// is not the first's combination, nor is the hop's own copy of a list.
func TestRawFindSharedByAddress(t *testing.T) {
	a := &hopAttr{keys: map[string]*keyAttr{}}
	l1 := []span.Attr{{Key: "pod", Value: "p1"}}
	l2 := []span.Attr{{Key: "pod", Value: "p2"}}
	h := sharedHash(l1)
	a.rawAdd(h, l1, nil, nil, true)
	if a.rawFind(h, l1, true) == nil {
		t.Fatal("a held shared list is not found")
	}
	if e := a.rawFind(h, l2, true); e != nil {
		t.Fatalf("another list with the same hash found as %v", e.attrs)
	}
	a.rawAdd(h, l2, nil, nil, false) // held as a copy
	if e := a.rawFind(h, l2, true); e != nil {
		t.Fatalf("a shared list found as the hop's copy %v", e.attrs)
	}
}
