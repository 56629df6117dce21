package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/policy"
)

// PolicyHeader is the comment at the top of a written policy file: the
// logs it came from, and a warning when some of its timeouts are canaries
// (observe-first hops), so that a reader of the file alone knows both.
func PolicyHeader(rep *analyze.Report) string {
	var b strings.Builder
	b.WriteString("# Recommended by tailscope from ")
	files := make([]string, 0, len(rep.Inputs))
	for _, in := range rep.Inputs {
		files = append(files, in.File)
	}
	fmt.Fprintf(&b, "%s (%s, %s).\n", inputsLine(files), units.Count(rep.Spans, "span", "spans"), units.Count(rep.Requests.Count, "request", "requests"))
	for _, h := range rep.Hops {
		if h.Recommendation.Action == analyze.ActionObserveFirst {
			b.WriteString("# Some hops are observe-first: their timeouts are canaries to learn the tail, not measurements.\n")
			break
		}
	}
	// What the policy risks beyond these logs travels with the file.
	if rp := rep.RecommendedPolicy; rp != nil {
		lines, _ := safetyLinesAdvice(rp.Safety, true)
		for _, l := range lines {
			b.WriteString("# " + VisibleLines(capFirst(l)) + "\n")
		}
	}
	return b.String()
}

// inputsLine names the logs a policy came from in one line a reader can
// take in: up to three files by name; more as their count, the folder they
// share and the first and last (a day of one-minute exports is 59 files,
// whose paths in full made the header's first line 5 KB long).
func inputsLine(files []string) string {
	if len(files) <= 3 {
		return strings.Join(files, ", ")
	}
	first, last := files[0], files[len(files)-1]
	dir := commonDir(files)
	if dir == "" {
		return fmt.Sprintf("%d files: %s … %s", len(files), first, last)
	}
	return fmt.Sprintf("%d files in %s: %s … %s", len(files), dir, first[len(dir):], last[len(dir):])
}

// commonDir is the longest folder prefix (ending in a slash) that every
// path shares, or "" when they share none.
func commonDir(paths []string) string {
	p := paths[0]
	for _, q := range paths[1:] {
		n := 0
		for n < len(p) && n < len(q) && p[n] == q[n] {
			n++
		}
		p = p[:n]
	}
	if i := strings.LastIndexAny(p, "/\\"); i >= 0 {
		return p[:i+1]
	}
	return ""
}

// PolicyWritten writes what recommend prints once the policy is in file:
// the hops it sets and its budget, then a line per hop with its action,
// timeout, retries and hedge, so that the terminal shows what the file
// holds without opening it. p is the policy recommended with rep.
func PolicyWritten(w io.Writer, file string, rep *analyze.Report, p *policy.Policy) error {
	hops := p.HopNames()
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "wrote %s: %s, budget %s\n", file, units.Count(len(hops), "hop", "hops"), units.Duration(p.Budget))
	action := make(map[string]string, len(hops))
	for _, h := range rep.Hops {
		if _, ok := action[h.Hop]; !ok {
			action[h.Hop] = h.Recommendation.Action
		}
	}
	width := 0
	for _, n := range hops {
		width = max(width, utf8.RuneCountInString(VisibleLines(n)))
	}
	for _, name := range hops {
		h := p.For(name)
		hedge := ""
		if h.Hedge.Delay > 0 {
			hedge = fmt.Sprintf("  hedge after %s (at most %d)", units.Duration(h.Hedge.Delay), h.Hedge.Max)
		}
		fmt.Fprintf(bw, "  %-*s %-13s %8s  retries %d%s\n", width, VisibleLines(name), action[name], units.Duration(h.Timeout), h.Retries, hedge)
	}
	if rp := rep.RecommendedPolicy; rp != nil {
		lines, _ := safetyLinesAdvice(rp.Safety, true)
		for _, l := range lines {
			fmt.Fprintf(bw, "  %s\n", VisibleLines(l))
		}
	}
	return bw.Flush()
}

// VisibleLines is Visible on each line of a message, and on each cell
// between its tabs, with the newlines and tabs themselves kept: for text
// that is laid out in lines (a message on stderr) and whose parts come
// from the input.
func VisibleLines(s string) string {
	if !strings.ContainsAny(s, "\n\t") {
		return Visible(s)
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		cells := strings.Split(l, "\t")
		for j, c := range cells {
			cells[j] = Visible(c)
		}
		lines[i] = strings.Join(cells, "\t")
	}
	return strings.Join(lines, "\n")
}
