package analyze

import "github.com/tailscope/tailscope/option"

// HopCount is how many distinct hops a holds.
func (a *Accum) HopCount() int { return len(a.hops) }

// OverHopLimit is the HopLimitError of an Accum built from summaries that
// holds more than max hops (DefaultMaxHops when 0), or nil: a merge of
// summaries is held to the same --max-hops as the logs read directly
// (1,000 summaries of 1M hops between them took 3.2 GB where the logs
// themselves were refused in a second). The error names the settings by
// names.
func (a *Accum) OverHopLimit(max int, names option.Names) error {
	if max <= 0 {
		max = DefaultMaxHops
	}
	if len(a.hops) <= max {
		return nil
	}
	e := &HopLimitError{Limit: max, Names: names}
	if u := unboundedHops(a.seen()); u != nil {
		e.Examples, e.HopBy = u.Examples, u.HopBy
	}
	return e
}
