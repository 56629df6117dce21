package analyze

import (
	"fmt"
	"time"

	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/span"
)

// Thresholds of the averages-hide-tail note.
const (
	// MinRequestsTailNote is the number of requests below which the note
	// is not made: a p95 over fewer is the largest value or two.
	MinRequestsTailNote = 20
	// MedianStill is how little the median may move (relative) to count
	// as "barely moves".
	MedianStill = 0.10
	// TailMoves is how much the tail must move (ratio) to count.
	TailMoves = 1.5
)

// hiddenTail makes the article's "averages hide it" note: the request
// median barely moves (within MedianStill) between successful requests
// and all requests, while p95 or p99 moves by TailMoves or more — the
// failures live in the tail, so a dashboard of medians or means shows
// nothing wrong while some requests wait for many seconds. Without
// failures it compares p99 with p50 of all requests: a p99 at least
// 5×TailMoves the median is a tail no median shows.
func hiddenTail(reqs []*span.Request) *Warning {
	if len(reqs) < MinRequestsTailNote {
		return nil
	}
	var all, ok []int64
	for _, r := range reqs {
		all = append(all, r.Latency())
		if !r.Failed {
			ok = append(ok, r.Latency())
		}
	}
	quantile.SortInt64(all)
	quantile.SortInt64(ok)
	d := func(ns float64) string { return units.Duration(time.Duration(ns)) }
	p50, p95, p99 := quantile.Int64(all, 0.5), quantile.Int64(all, 0.95), quantile.Int64(all, 0.99)
	if len(ok) < len(all) && len(ok) >= MinRequestsTailNote/2 {
		s50, s95, s99 := quantile.Int64(ok, 0.5), quantile.Int64(ok, 0.95), quantile.Int64(ok, 0.99)
		if s50 <= 0 || s95 <= 0 {
			return nil
		}
		moved50 := (p50 - s50) / s50
		if moved50 < 0 {
			moved50 = -moved50
		}
		if moved50 <= MedianStill && (p95 >= TailMoves*s95 || p99 >= TailMoves*s99) {
			return &Warning{Code: "averages-hide-tail", Message: fmt.Sprintf(
				"%d of %d requests failed, yet p50 is %s over all requests against %s over the successful ones (%+.1f%%), while p95 is %s against %s and p99 %s against %s: the failures live in the tail, where medians and averages do not look",
				len(all)-len(ok), len(all), d(p50), d(s50), 100*(p50-s50)/s50, d(p95), d(s95), d(p99), d(s99))}
		}
		return nil
	}
	if len(ok) == len(all) && p50 > 0 && p99 >= 5*TailMoves*p50 {
		return &Warning{Code: "averages-hide-tail", Message: fmt.Sprintf(
			"p99 %s is %.1f× p50 %s: the slowest requests are invisible in medians and averages",
			d(p99), p99/p50, d(p50))}
	}
	return nil
}
