package check

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tailscope/tailscope/policy"
)

// TestHedgeLints: on the seed sample recorded under A (every hop
// ran-to-timeout), a hedge is an error on each hop it is set on; a hedge
// delay not below the timeout is a warning; a policy without hedges has
// neither.
func TestHedgeLints(t *testing.T) {
	pa := loadPolicy(t, filepath.Join(seedDir, "A.yaml"))
	l := analyse(readSpans(t, filepath.Join(seedDir, "recorded-under-A.jsonl")), pa)
	none(t, Lint(l.rep, l.reqs, pa), CodeHedgeOnPersistent)
	none(t, Lint(l.rep, l.reqs, pa), CodeHedgeNotBelowTimeout)

	p := parsePolicy(t, `budget: 30s
default: {timeout: 3s, retries: 0}
hops:
  forward: {timeout: 3s, hedge: {delay: 800ms}}
  retrieve: {timeout: 3s, hedge: {delay: 3s, max: 2}}
`)
	fs := Lint(l.rep, l.reqs, p)
	f := one(t, fs, CodeHedgeOnPersistent, "forward", SevError)
	contains(t, f, "hops.forward hedges after 800ms on a ran-to-timeout hop", "remove the hedge")
	one(t, fs, CodeHedgeOnPersistent, "retrieve", SevError)
	w := one(t, fs, CodeHedgeNotBelowTimeout, "retrieve", SevWarning)
	contains(t, w, "3s is not below its 3s timeout", "never fires")
	if len(findings(fs, CodeHedgeOnPersistent, "generate")) != 0 {
		t.Errorf("generate has no hedge:\n%s", dump(fs))
	}
	if p.For("forward").Hedge != (policy.Hedge{Delay: 800 * time.Millisecond, Max: 1}) {
		t.Errorf("forward hedge %+v", p.For("forward").Hedge)
	}
}
