package check

import (
	"fmt"

	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/policy"
)

// Lint codes of hedges: a hedge that cannot help, because the hop is slow
// every time or the hedge would fire only after the attempt is cut.
const (
	// CodeHedgeOnPersistent: a hedge on a ran-to-timeout hop waits on the
	// same wall as the attempt it hedges, and adds its load to a hop that
	// is already slow.
	CodeHedgeOnPersistent = "hedge-on-persistent"
	// CodeHedgeNotBelowTimeout: a hedge delay at or above the hop's
	// per-attempt timeout never fires before the attempt is cut.
	CodeHedgeNotBelowTimeout = "hedge-not-below-timeout"
)

// hedgeRules lints a hop's hedge against its timeout and its failure
// class.
func (l *linter) hedgeRules(name string, hp policy.Hop, src string, h *analyze.Hop) {
	if hp.Hedge.Delay <= 0 {
		return
	}
	if hp.Timeout > 0 && hp.Hedge.Delay >= hp.Timeout {
		l.add(CodeHedgeNotBelowTimeout, SevWarning, name,
			"%s hedge delay %s is not below its %s timeout: the attempt is cut before the hedge is due, so the hedge never fires (a retry follows instead)",
			src, units.Duration(hp.Hedge.Delay), units.Duration(hp.Timeout))
	}
	if h == nil || h.FailureClass != analyze.ClassRanToTimeout {
		return
	}
	at := "the timeout"
	if h.TimeoutMs != nil {
		at = units.Millis(*h.TimeoutMs)
	}
	l.add(CodeHedgeOnPersistent, SevError, name,
		"%s hedges after %s on a ran-to-timeout hop (%d of %d attempts failed, %d of them cut at %s): its slowness persists, so %s waits on the same wall and adds %s to a hop that is already slow; remove the hedge",
		src, units.Duration(hp.Hedge.Delay), h.FailedAttempts, h.Attempts, h.TimeoutAttempts, at,
		units.Plural(hp.Hedge.Max, "the hedge", "each hedge"), fmt.Sprintf("up to %d %s per call", hp.Hedge.Max, units.Plural(hp.Hedge.Max, "attempt", "attempts")))
}
