package main

import (
	"fmt"
	"strings"
	"time"
)

// results is everything a run measured, for the summary.
type results struct {
	cases                                cases
	flatRounds, nestedRounds, hopsRounds int
	flat                                 []*group // sizes ascending, JSON lines before Parquet; the peak-RSS-growth run last
	nested                               []*group // OTLP, Tempo
	card                                 *cardResult
	hops                                 []*group // the hops case, hop counts ascending
}

// cpu is the CPU time of every timed run.
func (r *results) cpu() time.Duration {
	var t time.Duration
	for _, g := range append(append(append([]*group(nil), r.flat...), r.nested...), r.hops...) {
		for _, k := range g.order(0) {
			t += k.cpu()
		}
	}
	if r.card != nil {
		t += r.card.cpu()
	}
	return t
}

// The targets: tailscope's full analysis at least so many times as fast as
// DuckDB's quantile query on the same file, on flat files from
// targetMinSpans to targetMaxSpans; peak RSS at the largest flat size at
// most targetRSSGrowth times that at a tenth of it.
const (
	targetJSONL     = 1.3
	targetParquet   = 1.2
	targetOTLP      = 5.0
	targetRSSGrowth = 1.5
	targetMinSpans  = 1_000_000
	targetMaxSpans  = 10_000_000
)

// speedTarget is the ratio a group's pair must clear in every round, or
// 0 and why there is none.
func speedTarget(g *group) (float64, string) {
	switch g.format {
	case fmtJSONL, fmtParquet, fmtWide:
		if g.size < targetMinSpans || g.size > targetMaxSpans {
			return 0, "no target outside 1M–10M spans: reported"
		}
		if g.format == fmtJSONL {
			return targetJSONL, ""
		}
		return targetParquet, ""
	case fmtOTLP:
		return targetOTLP, ""
	}
	return 0, "no target set: reported"
}

// summarize is the results after the machine's lines: each case's table,
// every pair's ratio with its spread, and the performance targets.
func summarize(r *results) string {
	var b strings.Builder
	if len(r.flat) > 0 {
		b.WriteString(table("Flat files", r.flat, r.flatRounds))
	}
	if len(r.nested) > 0 {
		b.WriteString(table("Nested formats", r.nested, r.nestedRounds))
	}
	if r.card != nil {
		b.WriteString(r.card.String())
	}
	if len(r.hops) > 0 {
		b.WriteString(hopsTable(r.hops, r.hopsRounds))
	}
	if all := append(append([]*group(nil), r.flat...), r.nested...); len(all) > 0 {
		fmt.Fprintf(&b, "\nRatios (DuckDB wall time / tailscope wall time in the same round: the median over the rounds, with the lowest and the highest; above 1 means tailscope is faster):\n\n")
		for _, g := range all {
			b.WriteString(ratioLine(g))
		}
	}
	fmt.Fprintf(&b, "\nTargets (a ratio target is met only if the ratio of every round clears it):\n\n")
	b.WriteString(targetLines(r))
	return b.String()
}

// table is one case's contenders: per file, each run's wall time in
// round order, the medians, and the smallest and largest peak RSS.
func table(title string, gs []*group, rounds int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s: %d rounds; in each round tailscope and DuckDB back to back on each file, tailscope first in rounds 1, 3, … and last in rounds 2, 4, …; "+
		"wall time (process start to exit) of each round, median wall time, median CPU time (user + system), peak RSS smallest–largest\n\n", title, rounds)
	fmt.Fprintf(&b, "| file | spans | contender | median s | rounds (s) | CPU s | peak RSS MB |\n|---|---:|---|---:|---|---:|---:|\n")
	for _, g := range gs {
		for _, k := range g.order(0) {
			w, _ := k.medians()
			lo, hi := k.rssRange()
			var runs []string
			for _, m := range k.m {
				runs = append(runs, fmt.Sprintf("%.2f", m.wall.Seconds()))
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %.3f | %s | %.2f | %.0f–%.0f |\n", g.format, g.spans, k.name, w, strings.Join(runs, " "), k.medianCPU(), lo, hi)
		}
	}
	return b.String()
}

