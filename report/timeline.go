package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/glyph"
	"github.com/tailscope/tailscope/internal/units"
)

// maxTimelineHops is how many hops the text and Markdown timelines draw:
// the hops with incidents, then the most attempted call hops.
const maxTimelineHops = 12

// maxIncidentLines is how many incidents the text and Markdown reports
// list one per line (JSON keeps all of them).
const maxIncidentLines = 20

// timelineLines are the human reports' "over time" section: each drawn
// hop's p99 per block as a sparkline (its own log scale; "!" under a block
// that is an incident on it, a space where it had no successful call), the
// incidents, and the headroom the recommendation carries for drift. nil
// when the logs have no timeline.
func timelineLines(rep *analyze.Report) []string {
	tl := rep.Timeline
	if tl == nil {
		return nil
	}
	if len(tl.Blocks) == 0 || tl.Block == "" {
		if tl.Note != "" {
			return []string{"over time: " + tl.Note}
		}
		return nil
	}
	first, last := tl.Blocks[0].From, tl.Blocks[len(tl.Blocks)-1].Until
	head := fmt.Sprintf("over time: %s of %s with requests, %s to %s (UTC)", units.Count(len(tl.Blocks), "block", "blocks"), tl.Block, first, last)
	lines := []string{head}
	if !tl.Measured {
		lines = append(lines, "  "+tl.Note+fmt.Sprintf("; the timeouts carry the default ×%s headroom for drift", units.Decimal(tl.Headroom.Pooled, 2)))
	} else if tl.Headroom.Source == "measured" {
		lines = append(lines, fmt.Sprintf("  drift between quiet blocks: ×%s at the median of %s; a hop's timeout carries its own drift when larger, beyond what the margin carries",
			units.Decimal(tl.Headroom.Pooled, 2), units.Count(tl.Headroom.Hops, "hop", "hops")))
	}
	hops := timelineHops(rep)
	if len(hops) > 0 {
		w := 0
		for _, h := range hops {
			w = max(w, len([]rune(glyph.Escape(h.Hop))))
		}
		w = min(w, 60)
		lines = append(lines, fmt.Sprintf("  %-*s  %s  %s", w, "HOP (p99 per block)", strings.Repeat(" ", max(0, len(tl.Blocks)-1)), "LOW–HIGH"))
		for _, h := range hops {
			spark, lo, hi := blockSpark(h.Blocks)
			name := []rune(glyph.Escape(h.Hop))
			if len(name) > w {
				name = append(name[:w-1], '…')
			}
			lines = append(lines, fmt.Sprintf("  %-*s  %s  %s", w, string(name), spark, units.MillisRange(lo, hi)))
		}
	}
	if n := len(rep.Incidents); n > 0 {
		lines = append(lines, fmt.Sprintf("  %s: a block whose calls on a hop departed from its other blocks (p99 at least %s× the rest's, significantly more calls above it)",
			units.Count(n, "incident", "incidents"), units.Decimal(analyze.IncidentSlowdown, 1)))
		for i, in := range rep.Incidents {
			if i == maxIncidentLines {
				lines = append(lines, fmt.Sprintf("    … %d more (JSON incidents)", n-i))
				break
			}
			lines = append(lines, fmt.Sprintf("    %s–%s %s: p99 %s against %s (%s×); %d of %d calls above the baseline p99",
				clockOf(in.From), clockOf(in.Until), glyph.Escape(in.Hop), units.Millis(in.P99Ms), units.Millis(in.BaselineP99Ms), units.Decimal(in.Slowdown, 1), in.Above, in.Calls))
		}
	}
	return lines
}

// timelineHops picks the hops a timeline draws: those with incidents, then
// the call hops by attempts, at most maxTimelineHops.
func timelineHops(rep *analyze.Report) []*analyze.Hop {
	inc := map[string]bool{}
	for _, in := range rep.Incidents {
		inc[in.Hop] = true
	}
	var cand []*analyze.Hop
	for i := range rep.Hops {
		h := &rep.Hops[i]
		if h.Blocks != nil && (h.Role == analyze.RoleCall || inc[h.Hop]) {
			cand = append(cand, h)
		}
	}
	sort.SliceStable(cand, func(i, j int) bool {
		if inc[cand[i].Hop] != inc[cand[j].Hop] {
			return inc[cand[i].Hop]
		}
		if cand[i].Attempts != cand[j].Attempts {
			return cand[i].Attempts > cand[j].Attempts
		}
		return cand[i].Hop < cand[j].Hop
	})
	return cand[:min(len(cand), maxTimelineHops)]
}

// blockSpark draws a hop's p99 per block on its own log scale, with "!"
// for a block that is an incident on it; lo and hi are the scale's ends
// (ms).
func blockSpark(bl []analyze.HopBlock) (string, float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, b := range bl {
		if b.P99Ms != nil && *b.P99Ms > 0 {
			lo, hi = min(lo, *b.P99Ms), max(hi, *b.P99Ms)
		}
	}
	if math.IsInf(lo, 1) {
		return strings.Repeat(" ", len(bl)), 0, 0
	}
	levels := []rune("▁▂▃▄▅▆▇█")
	var sb strings.Builder
	for _, b := range bl {
		switch {
		case b.Incident:
			sb.WriteRune('!')
		case b.P99Ms == nil || *b.P99Ms <= 0:
			sb.WriteRune(' ')
		case hi <= lo:
			sb.WriteRune(levels[0])
		default:
			f := math.Log(*b.P99Ms/lo) / math.Log(hi/lo)
			sb.WriteRune(levels[min(len(levels)-1, int(f*float64(len(levels))))])
		}
	}
	return sb.String(), lo, hi
}

// clockOf is an RFC 3339 time as hh:mm (UTC), the date left to the
// section's head.
func clockOf(rfc string) string {
	if len(rfc) >= 16 {
		return rfc[11:16]
	}
	return rfc
}
