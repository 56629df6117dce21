package main

import (
	"bufio"
	"math"
	"math/rand/v2"
	"os"
	"strconv"

	"github.com/tailscope/tailscope/export"
	"github.com/tailscope/tailscope/span"
)

// hopShape is one hop of the generated chain: a lognormal body (median
// and σ of log-latency) and how it fails.
type hopShape struct {
	name, service string
	median        float64 // ms
	sigma         float64
	tailable      bool    // may carry the persistent 8–11 s tail
	transient     float64 // share of attempts that fail fast with 503
}

// chain is the generated request shape: a gateway root calling eleven
// hops in turn, the tail landing on the three slow hops (retrieval,
// search, generation), transient 503s on two others.
var chain = []hopShape{
	{"auth", "auth", 12, 0.4, false, 0},
	{"session", "session", 8, 0.5, false, 0},
	{"catalog", "catalog", 40, 0.5, false, 0},
	{"search", "search", 180, 0.6, true, 0},
	{"retrieve", "retrieval", 350, 0.5, true, 0},
	{"rank", "ranker", 60, 0.4, false, 0},
	{"pricing", "pricing", 25, 0.6, false, 0.03},
	{"inventory", "inventory", 30, 0.6, false, 0.02},
	{"generate", "llm", 900, 0.4, true, 0},
	{"render", "frontend", 20, 0.3, false, 0},
	{"audit", "audit", 5, 0.3, false, 0},
}

// Policy in force when the logs were "recorded": every hop 3 s, 2
// retries, no backoff — the article's config A, on a longer chain.
const (
	hopTimeoutNs = 3_000_000_000
	retries      = 2
	tailShare    = 0.08
)

// genSpan is one generated span, in the fields both writers need.
type genSpan struct {
	trace            [2]uint64
	id, parent       uint64
	hop, service     string
	kind             string
	start, durNs     int64
	failed, timeout  bool
	code, attempt    int
	timeoutInForceNs int64
}

