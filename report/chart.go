package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/quantile"
)

// Charts are computed here and only drawn by html.tmpl: every coordinate
// is decided in Go, formatted with a fixed precision (so the same report
// gives byte-identical SVG), and carried with the value it stands for in
// data-* attributes, so that tests check what a chart says, not how it
// looks.

// chart is one SVG histogram with its axes and markers.
type chart struct {
	ID   string
	Kind string // latency, failures, landing
	Hop  string // the hop or policy the chart belongs to
	// Title is the accessible name of the chart.
	Title  string
	Scale  string // log or linear
	W, H   int
	Plot   rect
	Bars   []bar
	XTicks []tick
	YTicks []tick
	Marks  []marker
	XLabel string
	// Caption is a short note shown beside the chart's title.
	Caption string
	// Empty, when set, replaces the bars with a note (e.g. "no failures").
	Empty string
}

type rect struct{ X0, Y0, X1, Y1 string }

// bar is one histogram bucket; the Data fields carry the values.
type bar struct {
	X, Y, W, H     string
	Tip            string
	FromMs, ToMs   string
	Count          int
	Class          string
	LabelX, LabelY string
	ShowCount      bool
}

type tick struct {
	Pos   string // x for the x axis, y for the y axis
	Label string
}

// marker is a vertical line at a time value with a label above the plot.
type marker struct {
	Kind   string // p50, p99, timeout, recommended, mean, budget
	Ms     string
	X      string
	Label  string
	LabelY string
	LineY0 string
	Anchor string
	Dashed bool
	row    int
}

// markIn is a marker request: a kind, a value and its label.
type markIn struct {
	kind  string
	ms    float64
	label string
	// dashed draws a lower bound (a censored percentile).
	dashed bool
}

// f1 formats a coordinate with one decimal: enough for a screen, stable.
func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

// fms formats a value in ms exactly as the JSON report has it, so tests
// can compare data-ms with the report.
func fms(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// axis maps a time in ms to an x coordinate.
type axis struct {
	log    bool
	lo, hi float64 // ms (log: the decade bounds)
	x0, x1 float64
}

func (a axis) x(ms float64) float64 {
	var t float64
	if a.log {
		ms = math.Max(ms, a.lo)
		t = (math.Log10(ms) - math.Log10(a.lo)) / (math.Log10(a.hi) - math.Log10(a.lo))
	} else {
		t = (ms - a.lo) / (a.hi - a.lo)
	}
	t = math.Min(math.Max(t, 0), 1)
	return a.x0 + t*(a.x1-a.x0)
}

// Chart geometry, in SVG user units.
const (
	marginLeft  = 44
	marginRight = 16
	labelRow    = 13 // height of one row of marker labels
	marginBelow = 34
)

// logTicks are 1-2-5 values per decade within [lo, hi].
func logTicks(lo, hi float64) []float64 {
	var out []float64
	for d := math.Pow(10, math.Floor(math.Log10(lo)+1e-9)); d <= hi*1.0001; d *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if v := d * m; v <= hi*1.0001 && v >= lo*0.9999 {
				out = append(out, v)
			}
		}
	}
	return out
}

// niceCeil rounds x up to 1, 2 or 5 times a power of ten.
func niceCeil(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x*0.9999 {
			return m * p
		}
	}
	return 10 * p
}

// niceFloor rounds x down to 1, 2 or 5 times a power of ten.
func niceFloor(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{5, 2, 1} {
		if m*p <= x*1.0001 {
			return m * p
		}
	}
	return p
}

// linearTicks are about n evenly spaced round values in [0, hi].
func linearTicks(hi float64, n int) []float64 {
	step := niceCeil(hi / float64(n))
	var out []float64
	for v := 0.0; v <= hi*1.0001; v += step {
		out = append(out, v)
	}
	return out
}

// countTicks are the y gridlines: 0, top/2 and top, with top a round
// number at least 12% above the tallest bar, so that the count written
// above it stays clear of the marker labels.
func countTicks(maxCount int) (top float64, ticks []float64) {
	need := math.Max(float64(maxCount)*1.12, 1)
	p := math.Pow(10, math.Floor(math.Log10(need)))
	top = 10 * p
	for _, m := range []float64{1, 2, 3, 4, 5, 6, 8, 10} {
		if m*p >= need {
			top = m * p
			break
		}
	}
	if top < 2 {
		return top, []float64{0, top}
	}
	return top, []float64{0, top / 2, top}
}

