package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The hops case: tailscope analyze against DuckDB's per-hop quantile
// query on flat JSON lines of -hops-n spans (1M) over each of -hops-counts
// distinct hops (1,000 and 10,000), in alternating rounds as the flat
// case runs them. The hops carry ordinary names (a service and an
// operation, "orders-3.List"), not ids: what a large estate's logs look
// like, where every hop is a real one and each has too few successes to
// certify its share of the request target by an order statistic, so
// that most hops' timeouts come from a fitted tail. The target: analyze
// no slower than the quantile query at 1,000 hops; 10,000 is measured.

// hopsTargetHops is the hop count the target is set at; the other
// counts of -hops-counts are measured without one.
const hopsTargetHops = 1000

// hopsTarget is the ratio (DuckDB's wall time over tailscope's) every
// round at hopsTargetHops must reach: no slower.
const hopsTarget = 1.0

// hopServices and hopOps name the generated hops: hop h is operation
// h%len(hopOps) of service h/len(hopOps), the service named after a word
// of hopServices, with a number once the words run out ("orders-3.List").
var (
	hopServices = []string{"accounts", "billing", "cart", "catalog", "checkout", "config", "email", "geo",
		"inventory", "ledger", "media", "notify", "orders", "payments", "pricing", "profile",
		"quotes", "ratings", "recs", "search", "session", "shipping", "tax", "users"}
	hopOps = []string{"Get", "List", "Create", "Update", "Delete", "Search", "Validate", "Export"}
)

// hopFamily is the shape of a generated hop's latency.
type hopFamily int

const (
	famLognormal hopFamily = iota // one lognormal body
	famBimodal                    // a fast mode and a slow one (a cache miss, a cold path)
	famPareto                     // a floor plus a Pareto tail (queueing): the costliest to fit
)

// genHop is one hop of the hops case's logs and how its attempts are drawn.
type genHop struct {
	name, service string
	family        hopFamily
	median        float64 // ms: the body's median (the fast mode's, the Pareto part's scale × 2)
	sigma         float64 // σ of the lognormal body or modes
	slowShare     float64 // bimodal: weight of the slow mode
	slowX         float64 // bimodal: the slow mode's median over the fast one's
	alpha         float64 // Pareto: tail index
	transient     float64 // share of attempts that fail fast with 503
	overload      float64 // share of calls whose every attempt hangs 8–11 s (cut at the timeout in force)
}

// hopName is the name of generated hop h and its service.
func hopName(h int) (name, service string) {
	s := h / len(hopOps)
	service = hopServices[s%len(hopServices)]
	if k := s / len(hopServices); k > 0 {
		service += "-" + strconv.Itoa(k)
	}
	return service + "." + hopOps[h%len(hopOps)], service
}

// genHops draws the hops: a third of each family, medians log-uniform
// (2–200 ms for lognormal bodies, 2–100 ms for the other two, so that a
// hop's own body seldom reaches the 3 s timeout), a quarter of the hops
// with 0.5–3% transient 503s, one in fifty with 1–3% of calls hanging
// past the timeout on every attempt (an overloaded dependency: its hop is
// censored, and the requests that make such a call fail after its
// retries).
func genHops(r *rand.Rand, hops int) []genHop {
	hs := make([]genHop, hops)
	logUniform := func(lo, hi float64) float64 { return lo * math.Exp(math.Log(hi/lo)*r.Float64()) }
	for i := range hs {
		h := &hs[i]
		h.name, h.service = hopName(i)
		h.family = hopFamily(i % 3)
		switch h.family {
		case famLognormal:
			h.median, h.sigma = logUniform(2, 200), 0.3+0.4*r.Float64()
		case famBimodal:
			h.median, h.sigma = logUniform(2, 100), 0.35
			h.slowShare, h.slowX = 0.03+0.09*r.Float64(), 5+5*r.Float64()
		case famPareto:
			h.median, h.alpha = logUniform(2, 100), 2.2+r.Float64()
		}
		if i%4 == 1 {
			h.transient = 0.005 + 0.025*r.Float64()
		}
		if i%50 == 0 {
			h.overload = 0.01 + 0.02*r.Float64()
		}
	}
	return hs
}

