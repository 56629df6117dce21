package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/glyph"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/option"
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
func timelineLines(rep *analyze.Report, names option.Names) []string {
	head, rows, incidents := timelineParts(rep, names)
	return append(append(head, rows...), incidents...)
}

// timelineParts are timelineLines' head (the blocks and the headroom),
// sparkline rows and incident lines; the HTML report draws charts in
// place of the rows.
func timelineParts(rep *analyze.Report, names option.Names) (lines, rows, incidents []string) {
	tl := rep.Timeline
	if tl == nil {
		return nil, nil, nil
	}
	if len(tl.Blocks) == 0 || tl.Block == "" {
		if tl.Note != "" {
			return []string{"over time: " + tl.Note}, nil, nil
		}
		return nil, nil, nil
	}
	first, last := tl.Blocks[0].From, tl.Blocks[len(tl.Blocks)-1].Until
	head := fmt.Sprintf("over time: %s of %s with requests, %s to %s (UTC)", units.Count(len(tl.Blocks), "block", "blocks"), tl.Block, first, last)
	lines = []string{head}
	if !tl.Measured {
		lines = append(lines, "  "+tl.Note+fmt.Sprintf("; the timeouts carry the default ×%s headroom for drift", units.Decimal(tl.Headroom.Pooled, 2)))
	} else if tl.Headroom.Source == "measured" {
		lines = append(lines, fmt.Sprintf("  drift between quiet blocks: ×%s at the median of %s; a hop's timeout carries its own drift when larger, beyond what the margin carries",
			units.Decimal(tl.Headroom.Pooled, 2), units.Count(tl.Headroom.Hops, "hop", "hops")))
	}
	if f, n := recordsRaised(rep); n > 0 {
		lines = append(lines, fmt.Sprintf("  held out block by block, the extrapolated timeouts fell short: %s carry ×%s (the basis says by how many calls)",
			units.Count(n, "hop's timeout", "hops' timeouts"), units.Decimal(f, 2)))
	}
	hops := timelineHops(rep)
	if len(hops) > 0 {
		w := 0
		for _, h := range hops {
			w = max(w, len([]rune(glyph.Escape(h.Hop))))
		}
		w = min(w, 60)
		rows = append(rows, fmt.Sprintf("  %-*s  %s  %s", w, "HOP (p99 per block)", strings.Repeat(" ", max(0, len(tl.Blocks)-1)), "LOW–HIGH"))
		for _, h := range hops {
			spark, lo, hi := blockSpark(h.Blocks)
			name := []rune(glyph.Escape(h.Hop))
			if len(name) > w {
				name = append(name[:w-1], '…')
			}
			rows = append(rows, fmt.Sprintf("  %-*s  %s  %s", w, string(name), spark, units.MillisRange(lo, hi)))
		}
	}
	if n := len(rep.Incidents); n > 0 {
		incidents = append(incidents, fmt.Sprintf("  %s: a block whose calls on a hop departed from its other blocks (p99 at least %s× the rest's, significantly more calls above it)",
			units.Count(n, "incident", "incidents"), units.Decimal(analyze.IncidentSlowdown, 1)))
		for i, in := range rep.Incidents {
			if i == maxIncidentLines {
				incidents = append(incidents, fmt.Sprintf("    … %d more (JSON incidents)", n-i))
				break
			}
			incidents = append(incidents, fmt.Sprintf("    %s–%s %s: p99 %s against %s (%s×); %d of %d calls above the baseline p99",
				clockOf(in.From), clockOf(in.Until), glyph.Escape(in.Hop), units.Millis(in.P99Ms), units.Millis(in.BaselineP99Ms), units.Decimal(in.Slowdown, 1), in.Above, in.Calls))
		}
	}
	if ws := excludeWindows(rep.Incidents, names); len(ws) > 0 {
		if len(ws) <= maxExcludeFlags {
			incidents = append(incidents, "  to fit without them: "+strings.Join(ws, " "))
		} else {
			incidents = append(incidents, fmt.Sprintf("  to fit without them: %d %s flags (their times are in JSON incidents)", len(ws), names.Of(option.ExcludeWindow)))
		}
	}
	return lines, rows, incidents
}

// maxExcludeFlags is how many --exclude-window flags the reports spell
// out; past it they say how many.
const maxExcludeFlags = 8

