// Package matrix generates the source article's latency matrix (docs/DESIGN.md §1):
// requests over a chain of hops that run one after another, a mix of normal
// requests, requests with one hop in a long tail, and requests whose whole
// chain is slow. It is deterministic for a seed, and parameterised so that
// tests can replay other seeds, compositions and hop names.
//
// It writes the matrix as tailscope's flat JSON-lines schema, either as the
// true latencies (an observation run without timeouts) or as a given
// per-hop timeout and retry count would have logged them.
package matrix

import (
	"fmt"
	"io"
	"math/rand/v2"
	"time"
)

// Config describes a matrix. Latency ranges are uniform.
type Config struct {
	Seed uint64
	Hops []string
	// Normal, Tail and Slow count requests of each kind.
	Normal, Tail, Slow int
	// TailFirstHop of the Tail requests have their slow hop first; the rest
	// are dealt round-robin over the other hops (then shuffled with the
	// rows), so every hop sees its share of the tail.
	TailFirstHop         int
	NormalMin, NormalMax time.Duration
	TailMin, TailMax     time.Duration
	SlowMin, SlowMax     time.Duration
	// Start is the first request's start; requests are Spacing apart.
	Start   time.Time
	Spacing time.Duration
}

// Article is the matrix of the source article: 200 requests over forward,
// retrieve, generate; 170 normal (200–700 ms per hop), 19 with one hop at
// 8–11 s (7 of them on the first hop), 11 with every hop at 1.5–2.5 s.
func Article() Config {
	return Config{
		Seed: 1, Hops: []string{"forward", "retrieve", "generate"},
		Normal: 170, Tail: 19, Slow: 11, TailFirstHop: 7,
		NormalMin: 200 * time.Millisecond, NormalMax: 700 * time.Millisecond,
		TailMin: 8 * time.Second, TailMax: 11 * time.Second,
		SlowMin: 1500 * time.Millisecond, SlowMax: 2500 * time.Millisecond,
		Start:   time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC),
		Spacing: time.Second,
	}
}

// Kind of a request in the matrix.
type Kind string

const (
	Normal Kind = "normal"
	Tail   Kind = "tail"
	Slow   Kind = "slow"
)

// Request is one row: the true latency of each hop, in chain order.
type Request struct {
	ID      string
	Kind    Kind
	Start   time.Time
	Latency []time.Duration
}

// Generate builds the matrix. Latencies are whole microseconds.
func Generate(c Config) []Request {
	rng := rand.New(rand.NewPCG(c.Seed, c.Seed^0x9e3779b97f4a7c15))
	n := c.Normal + c.Tail + c.Slow
	kinds := make([]Kind, 0, n)
	tailHop := make([]int, 0, c.Tail)
	for i := 0; i < c.Normal; i++ {
		kinds = append(kinds, Normal)
	}
	for i := 0; i < c.Tail; i++ {
		kinds = append(kinds, Tail)
		h := 0
		if i >= c.TailFirstHop && len(c.Hops) > 1 {
			h = 1 + (i-c.TailFirstHop)%(len(c.Hops)-1)
		}
		tailHop = append(tailHop, h)
	}
	for i := 0; i < c.Slow; i++ {
		kinds = append(kinds, Slow)
	}
	// Shuffle the rows, carrying each tail row's hop with it.
	type row struct {
		k Kind
		h int
	}
	rows := make([]row, n)
	ti := 0
	for i, k := range kinds {
		rows[i] = row{k: k}
		if k == Tail {
			rows[i].h = tailHop[ti]
			ti++
		}
	}
	rng.Shuffle(n, func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	uni := func(lo, hi time.Duration) time.Duration {
		d := lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
		return d.Truncate(time.Microsecond)
	}
	out := make([]Request, n)
	for i, r := range rows {
		lat := make([]time.Duration, len(c.Hops))
		for h := range c.Hops {
			switch {
			case r.k == Slow:
				lat[h] = uni(c.SlowMin, c.SlowMax)
			case r.k == Tail && h == r.h:
				lat[h] = uni(c.TailMin, c.TailMax)
			default:
				lat[h] = uni(c.NormalMin, c.NormalMax)
			}
		}
		out[i] = Request{ID: fmt.Sprintf("req-%04d", i), Kind: r.k, Start: c.Start.Add(time.Duration(i) * c.Spacing), Latency: lat}
	}
	return out
}

// WriteTrue writes one span per hop per request with its true latency: what
// an observation run with no timeouts records.
func WriteTrue(w io.Writer, c Config, reqs []Request) error {
	for _, r := range reqs {
		t := r.Start
		for h, d := range r.Latency {
			_, err := fmt.Fprintf(w, `{"trace_id":%q,"span_id":"%s-%d","hop":%q,"start":%d,"duration_ms":%s,"status":"ok"}`+"\n",
				r.ID, r.ID, h+1, c.Hops[h], t.UnixNano(), ms(d))
			if err != nil {
				return err
			}
			t = t.Add(d)
		}
	}
	return nil
}

// WriteRecorded writes the spans a chain with the given per-attempt
// timeout and retries (no backoff, no budget) would have logged: one span
// per attempt, cut attempts marked as timeouts at exactly the timeout, and
// no spans for hops after a hop that failed.
func WriteRecorded(w io.Writer, c Config, reqs []Request, timeout time.Duration, retries int) error {
	for _, r := range reqs {
		t := r.Start
		n := 0
	chain:
		for h, d := range r.Latency {
			for k := 1; k <= retries+1; k++ {
				n++
				cut := d > timeout
				dur, status, to := d, "ok", ""
				if cut {
					dur, status, to = timeout, "error", `,"timeout":true`
				}
				_, err := fmt.Fprintf(w, `{"trace_id":%q,"span_id":"%s-%d","hop":%q,"start":%d,"duration_ms":%s,"status":%q,"attempt":%d,"timeout_ms":%d%s}`+"\n",
					r.ID, r.ID, n, c.Hops[h], t.UnixNano(), ms(dur), status, k, timeout.Milliseconds(), to)
				if err != nil {
					return err
				}
				t = t.Add(dur)
				if !cut {
					continue chain
				}
			}
			break // the hop failed: the request stops here
		}
	}
	return nil
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%d.%03d", d/time.Millisecond, (d%time.Millisecond)/time.Microsecond)
}
