package span

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// AssemblePointers over spans that lie apart (each in its own
// allocation) builds what Assemble builds over the same spans in one
// array: the same requests and problems, the same spans marked
// Duplicate, and a tree that points at the spans given, not at copies.
func TestAssemblePointers(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		data := make([]byte, 8*(1+r.IntN(256)))
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		if round%3 == 0 {
			for i := 0; i < len(data); i += 8 {
				data[i] &^= 3 // no trace id: a request a span, over the workers
			}
		}
		whole := spansFrom(data)
		apart := make([]*Span, len(whole))
		given := map[*Span]bool{}
		for i := range whole {
			apart[i] = new(Span)
			*apart[i] = whole[i]
			given[apart[i]] = true
		}
		want, wantPr := Assemble(whole)
		got, gotPr := AssemblePointers(apart)
		if gotPr != wantPr || !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: AssemblePointers differs from Assemble: problems %+v, want %+v", round, gotPr, wantPr)
		}
		for i := range whole {
			if !reflect.DeepEqual(*apart[i], whole[i]) {
				t.Fatalf("round %d: span %d marked %+v, want %+v", round, i, *apart[i], whole[i])
			}
		}
		var walk func(cs []*Call)
		walk = func(cs []*Call) {
			for _, c := range cs {
				for _, a := range c.Attempts {
					if !given[a.Span] {
						t.Fatalf("round %d: an attempt's span is not one of those given", round)
					}
					walk(a.Calls)
				}
			}
		}
		for _, q := range got {
			if q.Root != nil && !given[q.Root] {
				t.Fatalf("round %d: a root is not one of the spans given", round)
			}
			walk(q.Calls)
		}
	}
}
