package analyze

import (
	"fmt"
	"strings"

	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/span"
)

// Client/server gap: where a call has both the caller's span and the
// callee's, the time between them.
//
// A pair is a caller-side attempt (a call whose role is call: a CLIENT or
// PRODUCER span, or one by the trace's shape) with exactly one child call
// whose role is callee, made of one span in another service (the server
// span). The gap is the client span's duration less the server span's:
// time on the wire, in queues and connection pools, in the callee's
// framework before its span starts. A negative gap (the server span
// outlasting the client's: clock skew, or a callee that ran on after its
// caller gave up) counts as 0. Each caller-side hop with pairs gets
// Hop.Gap over its pairs; ServerHop is the callee hop it pairs with most.
//
// The gap makes the caller's tail when, over at least GapMinPairs pairs,
// the gap p99 is at least half the client p99 and at least GapMinMs, while
// the server p99 is at most half the client p99: the caller's slow calls
// are slow between caller and callee, not in the callee. The hop then gets
// a gap-tail warning (JSON; the human reports show it once, in the tail's
// section): a longer callee timeout or more callee capacity will not help.
// The absolute floor keeps out gaps no on-call engineer should spend time
// on: a real Online Boutique minute had gaps of 9–12 ms at p99 on hops
// whose whole p99 was about 20 ms, each reported twice. The failure
// evidence (Hop.Evidence) is about failures and does not repeat it.
const (
	GapMinPairs = 20
	GapMinMs    = 20.0
)

// Gap is the client/server gap of a caller-side hop.
type Gap struct {
	// ServerHop is the callee hop most of the pairs go to; ServerHops
	// counts the distinct callee hops.
	ServerHop  string `json:"server_hop"`
	ServerHops int    `json:"server_hops"`
	// Pairs is the number of client attempts paired with a server span.
	Pairs       int      `json:"pairs"`
	ClientP99Ms *float64 `json:"client_p99_ms"`
	ServerP99Ms *float64 `json:"server_p99_ms"`
	GapP50Ms    *float64 `json:"gap_p50_ms"`
	GapP99Ms    *float64 `json:"gap_p99_ms"`
	// MakesTail is set when the gap, not the callee, makes the caller's
	// tail (see above).
	MakesTail bool `json:"makes_tail"`
	// Examples are trace ids of the largest gaps, largest first.
	Examples []string `json:"examples"`
}

type gapAcc struct {
	client, server, gap []int64
	servers             map[string]int
	ex                  []example
}

// gaps fills Hop.Gap and the gap-tail warnings.
func gaps(rep *Report, reqs []*span.Request) {
	acc := map[string]*gapAcc{}
	for _, r := range reqs {
		EachCall(r.Calls, func(c *span.Call) {
			if c.Role != span.RoleCall {
				return
			}
			for _, a := range c.Attempts {
				srv := serverOf(a)
				if srv == nil {
					continue
				}
				g := acc[c.Hop]
				if g == nil {
					g = &gapAcc{servers: map[string]int{}}
					acc[c.Hop] = g
				}
				d := max(0, a.Span.Duration-srv.Duration)
				g.client = append(g.client, a.Span.Duration)
				g.server = append(g.server, srv.Duration)
				g.gap = append(g.gap, d)
				g.servers[srv.Hop]++
				g.ex = topExamples(g.ex, example{r.TraceID, float64(d)}, TailExamples)
			}
		})
	}
	for i := range rep.Hops {
		h := &rep.Hops[i]
		g := acc[h.Hop]
		if g == nil {
			continue
		}
		h.Gap = g.summary()
		if !h.Gap.MakesTail {
			continue
		}
		x := h.Gap
		d := func(p *float64) string { return units.Millis(*p) }
		eg := ""
		if len(x.Examples) > 0 {
			eg = "; e.g. trace " + strings.Join(x.Examples, ", ")
		}
		sentence := fmt.Sprintf("p99 %s at the caller against %s at the callee %s: the gap between them is %s at p50 and %s at p99 over %d calls; the time is spent between caller and callee (network, queueing, connection pool), so a longer callee timeout or more callee capacity will not help",
			d(x.ClientP99Ms), d(x.ServerP99Ms), x.ServerHop, d(x.GapP50Ms), d(x.GapP99Ms), x.Pairs)
		rep.Warnings = append(rep.Warnings, Warning{Code: "gap-tail", Hop: h.Hop, Message: sentence + eg})
	}
}

// serverOf is the server span an attempt pairs with, or nil.
func serverOf(a *span.Attempt) *span.Span {
	var srv *span.Span
	for _, cc := range a.Calls {
		if cc.Role != span.RoleCallee {
			continue
		}
		if srv != nil || len(cc.Attempts) != 1 {
			return nil // more than one: which is the server is not clear
		}
		srv = cc.Attempts[0].Span
	}
	if srv == nil || (srv.Service != "" && srv.Service == a.Span.Service) {
		return nil
	}
	return srv
}

func (g *gapAcc) summary() *Gap {
	quantile.SortInt64(g.client)
	quantile.SortInt64(g.server)
	quantile.SortInt64(g.gap)
	at := func(xs []int64, q float64) *float64 { return units.RoundPtr(units.MsOf(quantile.Int64(xs, q)), 3) }
	x := &Gap{Pairs: len(g.gap), ServerHops: len(g.servers), Examples: []string{},
		ClientP99Ms: at(g.client, 0.99), ServerP99Ms: at(g.server, 0.99),
		GapP50Ms: at(g.gap, 0.5), GapP99Ms: at(g.gap, 0.99)}
	best := -1
	for s, n := range g.servers {
		if n > best || (n == best && s < x.ServerHop) {
			x.ServerHop, best = s, n
		}
	}
	for _, e := range g.ex {
		x.Examples = append(x.Examples, e.trace)
	}
	c, s, gp := *x.ClientP99Ms, *x.ServerP99Ms, *x.GapP99Ms
	x.MakesTail = x.Pairs >= GapMinPairs && gp >= GapMinMs && gp >= c/2 && s <= c/2
	return x
}
