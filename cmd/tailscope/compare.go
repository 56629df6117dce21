// Analyze's tail flags (--sort, --compare, --compare-window): parsed, checked, and applied to the report.

package main

import (
	"fmt"
	"strings"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/pipeline"
)

// tailFlags are analyze's flags for where the tail comes from: the order
// of the hop table and the comparison with another window.
type tailFlags struct {
	sort          string
	compare       []string
	compareWindow string
}

func (t *tailFlags) register(fs interface {
	StringVar(*string, string, string, string)
	StringArrayVar(*[]string, string, []string, string)
}) {
	fs.StringVar(&t.sort, "sort", "rank", "order of the hop table: rank (worst first: the hops that explain the slow\nand the failed requests, then the others by name) or name")
	fs.StringArrayVar(&t.compare, "compare", nil, "BASELINE logs (file, directory or glob; repeatable) read with the same input\nflags: the report says what changed since, hop by hop, ranked by how much\neach hop's change moves the request tail")
	fs.StringVar(&t.compareWindow, "compare-window", "", "DURATION: compare the last DURATION of the logs with the DURATION before it\n(e.g. 10m); the report itself stays over all the logs")
}

func (t *tailFlags) check() error {
	if t.sort != "rank" && t.sort != "name" {
		return usagef("--sort %q: want rank or name", t.sort)
	}
	if len(t.compare) > 0 && t.compareWindow != "" {
		return usagef("--compare and --compare-window: give one of them")
	}
	if t.compareWindow != "" {
		d, err := parseDur(t.compareWindow)
		if err != nil || d <= 0 {
			return usagef("--compare-window %q: want a positive duration like 10m", t.compareWindow)
		}
	}
	return nil
}

// apply adds the comparison, if asked, and orders the hop table.
func (t *tailFlags) apply(e *env, rep *analyze.Report, l *pipeline.Logs, paths []string, in *inputFlags, opt analyze.Options) error {
	switch {
	case len(t.compare) > 0:
		lb, err := load(e, t.compare, in)
		if err != nil {
			return fmt.Errorf("--compare: %w", err)
		}
		base := lb.Report(opt)
		rep.Compare = analyze.Compare(base, rep, strings.Join(t.compare, ", "), strings.Join(paths, ", "))
	case t.compareWindow != "":
		d, _ := parseDur(t.compareWindow)
		c, ok := l.CompareWindows(d, t.compareWindow, opt)
		if !ok {
			return fmt.Errorf("--compare-window %s: the logs hold no request in the %s before their last %s (they cover less than twice the window)", t.compareWindow, t.compareWindow, t.compareWindow)
		}
		rep.Compare = c
	}
	rep.SortHops(t.sort)
	return nil
}
