package main

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// idRoute is one route of the cardinality logs: its span names carry an
// id of some shape in place of the route's {id}, the way instrumentation
// that names spans by URL path (instead of by route template) writes them.
type idRoute struct {
	method, prefix, suffix string
	service                string
	id                     func(r *rand.Rand, k uint64) string
	median                 float64 // ms
}

// The id shapes met in real logs: decimal ids, UUIDs, hex object ids,
// opaque base62 tokens, and an id in the middle of a path.
var idRoutes = []idRoute{
	{"GET", "/users/", "", "users", func(_ *rand.Rand, k uint64) string { return strconv.FormatUint(10000+k, 10) }, 15},
	{"GET", "/orders/", "", "orders", uuidOf, 30},
	{"GET", "/blobs/", "/meta", "blobs", func(_ *rand.Rand, k uint64) string { return hexOf(k*0x9E3779B97F4A7C15, 24) }, 8},
	{"POST", "/sessions/", "/refresh", "auth", tokenOf, 12},
}

func uuidOf(_ *rand.Rand, k uint64) string {
	h := hexOf(k*0x9E3779B97F4A7C15, 16) + hexOf(k*0xBF58476D1CE4E5B9+7, 16)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:32]
}

func hexOf(x uint64, n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		x = x*6364136223846793005 + 1442695040888963407
		b[i] = digits[x>>60]
	}
	return string(b)
}

func tokenOf(_ *rand.Rand, k uint64) string {
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 22)
	x := k*0x94D049BB133111EB + 3
	for i := range b {
		x = x*6364136223846793005 + 1442695040888963407
		b[i] = alnum[(x>>32)%62]
	}
	return string(b)
}

// cardinalityName is the span name of route r with id number k.
func cardinalityName(r *rand.Rand, rt *idRoute, k uint64) string {
	return rt.method + " " + rt.prefix + rt.id(r, k) + rt.suffix
}

// generateCardinality produces about n spans whose hops number about
// hops: each request is a gateway root, an auth call (both bounded), and
// four calls to the id-laden routes, each id drawn uniformly from
// hops/len(idRoutes) per route. The same n and hops give the same spans,
// so two sizes differ only in how many distinct names the ids make.
func generateCardinality(n, hops int, emit func(*genSpan, string) error) (int, error) {
	r := rand.New(rand.NewPCG(18, uint64(n)<<20|uint64(hops)))
	perRoute := uint64(max(1, hops/len(idRoutes)))
	// The names of each route, built once (the generator must not cost
	// more than the analysis it feeds).
	names := make([][]string, len(idRoutes))
	for i := range idRoutes {
		names[i] = make([]string, perRoute)
		for k := range names[i] {
			names[i][k] = cardinalityName(r, &idRoutes[i], uint64(k))
		}
	}
	t0 := int64(1_767_225_600_000_000_000)
	count := 0
	var idSeq uint64 = 1
	nextID := func() uint64 { idSeq++; return idSeq*0x9E3779B97F4A7C15 | 1 }
	lognormal := func(medianMs, sigma float64) int64 {
		return int64(math.Round(medianMs*math.Exp(sigma*r.NormFloat64())*1000)) * 1000
	}
	for tr := 0; count < n; tr++ {
		trace := [2]uint64{r.Uint64(), r.Uint64()}
		start := t0 + int64(tr)*1_000_000
		root := nextID()
		at := start + 500_000
		kids := make([]genSpan, 0, 1+len(idRoutes))
		kids = append(kids, genSpan{trace: trace, id: nextID(), parent: root, hop: "auth", service: "auth", kind: "client",
			start: at, durNs: lognormal(5, 0.3), code: 200})
		at += kids[0].durNs
		failed := false
		for i := range idRoutes {
			rt := &idRoutes[i]
			s := genSpan{trace: trace, id: nextID(), parent: root, hop: names[i][r.Uint64N(perRoute)], service: rt.service,
				kind: "client", start: at, durNs: lognormal(rt.median, 0.5), code: 200}
			if r.Float64() < 0.01 {
				s.failed, s.code = true, 503
				failed = true
			}
			kids = append(kids, s)
			at += s.durNs + 100_000
		}
		rs := genSpan{trace: trace, id: root, hop: "gateway", service: "gateway", kind: "server", start: start,
			durNs: at - start + 300_000, failed: failed, code: 200}
		if failed {
			rs.code = 503
		}
		if err := emit(&rs, "/"); err != nil {
			return count, err
		}
		count++
		for i := range kids {
			route := "/auth"
			if i > 0 {
				rt := &idRoutes[i-1]
				route = rt.prefix + "{id}" + rt.suffix
			}
			if err := emit(&kids[i], route); err != nil {
				return count, err
			}
			count++
		}
	}
	return count, nil
}

