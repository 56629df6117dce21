package report

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/units"
)

// When the hop names look unbounded (analyze's unbounded-hops warning:
// names that differ only in ids), the text, Markdown and HTML reports show
// at most MaxShownHops hops — those that explain the tail first
// (the ranking), then the most attempted — and say how many are not shown,
// instead of a table as long as the logs. Their warnings go with them,
// counted in one line. JSON keeps every hop: it is the contract, and a
// script that looks up its hop must find it.

// MaxShownHops bounds the rows of the per-hop tables that text, Markdown
// and HTML print when the hop names look unbounded: enough for the hops
// that explain the tail and the most attempted, few enough to read. The
// unbounded-hops warning, written by analyze, states the number.
const MaxShownHops = 50

// boundedHops returns rep itself when its hops are to be shown in full,
// otherwise a shallow copy holding the shown hops (in report order) and
// the warnings that concern them, and the number of hops left out.
func boundedHops(rep *analyze.Report) (*analyze.Report, int) {
	if rep.UnboundedHops() == nil || len(rep.Hops) <= MaxShownHops {
		return rep, 0
	}
	ranked := make(map[string]bool, len(rep.TailRanking))
	for _, e := range rep.TailRanking {
		ranked[e.Hop] = true
	}
	idx := make([]int, len(rep.Hops))
	for i := range idx {
		idx[i] = i
	}
	// Ranked hops first, then by attempts, then in report order: the sort
	// is stable and n log n.
	sort.SliceStable(idx, func(a, b int) bool {
		ha, hb := &rep.Hops[idx[a]], &rep.Hops[idx[b]]
		if ra, rb := ranked[ha.Hop], ranked[hb.Hop]; ra != rb {
			return ra
		}
		return ha.Attempts > hb.Attempts
	})
	idx = idx[:MaxShownHops]
	slices.Sort(idx)
	out := *rep
	out.Hops = make([]analyze.Hop, len(idx))
	shown := make(map[string]bool, len(idx))
	for i, j := range idx {
		out.Hops[i] = rep.Hops[j]
		shown[rep.Hops[j].Hop] = true
	}
	hidden := len(rep.Hops) - len(idx)
	out.Warnings = make([]analyze.Warning, 0, len(idx))
	codes := map[string]int{}
	for _, w := range rep.Warnings {
		if w.Hop == "" || shown[w.Hop] {
			out.Warnings = append(out.Warnings, w)
		} else {
			codes[w.Code]++
		}
	}
	if len(codes) > 0 {
		var parts []string
		for _, c := range slices.Sorted(maps.Keys(codes)) {
			parts = append(parts, fmt.Sprintf("%d %s", codes[c], c))
		}
		out.Warnings = append(out.Warnings, analyze.Warning{Code: analyze.WarnUnboundedHops,
			Message: fmt.Sprintf("the %s not shown have warnings of their own (%s): the JSON report lists them", units.Count(hidden, "hop", "hops"), strings.Join(parts, ", "))})
	}
	return &out, hidden
}

// notShownLine is the line under a bounded hop table.
func notShownLine(shown, hidden int) string {
	return fmt.Sprintf("%s of %d shown (the tail's hops, then the most attempted); %s not shown: the hop names look unbounded (see the %s warning); the JSON report has every hop",
		units.Count(shown, "hop", "hops"), shown+hidden, units.Count(hidden, "more hop is", "more hops are"), analyze.WarnUnboundedHops)
}