// generate produces n spans (a little more, to finish the last trace) in
// trace order and hands each to emit. Everything is seeded: the same n
// gives the same files.
func generate(n int, emit func(*genSpan) error) (int, error) {
	r := rand.New(rand.NewPCG(8, uint64(n)))
	t0 := int64(1_767_225_600_000_000_000) // 2026-01-01T00:00:00Z
	count := 0
	var idSeq uint64 = 1
	nextID := func() uint64 { idSeq++; return idSeq*0x9E3779B97F4A7C15 | 1 }
	lognormal := func(medianMs, sigma float64) int64 {
		ms := medianMs * math.Exp(sigma*r.NormFloat64())
		return int64(math.Round(ms*1000)) * 1000 // µs resolution, as most logs
	}
	for tr := 0; count < n; tr++ {
		trace := [2]uint64{r.Uint64(), r.Uint64()}
		start := t0 + int64(tr)*2_000_000 // 500 requests/s
		root := nextID()
		slowHop := -1
		if r.Float64() < tailShare {
			cands := []int{3, 4, 8}
			slowHop = cands[r.IntN(len(cands))]
		}
		at := start + 1_000_000 // 1 ms of gateway work before the first call
		failed := false
		var kids []genSpan
		for i, h := range chain {
			if failed {
				break
			}
			attempt := 1
			for {
				s := genSpan{trace: trace, id: nextID(), parent: root, hop: h.name, service: h.service, kind: "client",
					start: at, attempt: attempt, timeoutInForceNs: hopTimeoutNs, code: 200}
				lat := lognormal(h.median, h.sigma)
				if i == slowHop {
					lat = int64(8000+r.IntN(3000)) * 1_000_000
				}
				switch {
				case lat >= hopTimeoutNs:
					// Cut by the timer: a few hundred µs after it fires.
					s.durNs = hopTimeoutNs + int64(r.IntN(400))*1000
					s.failed, s.timeout, s.code = true, true, 504
				case r.Float64() < h.transient:
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
				attempt++
			}
			at += 200_000 // 0.2 ms between calls
		}
		rs := genSpan{trace: trace, id: root, hop: "gateway", service: "gateway", kind: "server", start: start,
			durNs: at - start + 500_000, failed: failed, code: 200}
		if failed {
			rs.code = 504
		}
		if err := emit(&rs); err != nil {
			return count, err
		}
		count++
		for i := range kids {
			if err := emit(&kids[i]); err != nil {
				return count, err
			}
			count++
		}
	}
	return count, nil
}

// writeJSONL writes the spans as flat JSON lines.
func writeJSONL(path string, n int) (int, error) {
	return writeFlatJSONL(path, func(emit func(*genSpan, string) error) (int, error) {
		return generate(n, func(s *genSpan) error { return emit(s, "") })
	})
}

// writeFlatJSONL writes the spans a generator emits as flat JSON lines,
// each with its route template as http.route when it has one.
func writeFlatJSONL(path string, gen func(emit func(s *genSpan, route string) error) (int, error)) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var b []byte
	count, err := gen(func(s *genSpan, route string) error {
		b = appendFlatJSON(b[:0], s, route)
		_, err := w.Write(b)
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return count, err
}

// appendFlatJSON appends one span as a flat JSON line, byte by byte: fmt
// or encoding/json would make generation slower than the thing being
// measured. Fields a span does not have (no parent, attempt, timeout in
// force, route) are left out.
func appendFlatJSON(b []byte, s *genSpan, route string) []byte {
	b = append(b, `{"trace_id":"`...)
	b = appendHex(b, s.trace[0])
	b = appendHex(b, s.trace[1])
	b = append(b, `","span_id":"`...)
	b = appendHex(b, s.id)
	if s.parent != 0 {
		b = append(b, `","parent_id":"`...)
		b = appendHex(b, s.parent)
	}
	b = append(b, `","service":"`...)
	b = append(b, s.service...)
	b = append(b, `","name":"`...)
	b = append(b, s.hop...)
	b = append(b, `","kind":"`...)
	b = append(b, s.kind...)
	b = append(b, `","hop":"`...)
	b = append(b, s.hop...)
	if route != "" {
		b = append(b, `","http.route":"`...)
		b = append(b, route...)
	}
	b = append(b, `","start":`...)
	b = strconv.AppendInt(b, s.start, 10)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendFloat(b, float64(s.durNs)/1e6, 'f', -1, 64)
	if s.failed {
		b = append(b, `,"status":"error"`...)
	} else {
		b = append(b, `,"status":"ok"`...)
	}
	if s.timeout {
		b = append(b, `,"timeout":true`...)
	}
	b = append(b, `,"code":`...)
	b = strconv.AppendInt(b, int64(s.code), 10)
	if s.attempt > 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(s.attempt), 10)
	}
	if s.timeoutInForceNs > 0 {
		b = append(b, `,"timeout_ms":`...)
		b = strconv.AppendInt(b, s.timeoutInForceNs/1e6, 10)
	}
	return append(b, "}\n"...)
}

// appendHex appends x as 16 lowercase hex digits.
func appendHex(b []byte, x uint64) []byte {
	const digits = "0123456789abcdef"
	for sh := 60; sh >= 0; sh -= 4 {
		b = append(b, digits[(x>>uint(sh))&15])
	}
	return b
}

// genToSpan is the span the Parquet writers write for s; idb is scratch
// for the hex ids.
func genToSpan(s *genSpan, idb *[]byte) span.Span {
	hex := func(x ...uint64) string {
		*idb = (*idb)[:0]
		for _, v := range x {
			*idb = appendHex(*idb, v)
		}
		return string(*idb)
	}
	sp := span.Span{TraceID: hex(s.trace[0], s.trace[1]), SpanID: hex(s.id), Service: s.service, Name: s.hop,
		Kind: s.kind, Hop: s.hop, Start: s.start, Duration: s.durNs, Status: span.OK, Timeout: s.timeout,
		Code: s.code, Attempt: s.attempt, TimeoutInForce: s.timeoutInForceNs, Weight: 1}
	if s.parent != 0 {
		sp.ParentID = hex(s.parent)
	}
	if s.failed {
		sp.Status = span.Error
	}
	return sp
}

// writeParquet writes the same spans with tailscope's own flat-schema
// Parquet writer (package export), so both files hold the same numbers.
func writeParquet(path string, n int) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	pw := export.NewParquet(w)
	var idb []byte
	count, err := generate(n, func(s *genSpan) error {
		sp := genToSpan(s, &idb)
		return pw.Write(&sp)
	})
	if err == nil {
		err = pw.Close()
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return count, err
}