// latency draws one attempt's latency (ns, µs resolution) from h's body.
func (h *genHop) latency(r *rand.Rand) int64 {
	var ms float64
	switch h.family {
	case famLognormal:
		ms = h.median * math.Exp(h.sigma*r.NormFloat64())
	case famBimodal:
		m := h.median
		if r.Float64() < h.slowShare {
			m *= h.slowX
		}
		ms = m * math.Exp(h.sigma*r.NormFloat64())
	case famPareto:
		// Half the median as a floor, half as the Pareto scale.
		ms = h.median/2 + h.median/2*math.Pow(1-r.Float64(), -1/h.alpha)
	}
	return int64(math.Round(ms*1000)) * 1000
}

// generateHops produces about n spans over hops distinct hops (a little
// more, to finish the last trace): each request is a gateway root
// calling 6–10 distinct hops drawn uniformly, one after the other, each
// call retried up to twice after a transient 503 or an attempt cut at the
// 3 s timeout in force, the request failing when a call's last attempt
// does (the chain of generate, spread over many hops). Seeded: the same n
// and hops give the same spans.
func generateHops(n, hops int, emit func(*genSpan, string) error) (int, error) {
	r := rand.New(rand.NewPCG(28, uint64(n)<<20|uint64(hops)))
	hs := genHops(r, hops)
	t0 := int64(1_767_225_600_000_000_000)
	count := 0
	var idSeq uint64 = 1
	nextID := func() uint64 { idSeq++; return idSeq*0x9E3779B97F4A7C15 | 1 }
	var kids []genSpan
	var picked []int
	for tr := 0; count < n; tr++ {
		trace := [2]uint64{r.Uint64(), r.Uint64()}
		start := t0 + int64(tr)*2_000_000 // 500 requests/s
		root := nextID()
		calls := min(6+r.IntN(5), hops)
		picked = picked[:0]
		for len(picked) < calls {
			if h := r.IntN(hops); !slices.Contains(picked, h) {
				picked = append(picked, h)
			}
		}
		at := start + 1_000_000
		failed := false
		kids = kids[:0]
		for _, hi := range picked {
			if failed {
				break
			}
			h := &hs[hi]
			// An overloaded dependency holds every attempt of the call.
			hang := h.overload > 0 && r.Float64() < h.overload
			for attempt := 1; ; attempt++ {
				s := genSpan{trace: trace, id: nextID(), parent: root, hop: h.name, service: h.service, kind: "client",
					start: at, attempt: attempt, timeoutInForceNs: hopTimeoutNs, code: 200}
				lat := h.latency(r)
				if hang {
					lat = int64(8000+r.IntN(3000)) * 1_000_000
				}
				switch {
				case lat >= hopTimeoutNs:
					s.durNs = hopTimeoutNs + int64(r.IntN(400))*1000
					s.failed, s.timeout, s.code = true, true, 504
				case h.transient > 0 && r.Float64() < h.transient:
					s.durNs = int64(2+r.IntN(40)) * 1_000_000
					s.failed, s.code = true, 503
				default:
					s.durNs = lat
				}
				kids = append(kids, s)
				at += s.durNs
				if !s.failed {
					break
				}
				if attempt > retries {
					failed = true
					break
				}
			}
			at += 200_000
		}
		rs := genSpan{trace: trace, id: root, hop: "gateway", service: "gateway", kind: "server", start: start,
			durNs: at - start + 500_000, failed: failed, code: 200}
		if failed {
			rs.code = 504
		}
		if err := emit(&rs, ""); err != nil {
			return count, err
		}
		count++
		for i := range kids {
			if err := emit(&kids[i], ""); err != nil {
				return count, err
			}
			count++
		}
	}
	return count, nil
}