// writeCardinalityJSONL writes generateCardinality's spans as flat JSON
// lines; each carries its route template as http.route, the attribute
// that --hop-by attr:http.route bounds the hops by.
func writeCardinalityJSONL(path string, n, hops int) (int, error) {
	return writeFlatJSONL(path, func(emit func(*genSpan, string) error) (int, error) {
		return generateCardinality(n, hops, emit)
	})
}

// cardinalityCase measures tailscope as the hop names go unbounded: the
// same number of spans (-card-n) with few and with many distinct hops
// (-card-hops, 1k and 200k by default), each analysed to JSON and to
// text, and recommend writing a policy; it reports time, peak RSS and
// the ratio of the largest hop count to the smallest (the target: linear in
// hops, memory bounded, the text report bounded).
type cardinalityCase struct {
	on, only bool
	n        int
	hops     string
}

func registerCardinality(fs *flag.FlagSet) *cardinalityCase {
	k := &cardinalityCase{}
	fs.BoolVar(&k.on, "cardinality", true, "also measure unbounded hop names (-card-n spans at each of -card-hops distinct hops)")
	fs.BoolVar(&k.only, "cardinality-only", false, "measure only the cardinality case (no DuckDB, no npm)")
	fs.IntVar(&k.n, "card-n", 1_000_000, "spans of the cardinality case")
	fs.StringVar(&k.hops, "card-hops", "1000,200000", "distinct hop counts of the cardinality case, comma-separated")
	return k
}

// cardResult is what the cardinality case measured: per hop count, the
// three commands' runs.
type cardResult struct {
	n, runs int
	rows    []cardRow
}

type cardRow struct {
	hops int
	ks   []contender
}

// run generates the files and measures.
func (k *cardinalityCase) run(bin, dir string, runs int, logf func(string, ...any)) (*cardResult, error) {
	var counts []int
	for _, f := range strings.Split(k.hops, ",") {
		h, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || h < 1 {
			return nil, fmt.Errorf("-card-hops %q: want counts like 1000,200000", k.hops)
		}
		counts = append(counts, h)
	}
	res := &cardResult{n: k.n, runs: runs}
	for _, h := range counts {
		path := filepath.Join(dir, fmt.Sprintf("ids-%d.jsonl", h))
		n, err := cachedGen(path, k.n, fmt.Sprintf("ids:%d", h))
		if err != nil {
			return nil, err
		}
		logf("cardinality: %d spans over ~%d distinct hops in %s (%s)", n, h, path, fileSize(path))
		if err := warm(path); err != nil {
			return nil, err
		}
		// The case measures cost against hop count, so it lifts the
		// distinct-hop guard (--max-hops, 100k by default) above the
		// hops it generates: the guard's refusal is not what is timed.
		maxHops := fmt.Sprint(2 * h)
		r := cardRow{hops: h, ks: []contender{
			{name: "analyze, JSON", cmd: []string{bin, "analyze", "-q", "--max-hops", maxHops, "-f", "json", "-o", os.DevNull, path}},
			{name: "analyze, text", cmd: []string{bin, "analyze", "-q", "--max-hops", maxHops, "-f", "text", "-o", os.DevNull, path}},
			{name: "recommend", cmd: []string{bin, "recommend", "-q", "--max-hops", maxHops, "-o", os.DevNull, path}},
		}}
		for run := 0; run < runs; run++ {
			for i := range r.ks {
				m, err := measureWarm(r.ks[i].cmd, path)
				if err != nil {
					return nil, fmt.Errorf("cardinality %d hops, %s: %v", h, r.ks[i].name, err)
				}
				logf("cardinality run %d/%d, %d hops, %-14s %8.3fs %6.0f MB", run+1, runs, h, r.ks[i].name, m.wall.Seconds(), m.rssMB)
				r.ks[i].m = append(r.ks[i].m, m)
			}
		}
		res.rows = append(res.rows, r)
	}
	return res, nil
}

