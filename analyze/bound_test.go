package analyze

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tailscope/tailscope/span"
)

func boundSpan(trace, id, parent, hop string, i int) span.Span {
	return span.Span{TraceID: trace, SpanID: id, ParentID: parent, Hop: hop, Start: 1_700_000_000_000_000_000 + int64(i)*1e6, Duration: int64(10+i%50) * 1e6, Status: span.OK}
}

// 1M distinct hop names took 3.3 GB and crashed under a memory cap. The
// distinct hops are bounded (MaxHops, here lowered): one more is an error
// that names the limit and the flag that raises it, and says which
// --hop-by bounds names that carry ids, whether the spans come through
// Add, through Parts on several goroutines, or both; at the limit the
// analysis runs as before.
func TestHopLimit(t *testing.T) {
	const limit = 40
	spans := func(hops int) []span.Span {
		var out []span.Span
		for i := range hops * 3 {
			s := boundSpan(fmt.Sprintf("t%d", i), fmt.Sprintf("s%d", i), "", fmt.Sprintf("GET /users/%d", 1000+i%hops), i)
			s.Name = "GET /users/{id}"
			out = append(out, s)
		}
		return out
	}
	viaAdd := func(a *Accum, ss []span.Span) {
		for i := range ss {
			a.Add(&ss[i])
		}
	}
	viaParts := func(a *Accum, ss []span.Span) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var ordered []*span.Span
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := a.Part()
				for i := w; i < len(ss); i += 3 {
					if p.Add(&ss[i]) {
						mu.Lock()
						ordered = append(ordered, &ss[i])
						mu.Unlock()
					}
				}
				mu.Lock()
				a.Merge(p)
				mu.Unlock()
			}()
		}
		wg.Wait()
		for _, s := range ordered {
			a.Ordered(s)
		}
	}
	for name, feed := range map[string]func(*Accum, []span.Span){"Add": viaAdd, "Parts": viaParts} {
		for _, hops := range []int{limit, limit + 1, 10 * limit} {
			a := NewAccum(0)
			a.MaxHops = limit
			a.Names = angled
			feed(a, spans(hops))
			err := a.HopLimit()
			if hops <= limit {
				if err != nil {
					t.Fatalf("%s, %d hops: %v", name, hops, err)
				}
				if rep := measured(a, Options{}); len(rep.Hops) != hops {
					t.Errorf("%s, %d hops: report has %d", name, hops, len(rep.Hops))
				}
				continue
			}
			var he *HopLimitError
			if !errors.As(err, &he) || he.Limit != limit {
				t.Fatalf("%s, %d hops: %v; want a HopLimitError at %d", name, hops, err, limit)
			}
			msg := err.Error()
			for _, want := range []string{fmt.Sprint(limit), "the most <MaxHops> allows", "<HopBy> name", "narrow them with <Hops>", "GET /users/"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%s, %d hops: %q does not say %q", name, hops, msg, want)
				}
			}
			if len(a.hops) > limit {
				t.Errorf("%s, %d hops: the Accum holds %d hops, over its limit", name, hops, len(a.hops))
			}
		}
	}
}

