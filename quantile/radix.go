package quantile

import (
	"math/bits"
	"slices"
	"sync"
)

// radixFrom is the length from which sortInt64 sorts by radix: below it
// the comparison sort's lower constant wins.
const radixFrom = 512

// radixBits is the width of one radix digit: 2^11 counters fit in L1, and
// durations spanning up to 8.6 s of nanoseconds sort in three passes.
const radixBits = 11

// sortInt64 sorts s ascending, the result the same as slices.Sort's (ints
// have no order among equals to keep). A hop's exact values are sorted
// once per report, up to ExactLimit of them a hop: an LSD radix sort over
// the values' range (max − min, so only the digits that vary are passed
// over) takes a third of pdqsort's time there.
func sortInt64(s []int64) {
	if len(s) < radixFrom {
		slices.Sort(s)
		return
	}
	lo, hi := s[0], s[0]
	for _, x := range s[1:] {
		lo, hi = min(lo, x), max(hi, x)
	}
	// Keys are offsets from the minimum: unsigned arithmetic keeps their
	// order even when the range crosses zero or spans all of int64.
	span := uint64(hi) - uint64(lo)
	if span == 0 {
		return
	}
	passes := (bits.Len64(span) + radixBits - 1) / radixBits
	bp := scratch(len(s))
	defer radixScratch.Put(bp)
	src, dst := s, (*bp)[:len(s)]
	var count [1 << radixBits]int
	for p := range passes {
		shift := uint(p * radixBits)
		clear(count[:])
		for _, x := range src {
			count[(uint64(x)-uint64(lo))>>shift&(1<<radixBits-1)]++
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, x := range src {
			d := (uint64(x) - uint64(lo)) >> shift & (1<<radixBits - 1)
			dst[count[d]] = x
			count[d]++
		}
		src, dst = dst, src
	}
	if passes%2 == 1 {
		copy(s, src)
	}
}

// radixScratch holds sortInt64's buffers (*[]int64) between sorts. A
// report sorts every hop's exact values in turn, and a buffer made per
// sort is garbage that the heap cannot reuse before the next collection:
// on a million flat spans 8 MB of fresh heap in the report phase, where
// the heap peaks. Pooled, the sorts of a report share one buffer per
// goroutine, as large as the largest hop's values.
var radixScratch sync.Pool

// scratch returns a pooled buffer of at least n values.
func scratch(n int) *[]int64 {
	if bp, _ := radixScratch.Get().(*[]int64); bp != nil && cap(*bp) >= n {
		return bp
	}
	b := make([]int64, n)
	return &b
}
