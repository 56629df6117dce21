package policy

import (
	"strings"
	"testing"
	"time"
)

// TestHedgeParse reads hedge settings: max defaults to 1, none and 0
// are no hedging, a hedge is inherited from the default like every key.
func TestHedgeParse(t *testing.T) {
	p, err := Parse("h.yaml", []byte(`budget: 5s
default: {timeout: 1s, hedge: {delay: 80ms}}
hops:
  a: {hedge: {delay: 50ms, max: 2}}
  b: {hedge: none}
  c: {timeout: 2s}
  d: {hedge: {delay: 0s}}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Hedge{"a": {50 * time.Millisecond, 2}, "b": {}, "c": {80 * time.Millisecond, 1}, "d": {}}
	for h, w := range want {
		if got := p.Hops[h].Hedge; got != w {
			t.Errorf("%s: hedge %+v, want %+v", h, got, w)
		}
	}
	if p.Default.Hedge != (Hedge{80 * time.Millisecond, 1}) {
		t.Errorf("default hedge %+v", p.Default.Hedge)
	}
}

// TestHedgeMarshal: Marshal writes a hedge only where there is one (a
// policy without hedges is written as before), and it reads back.
func TestHedgeMarshal(t *testing.T) {
	p := &Policy{Budget: 3 * time.Second, Default: Hop{Timeout: time.Second},
		Hops: map[string]Hop{
			"jittery": {Timeout: 400 * time.Millisecond, Hedge: Hedge{Delay: 45 * time.Millisecond, Max: 1}},
			"plain":   {Timeout: 200 * time.Millisecond, Retries: 1},
		}}
	out := string(p.Marshal())
	if !strings.Contains(out, "    hedge: {delay: 45ms, max: 1}\n") {
		t.Fatalf("no hedge line:\n%s", out)
	}
	if strings.Count(out, "hedge:") != 1 {
		t.Fatalf("hedge written where none is set:\n%s", out)
	}
	back, err := Parse("x.yaml", []byte(out))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for n, h := range p.Hops {
		if back.Hops[n] != h {
			t.Errorf("%s: read back %+v, want %+v", n, back.Hops[n], h)
		}
	}
}
