package analyze

import "github.com/tailscope/tailscope/span"

// CutBy reports whether attempt s was cut by a timeout, by the same rule
// the analysis uses for its censoring (see cutBy), given the hop's timeout
// in force as Hop.TimeoutMs (nil when unknown). Package check counts time
// to success with it, so its numbers agree with the report's.
func CutBy(s *span.Span, timeoutMs *float64) bool { return cutBy(s, nsOf(timeoutMs)) }
