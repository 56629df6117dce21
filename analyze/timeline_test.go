package analyze

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/span"
)

// timedLogs is n requests a minute for minutes minutes, each a root and one
// call to hop "db" whose duration slow(minute) scales (1: its usual
// lognormal around 20 ms).
func timedLogs(seed uint64, minutes, perMinute int, slow func(minute int) float64) []span.Span {
	r := rand.New(rand.NewPCG(seed, 3))
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC).UnixNano()
	var out []span.Span
	for m := 0; m < minutes; m++ {
		for i := 0; i < perMinute; i++ {
			id := fmt.Sprintf("t%d-%d", m, i)
			start := t0 + int64(m)*int64(time.Minute) + int64(i)*int64(time.Minute)/int64(perMinute)
			d := int64(float64(20*time.Millisecond) * math.Exp(0.3*r.NormFloat64()) * slow(m))
			out = append(out,
				span.Span{TraceID: id, SpanID: "r", Service: "api", Name: "GET /", Hop: "api GET /", Kind: "server", Start: start, Duration: d + int64(time.Millisecond)},
				span.Span{TraceID: id, SpanID: "c", ParentID: "r", Service: "api", Name: "db", Hop: "db", Kind: "client", Start: start, Duration: d})
		}
	}
	return out
}

func measureSpans(spans []span.Span) *Report {
	reqs, probs := span.Assemble(spans)
	return Measure(spans, reqs, probs, Options{})
}

func TestTimelineIncidentsAndDrift(t *testing.T) {
	for _, c := range []struct {
		name      string
		slow      func(int) float64
		incidents []string // want the db incidents to start at these hh:mm
		maxDrift  float64
	}{
		{"stationary", func(int) float64 { return 1 }, nil, 1.1},
		// One slow stretch: named, and left out of the drift.
		{"one incident", func(m int) float64 {
			if m >= 30 && m < 36 {
				return 8
			}
			return 1
		}, []string{"10:30"}, 1.1},
		// A third of the day slow, in three blocks in a row: a baseline
		// of the other blocks would take them for the normal tail.
		{"three blocks in a row", func(m int) float64 {
			if m >= 20 && m < 50 {
				return 6
			}
			return 1
		}, []string{"10:20"}, 1.1},
		// The whole distribution moving up 1.6× in the second half is
		// drift, not an incident (below the 1.5× p99 rule at the median).
		{"drift", func(m int) float64 { return 1 + 0.6*float64(m)/90 }, nil, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := measureSpans(timedLogs(7, 90, 40, c.slow))
			tl := rep.Timeline
			if tl == nil || !tl.Measured || tl.Block != "10m" || len(tl.Blocks) != 9 {
				t.Fatalf("timeline %+v: want 9 measured blocks of 10m", tl)
			}
			db := hopOf(rep, "db")
			if db == nil || len(db.Blocks) != 9 {
				t.Fatalf("db blocks: %+v", db)
			}
			var got []string
			for _, in := range rep.Incidents {
				if in.Hop == "db" {
					got = append(got, in.From[11:16])
					if in.P99Ms < IncidentSlowdown*in.BaselineP99Ms || in.Above > in.Calls {
						t.Errorf("incident %+v: p99 not above %g× its baseline", in, IncidentSlowdown)
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(c.incidents) {
				t.Errorf("db incidents start at %v, want %v", got, c.incidents)
			}
			if db.Drift == nil {
				t.Fatal("no drift measured on db")
			}
			if db.Drift.Ratio > c.maxDrift {
				t.Errorf("db drift %g×, want at most %g×", db.Drift.Ratio, c.maxDrift)
			}
			// Each block is compared with the rest pooled: the last block
			// of a steady 1.6× rise is ~1.2× the rest, less its
			// confidence bound.
			if c.name == "drift" && (db.Drift.Ratio < 1.05 || db.Drift.From[11:16] != "11:20") {
				t.Errorf("db drift %g× at %s: the rise to the last block is not seen", db.Drift.Ratio, db.Drift.From)
			}
		})
	}
}

func TestBlockSize(t *testing.T) {
	for _, c := range []struct {
		span time.Duration
		want time.Duration
	}{
		{5 * time.Second, 0},
		{6 * time.Second, time.Second},
		{59 * time.Minute, 9*time.Minute + 50*time.Second},
		{time.Hour, 10 * time.Minute},
		{7 * time.Hour, 10 * time.Minute},
		// 48 blocks of 10m and the edge would pass MaxBlocks.
		{8 * time.Hour, 20 * time.Minute},
		{24 * time.Hour, 40 * time.Minute},
	} {
		if got := BlockSize(int64(c.span)); got != c.want {
			t.Errorf("BlockSize(%s) = %s, want %s", c.span, got, c.want)
		}
	}
}

func TestShortLogsStateDefaultHeadroom(t *testing.T) {
	rep := measureSpans(timedLogs(1, 1, 20, func(int) float64 { return 1 })[:6])
	tl := rep.Timeline
	if tl == nil || tl.Measured || tl.Note == "" {
		t.Fatalf("timeline %+v: want a note saying the logs are too short", tl)
	}
	f, why := rep.HeadroomOf(hopOf(rep, "db"))
	if f != DefaultHeadroom || why == "" {
		t.Errorf("headroom %g (%q), want the stated default %g", f, why, DefaultHeadroom)
	}
}

// restQuantile equals the quantile of the difference built by hand, ties
// included.
func TestRestQuantile(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for trial := 0; trial < 300; trial++ {
		n := 2 + r.IntN(60)
		all := make([]int64, n)
		for i := range all {
			all[i] = int64(r.IntN(8)) // many ties
		}
		slices.Sort(all)
		var part, rest []int64
		for _, v := range all {
			if r.IntN(3) == 0 && len(part) < n-1 {
				part = append(part, v)
			} else {
				rest = append(rest, v)
			}
		}
		for _, q := range []float64{0, 0.3, 0.5, 0.9, 0.99, 1} {
			if got, want := restQuantile(all, part, q), quantile.Int64(rest, q); math.Abs(got-want) > 1e-9 {
				t.Fatalf("all %v part %v q %g: %g, want %g", all, part, q, got, want)
			}
		}
	}
}