// writeHopsJSONL writes generateHops's spans as flat JSON lines, the
// fields of the flat case's files.
func writeHopsJSONL(path string, n, hops int) (int, error) {
	return writeFlatJSONL(path, func(emit func(*genSpan, string) error) (int, error) {
		return generateHops(n, hops, emit)
	})
}

// hopsCase is the case's flags.
type hopsCase struct {
	on, only bool
	n        int
	counts   string
	runs     int
	hops     []int // counts, parsed
}

func registerHops(fs *flag.FlagSet) *hopsCase {
	k := &hopsCase{}
	fs.BoolVar(&k.on, "hops-case", true, "also time tailscope against DuckDB's quantile query on -hops-n spans over each of -hops-counts ordinary hop names")
	fs.BoolVar(&k.only, "hops-only", false, "measure only the hops case")
	fs.IntVar(&k.n, "hops-n", 1_000_000, "spans of the hops case")
	fs.StringVar(&k.counts, "hops-counts", "1000,10000", "distinct hop counts of the hops case, comma-separated (the target is set at 1000)")
	fs.IntVar(&k.runs, "hops-runs", minFlatRounds, fmt.Sprintf("rounds of the hops case (fewer than %d give no verdict)", minFlatRounds))
	return k
}

// parse checks the flags and reads -hops-counts (ascending, no repeats).
func (k *hopsCase) parse() error {
	k.hops = nil
	for _, f := range strings.Split(k.counts, ",") {
		h, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || h < 1 {
			return fmt.Errorf("-hops-counts %q: want counts like 1000,10000", k.counts)
		}
		if !slices.Contains(k.hops, h) {
			k.hops = append(k.hops, h)
		}
	}
	slices.Sort(k.hops)
	if k.n < 1000 || k.runs < 1 {
		return fmt.Errorf("want -hops-n ≥ 1000 and -hops-runs ≥ 1")
	}
	return nil
}

// groups generates the case's files (cached in dir, hops-H.jsonl) and
// returns a group per hop count: tailscope analyze and, with duck,
// DuckDB's per-hop quantile query (quantileSQL: p50, p90, p95, p99 and
// p99.9 by quantile_cont, and the max, the per-hop latency tailscope
// reports) on the same file.
func (k *hopsCase) groups(dir string, t tools, duck bool, logf func(string, ...any)) ([]*group, error) {
	var gs []*group
	for _, h := range k.hops {
		path := filepath.Join(dir, fmt.Sprintf("hops-%d.jsonl", h))
		n, err := cachedGen(path, k.n, fmt.Sprintf("hops:%d", h))
		if err != nil {
			return nil, err
		}
		logf("hops: %d spans over %d hops in %s (%s)", n, h, path, fileSize(path))
		g := &group{format: fmtJSONL, size: k.n, spans: n, hops: h, minRounds: minFlatRounds, ts: t.analyze(path)}
		if duck {
			q, err := t.query(dqName, fmt.Sprintf("quantile-hops-%d", h),
				quantileSQL(fmt.Sprintf("read_ndjson('%s', columns=%s)", path, jsonColumns), "duration_ms"), path)
			if err != nil {
				return nil, err
			}
			g.duck = append(g.duck, q)
		}
		gs = append(gs, g)
	}
	return gs, nil
}

