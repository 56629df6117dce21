package replay

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/samples/matrix"
	"github.com/tailscope/tailscope/span"
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

// A replay worker's hopCache gives each call its hop's policy and counts
// its attempts as the policy's map and a tally by name do: the same
// outcomes and tallies as replaying each request with neither, with some
// hops left to the default, callee-side calls and the calls' hop names at
// other addresses.
func TestHopCacheSameAsLookups(t *testing.T) {
	c := matrix.Article()
	c.Normal, c.Tail, c.Slow, c.TailFirstHop = 300, 80, 40, 20
	reqs := matrixRequests(t, c, matrix.Generate(c))
	n := 0
	var walk func(cs []*span.Call)
	walk = func(cs []*span.Call) {
		for _, cl := range cs {
			if n++; n%2 == 0 {
				cl.Hop = strings.Clone(cl.Hop) // the same name elsewhere
			}
			if n%5 == 0 {
				cl.Role = span.RoleCallee // no timeout unless listed
			}
			for _, a := range cl.Attempts {
				walk(a.Calls)
			}
		}
	}
	for _, r := range reqs {
		walk(r.Calls)
	}
	p := &policy.Policy{Budget: 20 * time.Second, Default: policy.Hop{Timeout: 5 * time.Millisecond, Retries: 1}, Hops: map[string]policy.Hop{}}
	for i, name := range c.Hops[:len(c.Hops)-1] { // the last hop: the default
		p.Hops[name] = policy.Hop{Timeout: time.Duration(300+300*i) * time.Millisecond, Retries: 2}
	}
	got := Run(reqs, p, Options{})
	tally, hedges := map[string]int{}, map[string]int{}
	for i, r := range reqs {
		if o := one(r, p, nil, tally, hedges); !reflect.DeepEqual(o, got.Outcomes[i]) {
			t.Fatalf("request %d: %+v, without the cache %+v", i, got.Outcomes[i], o)
		}
	}
	if !reflect.DeepEqual(got.AttemptsByHop, tally) || len(tally) < 2 {
		t.Fatalf("attempts by hop %v, without the cache %v", got.AttemptsByHop, tally)
	}
}
