package check

import (
	"fmt"
	"sort"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/policy"
	"github.com/tailscope/tailscope/span"
)

// Severities.
const (
	SevError   = "error"
	SevWarning = "warning"
	SevInfo    = "info"
)

// Lint checks a policy against what the logs show. Findings come out in a
// stable order: by severity, then hop, then code.
func Lint(rep *analyze.Report, reqs []*span.Request, p *policy.Policy) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, h := range rep.Hops {
		seen[h.Hop] = true
	}
	for _, name := range p.HopNames() {
		if !seen[name] {
			out = append(out, Finding{Code: "unknown-hop", Severity: SevWarning, Hop: name,
				Message: fmt.Sprintf("%s:%d: hop %q is in the policy but not in the logs (hops seen: %d)", p.Path, p.Lines[name], name, len(rep.Hops))})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		ri, rj := sevRank(out[i].Severity), sevRank(out[j].Severity)
		if ri != rj {
			return ri < rj
		}
		if out[i].Hop != out[j].Hop {
			return out[i].Hop < out[j].Hop
		}
		return out[i].Code < out[j].Code
	})
	if out == nil {
		out = []Finding{}
	}
	return out
}

func sevRank(s string) int {
	switch s {
	case SevError:
		return 0
	case SevWarning:
		return 1
	}
	return 2
}