// One trace of 2M spans took 2 GB in the sample (which doubled its limit
// to hold it whole) and crashed under a memory cap in the per-hop pass
// over it. A trace over maxHold × SampleSpans (here without the floor
// that keeps a small --sample-spans from dropping a 50k-span trace) leaves the call-tree
// sample, with a warning; its spans still count in every hop's attempts.
// A trace under that bound is still kept whole, as before; and the other
// traces keep their place in the sample.
func TestGiantTraceLeavesTheSample(t *testing.T) {
	const sample = 50
	for _, c := range []struct {
		giant int
		whole bool
	}{{giant: 3 * sample, whole: true}, {giant: 20 * sample, whole: false}} {
		a := NewAccum(sample)
		a.noHoldFloor = true
		var n int
		add := func(s span.Span) {
			a.Add(&s)
			n++
		}
		for i := range c.giant {
			parent := ""
			if i > 0 {
				parent = fmt.Sprintf("g%d", (i-1)/4)
			}
			add(boundSpan("giant", fmt.Sprintf("g%d", i), parent, fmt.Sprintf("h%d", i%5), i))
		}
		if held := len(a.Spans()); held > maxHold*sample {
			t.Errorf("giant %d: the sample holds %d spans, over %d", c.giant, held, maxHold*sample)
		}
		for i := range 10 {
			add(boundSpan(fmt.Sprintf("small%d", i), "x", "", "h0", i))
		}
		rep := measured(a, Options{Names: angled})
		attempts := 0
		for _, h := range rep.Hops {
			attempts += h.Attempts
		}
		if attempts != n {
			t.Errorf("giant %d: %d attempts over the hops, want every span: %d", c.giant, attempts, n)
		}
		warned := false
		for _, w := range rep.Warnings {
			if w.Code == "giant-trace" {
				warned = true
				if !strings.Contains(w.Message, "raise <SampleSpans> above") {
					t.Errorf("giant %d: the warning does not name SampleSpans by the caller's Names: %s", c.giant, w.Message)
				}
			}
		}
		kept := 0
		for i := range a.Spans() {
			if a.Spans()[i].TraceID == "giant" {
				kept++
			}
		}
		if c.whole && (kept != c.giant || warned) {
			t.Errorf("giant %d: %d of its spans kept (warned %v); want it whole, no warning", c.giant, kept, warned)
		}
		if !c.whole && (kept != 0 || !warned) {
			t.Errorf("giant %d: %d of its spans kept (warned %v); want none, and the giant-trace warning", c.giant, kept, warned)
		}
	}
}

// Credentials in attribute values reached attribution in every report
// format and the partial summaries. Attribution keeps, compares and shows
// values with credentials hidden (package secret): by key, every value of
// an Authorization, cookie or password attribute is one value,
// [redacted]; by value, a URL's access_token or a header line's token
// is; an instance attribute stays as it is. A summary made before
// (holding raw values) is redacted as it is read, its values merged as the
// logs would give them now.
func TestAttributionHidesCredentials(t *testing.T) {
	a := NewAccum(0)
	for i := range 2000 {
		bad := i%20 == 0
		s := boundSpan(fmt.Sprintf("t%d", i), "s", "", "api", i)
		s.Attrs = []span.Attr{{Key: "k8s.pod.name", Value: []string{"pod-a", "pod-c"}[i%2]}}
		if bad {
			s.Duration, s.Status = 900e6, span.Error
			s.Attrs = []span.Attr{{Key: "k8s.pod.name", Value: "pod-b"},
				{Key: "http.request.header.authorization", Value: fmt.Sprintf("Bearer SECRET-%d", i%3)},
				{Key: "url.full", Value: "https://x/?access_token=SECRET-q&page=1"},
				{Key: "note", Value: "Authorization: Bearer SECRET-h"}}
		}
		a.Add(&s)
	}
	rep := measured(a, Options{})
	shown := map[string]string{}
	for _, at := range rep.Hops[0].Attribution {
		if strings.Contains(at.Value, "SECRET") {
			t.Errorf("attribution shows %s=%s", at.Key, at.Value)
		}
		shown[at.Key] = at.Value
	}
	for k, want := range map[string]string{"k8s.pod.name": "pod-b", "http.request.header.authorization": "[redacted]",
		"url.full": "https://x/?access_token=[redacted]&page=1", "note": "Authorization: [redacted]"} {
		if shown[k] != want {
			t.Errorf("%s shows %q, want %q (all: %v)", k, shown[k], want, shown)
		}
	}
	st := a.State()
	if s := fmt.Sprintf("%+v", st.Hops); strings.Contains(s, "SECRET") {
		t.Errorf("the summary state holds a credential")
	}
	// A state holding raw values, as an older summary may: read back
	// redacted, the three tokens one value.
	for i := range st.Hops[0].Attr {
		k := &st.Hops[0].Attr[i]
		if k.Key != "http.request.header.authorization" || len(k.Values) != 1 {
			continue
		}
		v := k.Values[0]
		v.Value = "Bearer SECRET-0"
		k.Values = []AttrValue{v, {Value: "Bearer SECRET-1"}}
	}
	b, err := FromState(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range measured(b, Options{}).Hops[0].Attribution {
		if strings.Contains(at.Value, "SECRET") {
			t.Errorf("a summary's raw value is shown: %s=%s", at.Key, at.Value)
		}
	}
}