// hopsTable is the case's section of the summary: per hop count, each
// contender's rounds, medians of wall and CPU time and peak RSS; then per
// hop count DuckDB's over tailscope's, round by round.
func hopsTable(gs []*group, rounds int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nHops: flat JSON lines over many ordinary hop names (a third lognormal, a third bimodal, a third Pareto-tailed); %d rounds, "+
		"tailscope and DuckDB back to back on each file, tailscope first in rounds 1, 3, … and last in rounds 2, 4, …\n\n", rounds)
	fmt.Fprintf(&b, "| distinct hops | spans | contender | median s | rounds (s) | CPU s | peak RSS MB |\n|---:|---:|---|---:|---|---:|---:|\n")
	for _, g := range gs {
		for _, k := range g.order(0) {
			w, _ := k.medians()
			lo, hi := k.rssRange()
			var runs []string
			for _, m := range k.m {
				runs = append(runs, fmt.Sprintf("%.2f", m.wall.Seconds()))
			}
			fmt.Fprintf(&b, "| %d | %d | %s | %.3f | %s | %.2f | %.0f–%.0f |\n", g.hops, g.spans, k.name, w, strings.Join(runs, " "), k.medianCPU(), lo, hi)
		}
	}
	fmt.Fprintf(&b, "\nDuckDB / tailscope, round by round (median, lowest–highest; above 1 means tailscope is faster):\n\n")
	for _, g := range gs {
		if len(g.duck) == 0 {
			fmt.Fprintf(&b, "- %d hops: DuckDB not run\n", g.hops)
			continue
		}
		d := &g.duck[0]
		wall, ok := ratioOf(d, &g.ts)
		if !ok {
			fmt.Fprintf(&b, "- %d hops: not run\n", g.hops)
			continue
		}
		cpu, _ := ratioBy(d, &g.ts, func(m measurement) float64 { return m.cpu.Seconds() })
		rss, _ := ratioBy(d, &g.ts, func(m measurement) float64 { return m.rssMB })
		_, tsRSS := g.ts.rssRange()
		duckRSS, _ := d.rssRange()
		fmt.Fprintf(&b, "- %d hops: wall %s, CPU %s, peak RSS %s (tailscope at most %.0f MB, DuckDB at least %.0f MB)\n",
			g.hops, wall, cpu, rss, tsRSS, duckRSS)
	}
	return b.String()
}

// hopsTargetLine is the case's target: analyze no slower than DuckDB's
// quantile query at hopsTargetHops, every round's wall-time ratio at
// least hopsTarget (PASS or FAIL), the other hop counts measured.
func hopsTargetLine(gs []*group, ran bool) string {
	var others []string
	for _, g := range gs {
		if g.hops != hopsTargetHops {
			others = append(others, fmt.Sprintf("%d", g.hops))
		}
	}
	head := fmt.Sprintf("- Analyze no slower than DuckDB at %d hops", hopsTargetHops)
	if len(others) > 0 {
		head += fmt.Sprintf(" (and %s measured)", strings.Join(others, ", "))
	}
	if !ran {
		return head + ": not run (-cases, -hops-case)\n"
	}
	var parts []string
	found := false
	for _, g := range gs {
		s, ok := spread{}, false
		if len(g.duck) > 0 {
			s, ok = ratioOf(&g.duck[0], &g.ts)
		}
		if !ok {
			parts = append(parts, fmt.Sprintf("%d hops: DuckDB not run", g.hops))
			if g.hops == hopsTargetHops {
				found = true
			}
			continue
		}
		cpu, _ := ratioBy(&g.duck[0], &g.ts, func(m measurement) float64 { return m.cpu.Seconds() })
		p := fmt.Sprintf("%d hops, %d spans: DuckDB/tailscope wall %s, CPU %.2f×", g.hops, g.size, s, cpu.median)
		if g.hops == hopsTargetHops {
			found = true
			p += fmt.Sprintf(" (target ≥ %.1f× in every round: %s)", hopsTarget, passFail(s, hopsTarget, g.minRounds))
		} else {
			p += " (measured, no target)"
		}
		parts = append(parts, p)
	}
	if !found {
		parts = append(parts, fmt.Sprintf("no verdict: -hops-counts lacks %d", hopsTargetHops))
	}
	return head + ": " + strings.Join(parts, "; ") + "\n"
}

// passFail is verdict's PASS or FAIL: PASS only if every round's ratio
// clears want, no verdict from fewer than minRounds rounds.
func passFail(s spread, want float64, minRounds int) string {
	switch {
	case s.rounds < minRounds:
		return fmt.Sprintf("no verdict, too few rounds (%d, want at least %d)", s.rounds, minRounds)
	case s.lo >= want:
		return "PASS"
	}
	return fmt.Sprintf("FAIL (median %.2f×, lowest %.2f×: %.2f× short)", s.median, s.lo, want-s.lo)
}