// cpu is the CPU time of every run.
func (r *cardResult) cpu() time.Duration {
	var t time.Duration
	for _, row := range r.rows {
		for _, k := range row.ks {
			for _, m := range k.m {
				t += m.cpu
			}
		}
	}
	return t
}

// String is the case's Markdown section: the table and the ratios between
// the largest and the smallest hop count.
func (r *cardResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nCardinality: %d spans, hop names carrying ids (digits, UUIDs, hex, tokens); median of %d runs\n\n", r.n, r.runs)
	fmt.Fprintf(&b, "| distinct hops | command | median s | CPU s | peak RSS MB |\n|---:|---|---:|---:|---:|\n")
	for _, row := range r.rows {
		for i := range row.ks {
			w, rss := row.ks[i].medians()
			fmt.Fprintf(&b, "| %d | %s | %.3f | %.2f | %.0f |\n", row.hops, row.ks[i].name, w, row.ks[i].medianCPU(), rss)
		}
	}
	if len(r.rows) > 1 {
		lo, hi := r.rows[0], r.rows[len(r.rows)-1]
		fmt.Fprintf(&b, "\nRatios, %d hops / %d hops (same spans; %.0f× the hops):\n\n", hi.hops, lo.hops, float64(hi.hops)/float64(lo.hops))
		for i := range lo.ks {
			wl, rl := lo.ks[i].medians()
			wh, rh := hi.ks[i].medians()
			cl, ch := lo.ks[i].medianCPU(), hi.ks[i].medianCPU()
			extra := float64(hi.hops - lo.hops)
			fmt.Fprintf(&b, "- %s: time %.2f×, CPU %.2f× (%.1f µs more per extra hop), peak RSS %.2f× (%.1f KB more per extra hop)\n",
				lo.ks[i].name, wh/wl, ch/cl, (ch-cl)*1e6/extra, rh/rl, (rh-rl)*1000/extra)
		}
	}
	return b.String()
}

// target is the "cost linear in hop cardinality" line of the targets. The spans
// are the same at every hop count, so a cost linear in the hops is a
// fixed cost plus a share per hop, and its ratio between two hop counts
// cannot exceed theirs: the line checks CPU time and peak RSS of every
// command against the hop ratio between the smallest and the largest
// count. (Two counts bound the growth from above only; the per-hop costs
// printed with the ratios, and analyze's scaling test, say more.)
func (r *cardResult) target() string {
	if len(r.rows) < 2 {
		return "- Cost linear in hop cardinality: needs two hop counts (-card-hops)\n"
	}
	lo, hi := r.rows[0], r.rows[len(r.rows)-1]
	hopRatio := float64(hi.hops) / float64(lo.hops)
	worstCPU, worstRSS := 0.0, 0.0
	for i := range lo.ks {
		_, rl := lo.ks[i].medians()
		_, rh := hi.ks[i].medians()
		worstCPU = max(worstCPU, hi.ks[i].medianCPU()/lo.ks[i].medianCPU())
		worstRSS = max(worstRSS, rh/rl)
	}
	verdict := "not met"
	if worstCPU <= hopRatio && worstRSS <= hopRatio {
		verdict = "met"
	}
	return fmt.Sprintf("- Cost linear in hop cardinality, %d → %d hops (%.0f×), same spans: CPU time up to %.2f×, peak RSS up to %.2f× (target: at most the hop ratio: %s)\n",
		lo.hops, hi.hops, hopRatio, worstCPU, worstRSS, verdict)
}
