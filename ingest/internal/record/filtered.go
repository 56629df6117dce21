package record

import (
	"slices"

	"github.com/tailscope/tailscope/span"
)

// Filtered spans.
//
// --since, --until, --hops and --exclude-hops leave good spans out: they
// are counted as filtered (Stats.Filtered, by reason), never as skipped,
// and never listed one by one. Their ids are remembered (a 64-bit hash of
// trace and span id each) so that a kept span whose parent was filtered
// out can be told from an orphan of bad data (Stats.FilteredParents).

// maxFilteredIDs bounds the ids remembered: 8 bytes each, 32 MB at most.
const maxFilteredIDs = 1 << 22

// IsFilter reports whether a reason accept gives is a filter's.
func IsFilter(reason string) bool {
	return reason == ReasonOutsideWindow || reason == ReasonHopFiltered || reason == ReasonExcluded
}

// idSet is a set of span keys: appended, sorted when first asked.
type idSet struct {
	ids    []uint64
	sorted bool
	full   bool // some ids were not kept
}

func (s *idSet) add(k uint64) {
	if len(s.ids) >= maxFilteredIDs {
		s.full = true
		return
	}
	s.ids = append(s.ids, k)
	s.sorted = false
}

func (s *idSet) has(k uint64) bool {
	if !s.sorted {
		slices.Sort(s.ids)
		s.sorted = true
	}
	_, ok := slices.BinarySearch(s.ids, k)
	return ok
}

// SpanKey is a hash of a span's trace and span id (FNV-1a, 64 bits); 0
// is never returned, so that it can mean "no id".
func SpanKey(trace, id string) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for i := 0; i < len(trace); i++ {
		h = (h ^ uint64(trace[i])) * prime
	}
	h = (h ^ 0xff) * prime // a separator no id text holds
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * prime
	}
	if h == 0 {
		h = 1
	}
	return h
}

// FilteredKey is the key a filtered span is remembered by, 0 when it has
// no span id (nothing can name it as a parent).
func FilteredKey(sp *span.Span) uint64 {
	if sp.SpanID == "" {
		return 0
	}
	return SpanKey(sp.TraceID, sp.SpanID)
}
