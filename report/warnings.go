package report

import (
	"fmt"
	"strings"

	"github.com/tailscope/tailscope/analyze"
)

// The text, Markdown and HTML reports list the warnings as numbered
// footnotes. A caveat that many hops share (on a file with 55 hops, 27 to
// 86 of them can have too few attempts for a p99) is one footnote that
// names the hops, not one per hop; the JSON report keeps every warning.

// groupedCodes are the per-hop warnings that are shown as one line when
// more than one hop has them, with the sentence that line starts with.
var groupedCodes = map[string]func(n int) string{
	"too-few-samples": func(n int) string {
		return fmt.Sprintf("%d hops have fewer than %d attempts (p99 rests on the largest values)", n, analyze.MinSamplesP99)
	},
}

// shownInTail are the warnings the tail's section states with their
// numbers ("between caller and callee"): listed again as footnotes they
// said the same thing twice.
var shownInTail = map[string]bool{"gap-tail": true}

// groupListMax is how many hop names a grouped line spells out; the rest
// are counted ("… and 24 more") and carry the footnote mark in the table.
const groupListMax = 5

// note is a warning as the text, Markdown and HTML reports show it.
type note struct {
	Code, Hop, Message string
	// Hops are the hops a grouped line stands for (Hop is then "").
	Hops []string
}

// notes groups the warnings for display, in order: a grouped line takes
// the place of the first warning it stands for.
func notes(ws []analyze.Warning) []note {
	hops := map[string][]string{}
	for _, w := range ws {
		if groupedCodes[w.Code] != nil && w.Hop != "" {
			hops[w.Code] = append(hops[w.Code], w.Hop)
		}
	}
	out := make([]note, 0, len(ws))
	done := map[string]bool{}
	for _, w := range ws {
		if shownInTail[w.Code] {
			continue
		}
		hs := hops[w.Code]
		if w.Hop == "" || len(hs) < 2 {
			out = append(out, note{Code: w.Code, Hop: w.Hop, Message: w.Message})
			continue
		}
		if done[w.Code] {
			continue
		}
		done[w.Code] = true
		out = append(out, note{Code: w.Code, Hops: hs, Message: groupedCodes[w.Code](len(hs)) + ": " + nameList(hs, groupListMax)})
	}
	return out
}

// nameList is "a, b, c" or "a, b, c, … and 24 more" past max names.
func nameList(names []string, max int) string {
	if len(names) <= max+1 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:max], ", ") + fmt.Sprintf(", … and %d more", len(names)-max)
}
