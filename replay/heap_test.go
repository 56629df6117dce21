package replay

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The typed heap of finished calls pops them by ascending logged end, as
// container/heap did, through any mix of pushes and pops (equal ends
// included).
func TestByOrigEndPopsInOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	for round := range 200 {
		var h byOrigEnd
		var ref []int64
		for range r.IntN(60) + 1 {
			if len(ref) > 0 && r.IntN(3) == 0 {
				slices.Sort(ref)
				if got := h.pop(); got.origEnd != ref[0] {
					t.Fatalf("round %d: popped %d, want %d", round, got.origEnd, ref[0])
				}
				ref = ref[1:]
				continue
			}
			e := int64(r.IntN(20)) // few values: many equal ends
			h.push(finished{origEnd: e, delta: int64(r.IntN(100))})
			ref = append(ref, e)
		}
		slices.Sort(ref)
		for _, want := range ref {
			if got := h.pop(); got.origEnd != want {
				t.Fatalf("round %d: popped %d, want %d", round, got.origEnd, want)
			}
		}
		if len(h) != 0 {
			t.Fatalf("round %d: %d left", round, len(h))
		}
	}
}
