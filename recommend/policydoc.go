package recommend

import (
	"github.com/tailscope/tailscope/analyze"
	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/policy"
)

// DocOf converts a policy to its JSON form.
func DocOf(p *policy.Policy) *analyze.PolicyDoc {
	hp := func(h policy.Hop) analyze.HopPolicy {
		out := analyze.HopPolicy{TimeoutMs: units.Ms(int64(h.Timeout)), Retries: h.Retries, BackoffMs: units.Ms(int64(h.Backoff.Base)), BudgetAware: h.BudgetAware}
		if h.Backoff.Max != h.Backoff.Base || (h.Backoff.Jitter != "" && h.Backoff.Jitter != policy.JitterNone) {
			out.BackoffMaxMs, out.Jitter = units.Ms(int64(h.Backoff.Max)), h.Backoff.Jitter
		}
		if h.Hedge.Delay > 0 {
			out.Hedge = &analyze.HedgeDoc{DelayMs: units.Ms(int64(h.Hedge.Delay)), Max: h.Hedge.Max}
		}
		return out
	}
	d := &analyze.PolicyDoc{BudgetMs: units.Ms(int64(p.Budget)), Default: hp(p.Default), Hops: map[string]analyze.HopPolicy{}}
	for n, h := range p.Hops {
		d.Hops[n] = hp(h)
		if rb, ok := p.RetryBudgets[n]; ok {
			doc := d.Hops[n]
			doc.RetryBudget = budgetDoc(rb)
			d.Hops[n] = doc
		}
	}
	return d
}
