package record

import (
	"testing"
)

// The filtered ids are bounded: past the bound the answer says so.
func TestFilteredIDsBounded(t *testing.T) {
	var s idSet
	for i := range maxFilteredIDs + 10 {
		s.add(uint64(i) + 1)
	}
	if !s.full || len(s.ids) != maxFilteredIDs || !s.has(5) || s.has(maxFilteredIDs+5) {
		t.Errorf("full %v, %d ids", s.full, len(s.ids))
	}
	if SpanKey("a", "bc") == SpanKey("ab", "c") {
		t.Error("the key does not separate trace and span id")
	}
}
