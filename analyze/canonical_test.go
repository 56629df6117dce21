package analyze

import (
	"reflect"
	"testing"

	"github.com/tailscope/tailscope/span"
)

// TestStateTimesCanonical holds a summary's attempt times to one order
// whatever way a parallel reader split the spans between its Parts: the
// same spans, split two ways and merged in either order, give equal
// States (a summary of the same logs is the same bytes).
func TestStateTimesCanonical(t *testing.T) {
	spans := make([]span.Span, 3000)
	for i := range spans {
		s := &spans[i]
		s.TraceID = string(rune('a'+i%26)) + "trace"
		s.SpanID = "s"
		s.Hop = []string{"a", "b", "c"}[i%3]
		s.Start = int64(i%997) * 1e6 // starts repeat: ties broken by duration
		s.Duration = int64(i%13+1) * 1e6
		if i%17 == 0 {
			s.Status = span.Error
		}
	}
	state := func(split func(i int) int, reverse bool) *State {
		a := NewAccum(0)
		parts := []*Part{a.Part(), a.Part()}
		for i := range spans {
			parts[split(i)].Add(&spans[i])
		}
		if reverse {
			parts[0], parts[1] = parts[1], parts[0]
		}
		for _, p := range parts {
			a.Merge(p)
		}
		st := a.State()
		st.Sample = nil // the sample is the ordered reader's, not the Parts'
		return st
	}
	want := state(func(i int) int { return i % 2 }, false)
	for _, c := range []struct {
		name    string
		split   func(int) int
		reverse bool
	}{
		{"merged the other way", func(i int) int { return i % 2 }, true},
		{"split in halves", func(i int) int { return i * 2 / len(spans) }, false},
		{"split in blocks", func(i int) int { return i / 100 % 2 }, true},
	} {
		if got := state(c.split, c.reverse); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the State differs", c.name)
		}
	}
	for _, h := range want.Hops {
		for i := 1; i < len(h.Times.At); i++ {
			if h.Times.At[i] < h.Times.At[i-1] || h.Times.At[i] == h.Times.At[i-1] && h.Times.D[i] < h.Times.D[i-1] {
				t.Fatalf("hop %s: times not by start, then duration, at %d", h.Name, i)
			}
		}
	}
}