// histChart lays out a histogram of buckets with markers. log chooses a log
// time axis (latency shapes at any scale) or a linear one from 0 (failure
// times, where a pile-up at a timeout must stand out as one tall bar).
// fixedHi, when > 0, pins the axis end so that small multiples share it.
func histChart(id, kind, owner, title string, bs []quantile.Bucket, marks []markIn, log bool, width, height int, fixedHi float64, barClass string) *chart {
	c := &chart{ID: id, Kind: kind, Hop: owner, Title: title, W: width, H: height, Scale: "linear", XLabel: "time"}
	if log {
		c.Scale = "log"
		c.XLabel = "time (log scale)"
	}
	x0, x1 := float64(marginLeft), float64(width-marginRight)

	// The axis covers the buckets and every marker.
	lo, hi := math.Inf(1), 0.0
	for _, b := range bs {
		lo, hi = math.Min(lo, b.FromMs), math.Max(hi, b.ToMs)
	}
	for _, m := range marks {
		lo, hi = math.Min(lo, m.ms), math.Max(hi, m.ms)
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 1000
	}
	var ax axis
	if log {
		l, h := niceFloor(math.Max(lo, 0.001)), niceCeil(hi)
		if h < l*10 {
			h = niceCeil(l * 10)
		}
		ax = axis{log: true, lo: l, hi: h, x0: x0, x1: x1}
		for _, v := range logTicks(l, h) {
			c.XTicks = append(c.XTicks, tick{f1(ax.x(v)), units.Millis(v)})
		}
	} else {
		h := niceCeil(hi * 1.08)
		if fixedHi > 0 {
			h = fixedHi
		}
		ax = axis{lo: 0, hi: h, x0: x0, x1: x1}
		for _, v := range linearTicks(h, 6) {
			c.XTicks = append(c.XTicks, tick{f1(ax.x(v)), units.Millis(v)})
		}
	}

	// Marker labels take as many rows above the plot as they need.
	var rows int
	c.Marks, rows = placeMarks(marks, ax)
	top := float64(8 + max(rows, 1)*labelRow)
	for i := range c.Marks {
		ly := top - 5 - float64(c.Marks[i].row)*labelRow
		c.Marks[i].LabelY, c.Marks[i].LineY0 = f1(ly), f1(ly+3)
	}
	y0, y1 := top, float64(height-marginBelow)
	c.Plot = rect{f1(x0), f1(y0), f1(x1), f1(y1)}

	maxCount := 0
	for _, b := range bs {
		maxCount = max(maxCount, b.Count)
	}
	ytop, yt := countTicks(maxCount)
	ypos := func(n float64) float64 { return y1 - n/ytop*(y1-y0) }
	for _, v := range yt {
		c.YTicks = append(c.YTicks, tick{f1(ypos(v)), strconv.Itoa(int(v))})
	}
	for _, b := range bs {
		bx0, bx1 := ax.x(b.FromMs), ax.x(b.ToMs)
		w := math.Max(bx1-bx0-1, 4) // a gap between bars; never thinner than 4
		y := ypos(float64(b.Count))
		c.Bars = append(c.Bars, bar{
			X: f1(bx0 + 0.5), Y: f1(y), W: f1(w), H: f1(y1 - y),
			Tip:    fmt.Sprintf("%s: %d", units.MillisRange(b.FromMs, b.ToMs), b.Count),
			FromMs: fms(b.FromMs), ToMs: fms(b.ToMs), Count: b.Count, Class: barClass,
			LabelX: f1(bx0 + 0.5 + w/2), LabelY: f1(y - 3),
		})
	}
	// Counts go above bars where they fit: never closer than a label's
	// width to the previous one, and only on sparse charts.
	last := math.Inf(-1)
	for i := range c.Bars {
		x, _ := strconv.ParseFloat(c.Bars[i].LabelX, 64)
		w := labelWidth(strconv.Itoa(c.Bars[i].Count))
		if len(c.Bars) <= 16 && x-w/2 > last+3 {
			c.Bars[i].ShowCount, last = true, x+w/2
		}
	}
	if len(bs) == 0 {
		c.Empty = "no data"
	}
	return c
}

// placeMarks positions marker labels in rows above the plot so that they
// never overlap: a label goes to the first row where it clears the
// previous label by its own width.
func placeMarks(ms []markIn, ax axis) ([]marker, int) {
	type placed struct {
		m markIn
		x float64
	}
	ps := make([]placed, 0, len(ms))
	for _, m := range ms {
		ps = append(ps, placed{m, ax.x(m.ms)})
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].x < ps[j].x })
	var out []marker
	rowEnd := []float64{}
	for _, p := range ps {
		w := labelWidth(p.m.label)
		anchor, lx0 := "middle", p.x-w/2
		if lx0 < ax.x0-marginLeft+2 {
			anchor, lx0 = "start", p.x-2
		}
		if lx0+w > ax.x1+marginRight-2 {
			anchor, lx0 = "end", p.x-w+2
		}
		row := 0
		for row < len(rowEnd) && rowEnd[row] > lx0-4 {
			row++
		}
		if row == len(rowEnd) {
			rowEnd = append(rowEnd, 0)
		}
		rowEnd[row] = lx0 + w
		out = append(out, marker{
			Kind: p.m.kind, Ms: fms(p.m.ms), X: f1(p.x), Label: p.m.label,
			Anchor: anchor, Dashed: p.m.dashed, row: row,
		})
	}
	return out, len(rowEnd)
}

// labelWidth bounds the width of a marker label (11px, bold) in a
// proportional font: in DejaVu Sans Bold, the default of many Linux
// browsers, "recommended 2s" measures 116.9 px in Chromium (8.3 px a
// character) and "p99 381ms" 74.7 px; estimates of 6.2 and then 7.4 px let
// such pairs run into each other.
func labelWidth(s string) float64 {
	return 8.6 * float64(len([]rune(s)))
}
