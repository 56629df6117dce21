package span

import (
	"testing"
)

// spansFrom turns fuzz bytes into spans, 8 bytes a span, from small
// alphabets so that ids collide, parents point at each other (cycles,
// self-parents, missing parents), hops repeat and times overlap or skew.
func spansFrom(data []byte) []Span {
	ids := []string{"", "a", "b", "c", "d", "e", "f", "g"}
	hops := []string{"x", "y", "z", ""}
	var out []Span
	for len(data) >= 8 && len(out) < 256 {
		b := data[:8]
		data = data[8:]
		s := Span{
			TraceID:  []string{"", "t1", "t2", "t3"}[b[0]&3],
			SpanID:   ids[b[1]&7],
			ParentID: ids[b[1]>>3&7],
			Hop:      hops[b[2]&3],
			Start:    int64(b[3]) * 10,
			Duration: int64(b[4]) * 7,
			Status:   Status(b[5] % 3),
			Timeout:  b[5]&4 != 0,
			Attempt:  int(b[6] & 3),
			Weight:   1,
		}
		if b[7]&1 != 0 {
			s.Start += 1 << 40 // a far-apart span: wide requests
		}
		out = append(out, s)
	}
	return out
}

// FuzzAssemble checks span.Assemble on arbitrary parent links. Whatever
// the links, it must not panic or loop, and nothing may be lost: every span
// is in exactly one place of the tree, except the later copies of a
// duplicate span id, which are counted. Requests come out sorted and never
// end before they start; a call's attempts share its hop.
func FuzzAssemble(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 0x08, 0, 0, 10, 1, 1, 0, 1, 0x11, 1, 1, 3, 2, 1, 0})                              // root a, child b
	f.Add([]byte{1, 0x11, 0, 0, 1, 0, 0, 0, 1, 0x0a, 0, 0, 1, 0, 0, 0})                               // b←b? a←b, b←a: cycle
	f.Add([]byte{1, 0x08, 0, 0, 1, 0, 0, 0, 1, 0x08, 0, 5, 1, 0, 0, 0})                               // duplicate id
	f.Add([]byte{2, 0x08, 0, 5, 1, 0, 0, 0, 2, 0x11, 1, 0, 200, 2, 1, 0, 2, 0x11, 1, 30, 9, 1, 2, 0}) // skewed child, retry
	f.Fuzz(func(t *testing.T, data []byte) {
		spans := spansFrom(data)
		reqs, pr := Assemble(spans)
		seen := map[*Span]int{}
		var visitCalls func(cs []*Call, depth int)
		visitCalls = func(cs []*Call, depth int) {
			if depth > len(spans)+1 {
				t.Fatal("tree deeper than the number of spans: a cycle survived")
			}
			for _, c := range cs {
				if len(c.Attempts) == 0 {
					t.Fatal("call without attempts")
				}
				for _, a := range c.Attempts {
					if a.Span.Hop != c.Hop {
						t.Fatalf("attempt of hop %q in a call of hop %q", a.Span.Hop, c.Hop)
					}
					seen[a.Span]++
					visitCalls(a.Calls, depth+1)
				}
			}
		}
		for i, r := range reqs {
			if r.Root != nil {
				seen[r.Root]++
			}
			visitCalls(r.Calls, 0)
			if r.Latency() < 0 {
				t.Fatalf("request %q ends before it starts: %d..%d", r.TraceID, r.Start, r.End)
			}
			if i > 0 && (reqs[i-1].Start > r.Start || (reqs[i-1].Start == r.Start && reqs[i-1].TraceID > r.TraceID)) {
				t.Fatal("requests not sorted by start, then trace id")
			}
		}
		for p, n := range seen {
			if n != 1 {
				t.Fatalf("span %+v placed %d times", *p, n)
			}
		}
		if len(seen)+pr.DuplicateSpanIDs+pr.TooDeep != len(spans) {
			t.Fatalf("%d spans in, %d placed + %d duplicates dropped + %d too deep", len(spans), len(seen), pr.DuplicateSpanIDs, pr.TooDeep)
		}
		if pr.Cycles < 0 || pr.ClockSkew < 0 || pr.Orphans < 0 {
			t.Fatalf("negative problem counts %+v", pr)
		}
	})
}