// ratioLine is a group's ratios, one per DuckDB query, and its peak RSS
// beside DuckDB's quantile query's; nothing for tailscope alone.
func ratioLine(g *group) string {
	var parts []string
	for i := range g.duck {
		if s, ok := ratioOf(&g.duck[i], &g.ts); ok {
			parts = append(parts, fmt.Sprintf("vs %s %s", g.duck[i].name, s))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	_, tsMax := g.ts.rssRange()
	duckMin, _ := g.duck[0].rssRange()
	return fmt.Sprintf("- %s: %s; peak RSS: tailscope at most %.0f MB, %s at least %.0f MB\n", g.label(), strings.Join(parts, ", "), tsMax, g.duck[0].name, duckMin)
}

// targetLines is the targets, in order: the flat files' ratios at every
// size, OTLP's, tailscope's peak RSS against DuckDB's, its growth with
// the input, the cost of hop cardinality, Tempo's ratio (reported), and
// the hops case's.
func targetLines(r *results) string {
	var b strings.Builder
	if r.cases.flat {
		for _, g := range r.flat {
			b.WriteString(speedLine(g))
		}
	} else {
		fmt.Fprintf(&b, "- JSONL ≥ %.1f× and Parquet ≥ %.1f× DuckDB's quantile query: not run (-cases)\n", targetJSONL, targetParquet)
	}
	if g := find(r.nested, fmtOTLP); g != nil {
		b.WriteString(speedLine(g))
	} else {
		fmt.Fprintf(&b, "- %s: not run (-cases)\n", fmtOTLP)
	}
	b.WriteString(rssLine(append(append([]*group(nil), r.flat...), r.nested...)))
	b.WriteString(growthLine(r.flat))
	if r.card != nil {
		b.WriteString(r.card.target())
	} else {
		fmt.Fprintf(&b, "- Cost linear in hop cardinality: not run (-cases, -cardinality)\n")
	}
	if g := find(r.nested, fmtTempo); g != nil {
		b.WriteString(speedLine(g))
	}
	b.WriteString(hopsTargetLine(r.hops, r.cases.hops))
	return b.String()
}

func find(gs []*group, format string) *group {
	for _, g := range gs {
		if g.format == format {
			return g
		}
	}
	return nil
}

// speedLine is a pair's ratio against its target, if it has one.
func speedLine(g *group) string {
	if len(g.duck) == 0 {
		return ""
	}
	head := fmt.Sprintf("- %s: tailscope full analysis vs %s", g.label(), g.duck[0].name)
	s, ok := ratioOf(&g.duck[0], &g.ts)
	if !ok {
		return head + ": not run\n"
	}
	want, why := speedTarget(g)
	if want == 0 {
		return fmt.Sprintf("%s: %s (%s)\n", head, s, why)
	}
	return fmt.Sprintf("%s: %s (target ≥ %.1f× in every round: %s)\n", head, s, want, verdict(s, want, g.minRounds))
}

// rssLine checks tailscope's peak RSS against DuckDB's quantile query's
// at every size and format: tailscope's largest peak over the rounds
// against DuckDB's smallest, so that it holds in every round. It names
// the pairs that miss, or the closest one.
func rssLine(gs []*group) string {
	const what = "- Peak RSS, tailscope ≤ DuckDB's quantile query at every size and format (tailscope's largest peak against DuckDB's smallest)"
	var miss []string
	var closest string
	closeness, few := 0.0, false
	for _, g := range gs {
		if len(g.duck) == 0 || len(g.ts.m) == 0 || len(g.duck[0].m) == 0 {
			continue
		}
		_, ts := g.ts.rssRange()
		duck, _ := g.duck[0].rssRange()
		desc := fmt.Sprintf("%s: %.0f MB against %.0f MB", g.label(), ts, duck)
		if ts > duck {
			miss = append(miss, desc)
		}
		if ts/duck > closeness {
			closeness, closest = ts/duck, desc
		}
		few = few || min(len(g.ts.m), len(g.duck[0].m)) < g.minRounds
	}
	switch {
	case closest == "":
		return what + ": not run\n"
	case few:
		return fmt.Sprintf("%s: closest %s (too few rounds for a verdict)\n", what, closest)
	case len(miss) > 0:
		return fmt.Sprintf("%s: not met (%s)\n", what, strings.Join(miss, "; "))
	}
	return fmt.Sprintf("%s: met (closest %s)\n", what, closest)
}

// growthLine checks that peak RSS does not grow with the input: tailscope
// on JSON lines at the largest flat size against a tenth of it, the
// largest peak over the rounds at the one against the smallest at the
// other.
func growthLine(flat []*group) string {
	var big, small *group
	for _, g := range flat {
		if g.format == fmtJSONL && (big == nil || g.size > big.size) {
			big = g
		}
	}
	for _, g := range flat {
		if big != nil && g.format == fmtJSONL && g.size == big.size/10 {
			small = g
		}
	}
	if big == nil || small == nil || len(big.ts.m) == 0 || len(small.ts.m) == 0 {
		return "- Peak RSS at the largest flat size / at a tenth of it: not run (the flat case, or -ratio=false with -sizes lacking a tenth of its largest)\n"
	}
	_, hi := big.ts.rssRange()
	lo, _ := small.ts.rssRange()
	v := "met"
	switch {
	case min(len(big.ts.m), len(small.ts.m)) < big.minRounds:
		v = "too few rounds for a verdict"
	case hi/lo > targetRSSGrowth:
		v = "not met"
	}
	return fmt.Sprintf("- Peak RSS at %d spans / at %d spans (JSONL, tailscope's largest peak over its smallest): %.0f / %.0f MB = %.2f× (target ≤ %.1f: %s)\n",
		big.size, small.size, hi, lo, hi/lo, targetRSSGrowth, v)
}