// excludeWindows are the --exclude-window flags that leave every incident
// out of a fit: their windows, overlapping ones merged.
func excludeWindows(ins []analyze.Incident, names option.Names) []string {
	type w struct {
		a, b        int64
		from, until string
	}
	var ws []w
	for _, in := range ins {
		ws = append(ws, w{in.Start, in.End, in.From, in.Until})
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].a < ws[j].a })
	var out []string
	for i := 0; i < len(ws); {
		cur := ws[i]
		j := i + 1
		for ; j < len(ws) && ws[j].a <= cur.b; j++ {
			if ws[j].b > cur.b {
				cur.b, cur.until = ws[j].b, ws[j].until
			}
		}
		out = append(out, names.Of(option.ExcludeWindow)+" "+cur.from+"/"+cur.until)
		i = j
	}
	return out
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

// timelineChart is one hop's p99 per block drawn for the HTML report: a
// bar per block on a log scale, a band behind each block that is an
// incident on the hop.
type timelineChart struct {
	ID, Hop, Title string
	W, H           int
	X0, X1, Y0, Y1 string
	Bars           []timelineBar
	Bands          []timelineBar
	YTicks, XTicks []tick
}

// timelineBar is a block's bar (or band): its box and tooltip.
type timelineBar struct {
	X, Y, W, H, Tip, Class string
	From                   string
	P99Ms                  string
}

// timelineCharts draws the timeline's hops (timelineHops) as charts.
func timelineCharts(rep *analyze.Report) []*timelineChart {
	tl := rep.Timeline
	if tl == nil || len(tl.Blocks) == 0 {
		return nil
	}
	var out []*timelineChart
	for i, h := range timelineHops(rep) {
		out = append(out, timelineChartOf(fmt.Sprintf("timeline-%d", i+1), h, tl))
	}
	return out
}

func timelineChartOf(id string, h *analyze.Hop, tl *analyze.Timeline) *timelineChart {
	const w, ht = 1080, 120
	x0, x1, y0, y1 := 56.0, float64(w-12), 8.0, float64(ht-22)
	c := &timelineChart{ID: id, Hop: h.Hop, Title: "p99 per " + tl.Block + " block of " + h.Hop, W: w, H: ht,
		X0: f1(x0), X1: f1(x1), Y0: f1(y0), Y1: f1(y1)}
	_, lo, hi := blockSpark(h.Blocks)
	if hi <= 0 {
		return c
	}
	lo = lo / 1.5 // bars of the fastest block still show
	ly := func(ms float64) float64 {
		if hi <= lo {
			return y0
		}
		f := math.Log(ms/lo) / math.Log(hi/lo)
		return y1 - f*(y1-y0)
	}
	n := len(tl.Blocks)
	step := (x1 - x0) / float64(n)
	for j, b := range h.Blocks {
		x := x0 + float64(j)*step
		tb := tl.Blocks[j]
		if b.Incident {
			c.Bands = append(c.Bands, timelineBar{X: f1(x), Y: f1(y0), W: f1(step), H: f1(y1 - y0), Class: "band",
				From: tb.From, Tip: fmt.Sprintf("incident %s–%s", clockOf(tb.From), clockOf(tb.Until))})
		}
		if b.P99Ms == nil || *b.P99Ms <= 0 {
			continue
		}
		y := ly(*b.P99Ms)
		class := "lat"
		if b.Incident {
			class = "fail"
		}
		c.Bars = append(c.Bars, timelineBar{X: f1(x + step*0.1), Y: f1(y), W: f1(step * 0.8), H: f1(y1 - y), Class: class,
			From: tb.From, P99Ms: fmt.Sprintf("%g", *b.P99Ms),
			Tip: fmt.Sprintf("%s–%s: p99 %s over %d successful calls (%d attempts)", clockOf(tb.From), clockOf(tb.Until), units.Millis(*b.P99Ms), b.Successes, b.Attempts)})
	}
	c.YTicks = []tick{{Pos: f1(ly(hi)), Label: units.Millis(hi)}, {Pos: f1(y1), Label: units.Millis(lo)}}
	// A time label every few blocks, at most ten.
	every := max(1, (n+9)/10)
	for j := 0; j < n; j += every {
		c.XTicks = append(c.XTicks, tick{Pos: f1(x0 + (float64(j)+0.5)*step), Label: clockOf(tl.Blocks[j].From)})
	}
	return c
}

// recordsRaised is the factor the block-by-block check of the
// extrapolated timeouts added (analyze/records.go) and how many hops'
// timeouts it raised; 0, 0 when none.
func recordsRaised(rep *analyze.Report) (float64, int) {
	f, n := 0.0, 0
	for _, h := range rep.Hops {
		if r := h.Recommendation.Records; r > 1 {
			f, n = max(f, r), n+1
		}
	}
	return f, n
}
