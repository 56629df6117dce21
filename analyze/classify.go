package analyze

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/quantile"
	"github.com/tailscope/tailscope/span"
)

// Failure classes (contract values).
const (
	ClassRanToTimeout = "ran-to-timeout"
	ClassTransient    = "transient"
	ClassMixed        = "mixed"
	ClassNone         = "none"
	ClassTooFew       = "too-few"
)

// MinFailures is the number of failed attempts below which a hop's class
// is too-few: a handful of failures cannot show a distribution.
const MinFailures = 5

// PileTolerance is how close to the timeout (or to k×timeout + backoffs) a
// failure must end to count as having run to the timeout: 2%, wider than
// timer, scheduler and clock noise, far narrower than real latency spread.
const PileTolerance = 0.02

// Thresholds of the class rule (see Classify).
const (
	// CutShareHigh is the share of failures at the timeout from which a
	// hop's failures are said to pile at it.
	CutShareHigh = 0.8
	// CutShareLow is the share at or below which the timeout plays no
	// part: the failures are fast or scattered.
	CutShareLow = 0.2
	// MinRetryEvidence is the number of retries after a timeout needed
	// before their outcome may overrule the pile.
	MinRetryEvidence = 3
	// RecoverHigh and RecoverLow bound the share of retries after a
	// timeout that succeeded: at RecoverHigh or more the slowness was
	// jitter (the next attempt was fast), above RecoverLow it was partly.
	RecoverHigh = 0.5
	RecoverLow  = 0.2
)

// Classify names a hop's failure class from the distribution of its
// failure times and says why, citing the numbers.
//
// With T the hop's timeout (policy in force, span attribute or inferred;
// see timeoutOf), a failed attempt "ran to the timeout" when cutBy says so
// (a timeout mark or code, or an end within PileTolerance of T) or, when
// the policy in force has retries and the log has one span per call, when
// it ended within PileTolerance of an echo k×T + backoffs (k ≤ retries+1).
// Let cut be their share of the failed attempts:
//
//   - no failed attempt → none; fewer than MinFailures (5) → too-few.
//   - cut ≥ 80%: the failures pile at the timeout. If at least 3 retries
//     followed such a timeout and at least half of them succeeded, the
//     slowness was jitter, not persistent → transient; if more than 20%
//     succeeded → mixed; otherwise → ran-to-timeout (the next attempt hit
//     the same wall, or nothing retried and the pile alone speaks).
//   - cut ≤ 20%: fast or scattered failures (429/503/resets and the like)
//     → transient.
//   - in between → mixed.
//
// Status codes enter through cutBy (408, 504, DEADLINE_EXCEEDED count as
// cut wherever they end) and through the evidence (429, 502, 503,
// RESOURCE_EXHAUSTED, UNAVAILABLE are counted and named). The evidence
// sentence gives the counts, the width of the pile ("19 of 19 failures
// within 0.3% of 3s"), the retry yield split by failure kind, and for
// retried failed calls their k×T + backoff echo.
func Classify(h *Hop, ss []*span.Span, cs []*span.Call, opt Options) (class, evidence string) {
	n := h.FailedAttempts
	if n == 0 {
		return ClassNone, "no failed attempts"
	}
	T := nsOf(h.TimeoutMs)
	f := shapeOf(h.Hop, ss, T, opt)
	if n < MinFailures {
		s := units.Count(n, "failed attempt", "failed attempts")
		if f.cut > 0 {
			s += fmt.Sprintf(" (%d cut by a timeout)", f.cut)
		}
		return ClassTooFew, s + fmt.Sprintf(": too few to tell a pile-up from scatter (%d needed)", MinFailures)
	}
	share := float64(f.cut) / float64(f.n)
	yt := Transition{}
	if h.RetryYield != nil {
		yt = h.RetryYield.AfterTimeout
	}
	recovered := 0.0
	if yt.Retried > 0 {
		recovered = float64(yt.Succeeded) / float64(yt.Retried)
	}
	parts := []string{}
	add := func(s string) {
		if s != "" {
			parts = append(parts, s)
		}
	}
	joined := func() string { return strings.Join(parts, "; ") }
	switch {
	case share >= CutShareHigh:
		add(f.cutSentence(T))
		if yt.Retried >= MinRetryEvidence && recovered >= RecoverHigh {
			add(fmt.Sprintf("but retries after a timeout recovered %d of %d: the slowness is jitter, not persistent", yt.Succeeded, yt.Retried))
			add(f.otherSentence(T))
			add(yieldSentence(h.RetryYield, false))
			return ClassTransient, joined()
		}
		if yt.Retried >= MinRetryEvidence && recovered > RecoverLow {
			add(fmt.Sprintf("retries after a timeout recovered %d of %d: part of the slowness is persistent", yt.Succeeded, yt.Retried))
			add(f.otherSentence(T))
			add(yieldSentence(h.RetryYield, false))
			return ClassMixed, joined()
		}
		add(f.otherSentence(T))
		add(yieldSentence(h.RetryYield, true))
		add(echoSentence(cs, T, f.tol))
		return ClassRanToTimeout, joined()
	case share <= CutShareLow:
		add(f.otherSentence(T))
		if f.cut > 0 || T <= 0 {
			add(f.cutSentence(T))
		}
		add(yieldSentence(h.RetryYield, false))
		return ClassTransient, joined()
	}
	add(f.cutSentence(T))
	add(f.otherSentence(T))
	add(yieldSentence(h.RetryYield, false))
	add(echoSentence(cs, T, f.tol))
	return ClassMixed, joined()
}

// shape is what Classify measures of a hop's failed attempts.
type shape struct {
	n int
	// cut ran to a timeout: atT at T itself (maxDev the largest relative
	// distance from T among them), echo at k×T + backoffs, elsewhere cut
	// by a timeout mark or code away from T (a request deadline, another
	// caller's timeout) between elsLo and elsHi.
	cut, atT, echo, elsewhere int
	maxDev                    float64
	elsLo, elsHi              int64
	// other failures: fast (under T/2) and slow, between lo and hi.
	fast, slow int
	lo, hi     int64
	codes      map[string]int // numeric codes as decimals, others as logged
	// band is the largest count of the other failures within one
	// PileWindow band: small when they are scattered.
	band int
	tol  float64
}

func shapeOf(hop string, ss []*span.Span, T int64, opt Options) *shape {
	f := &shape{codes: map[string]int{}, lo: math.MaxInt64, elsLo: math.MaxInt64, tol: PileTolerance}
	echoes := echoTargets(hop, span.CallerSide(commonKind(ss)), T, opt)
	var durs []int64
	for _, s := range ss {
		if !s.Failed() {
			continue
		}
		d := s.Duration
		f.n++
		switch {
		case T > 0 && near(d, T):
			f.cut++
			f.atT++
			f.maxDev = math.Max(f.maxDev, math.Abs(float64(d-T))/float64(T))
		case cutBy(s, T):
			f.cut++
			f.elsewhere++
			f.elsLo, f.elsHi = min(f.elsLo, d), max(f.elsHi, d)
		case nearAny(d, echoes):
			f.cut++
			f.echo++
		default:
			switch {
			case s.Code != 0:
				f.codes[strconv.Itoa(s.Code)]++
			case s.CodeText != "":
				f.codes[s.CodeText]++
			}
			if T > 0 && d < T/2 {
				f.fast++
			} else {
				f.slow++
			}
			f.lo, f.hi = min(f.lo, d), max(f.hi, d)
			durs = append(durs, d)
		}
	}
	quantile.SortInt64(durs)
	lo, hi := densest(durs)
	f.band = hi - lo
	return f
}

// echoTargets are the durations at which a single span covering a whole
// call that timed out on every attempt would end under the policy in
// force: k×T plus the backoffs before attempts 2..k, for k = 2..retries+1.
// Without a policy in force there are none: echoes are then only looked
// for at call level, where the attempts are visible.
func echoTargets(hop string, callerSide bool, T int64, opt Options) []int64 {
	if opt.PolicyInForce == nil || T <= 0 {
		return nil
	}
	_, retries, delays := opt.PolicyInForce.CallTimeouts(hop, callerSide)
	var out []int64
	var backoff int64
	for k := 2; k <= retries+1 && k-2 < len(delays); k++ {
		backoff += int64(delays[k-2])
		out = append(out, int64(k)*T+backoff)
	}
	return out
}

func nearAny(d int64, targets []int64) bool {
	for _, t := range targets {
		if near(d, t) {
			return true
		}
	}
	return false
}

// cutSentence: "19 of 19 failures within 0.3% of 3s".
func (f *shape) cutSentence(T int64) string {
	var p []string
	if f.atT > 0 {
		p = append(p, fmt.Sprintf("%d of %d failures within %s of %s", f.atT, f.n, units.PercentUp(f.maxDev), units.Duration(time.Duration(T))))
	} else if T > 0 {
		p = append(p, fmt.Sprintf("0 of %d failures at the %s timeout", f.n, units.Duration(time.Duration(T))))
	} else {
		p = append(p, "no timeout known or inferred")
	}
	if f.echo > 0 {
		p = append(p, fmt.Sprintf("%d at k×%s + backoff (whole calls)", f.echo, units.Duration(time.Duration(T))))
	}
	if f.elsewhere > 0 {
		p = append(p, fmt.Sprintf("%d cut by a timeout elsewhere (%s)", f.elsewhere, span2(f.elsLo, f.elsHi)))
	}
	return strings.Join(p, ", ")
}

// otherSentence describes the failures that did not run to a timeout.
func (f *shape) otherSentence(T int64) string {
	other := f.fast + f.slow
	if other == 0 {
		return ""
	}
	s := fmt.Sprintf("%d of %d failures ended away from the timeout: ", other, f.n)
	if T <= 0 {
		s = fmt.Sprintf("%d of %d failures ", other, f.n)
	}
	if f.fast > 0 {
		s += fmt.Sprintf("%d fast (under %s), ", f.fast, units.Duration(time.Duration(T/2)))
	}
	s += fmt.Sprintf("from %s", span2(f.lo, f.hi))
	if f.band >= MinPile && float64(f.band) >= 0.2*float64(other) {
		s += fmt.Sprintf(", %d of them within 2%% of each other", f.band)
	} else {
		s += fmt.Sprintf(", no pile-up (densest 2%% band holds %d)", f.band)
	}
	if c := codeList(f.codes); c != "" {
		s += "; codes " + c
	}
	return s
}

// span2 formats a range of durations: "5ms to 2.8s", or one value.
func span2(lo, hi int64) string {
	if lo == hi {
		return units.Duration(time.Duration(lo))
	}
	return units.Duration(time.Duration(lo)) + " to " + units.Duration(time.Duration(hi))
}

// codeList: "503×12 (transient), ECONNRESET×3 (transient), 500×2", most
// frequent first. Codes that are no number (error kinds such as
// ECONNRESET) are listed as logged.
func codeList(codes map[string]int) string {
	type kv struct {
		code string
		n    int
	}
	var l []kv
	for c, n := range codes {
		l = append(l, kv{c, n})
	}
	sort.Slice(l, func(i, j int) bool {
		if l[i].n != l[j].n {
			return l[i].n > l[j].n
		}
		return l[i].code < l[j].code
	})
	var p []string
	for _, x := range l {
		s := fmt.Sprintf("%s×%d", x.code, x.n)
		if transientKind(x.code) {
			s += " (transient)"
		}
		p = append(p, s)
	}
	return strings.Join(p, ", ")
}

// transientKind reports whether a code, numeric or an error kind as
// logged, names a failure that a retry can get past: 429/502/503, gRPC
// RESOURCE_EXHAUSTED/UNAVAILABLE, and connection-level errors (reset,
// refused, broken pipe, DNS lookups that may succeed next time).
func transientKind(code string) bool {
	if n, err := strconv.Atoi(code); err == nil {
		return transientCode(n)
	}
	c := strings.ToLower(code)
	for _, k := range []string{"econnreset", "econnrefused", "epipe", "eai_again", "econnaborted", "ehostunreach", "enetunreach",
		"connection reset", "connection refused", "broken pipe", "reset by peer", "unavailable", "temporarily"} {
		if strings.Contains(c, k) {
			return true
		}
	}
	return false
}

// yieldSentence: "retry yield after timeouts 0/14, after other errors 3/4".
func yieldSentence(y *Yield, sayNone bool) string {
	if y == nil {
		if sayNone {
			return "no retries in the logs"
		}
		return ""
	}
	var p []string
	if t := y.AfterTimeout; t.Retried > 0 {
		p = append(p, fmt.Sprintf("after timeouts %d/%d", t.Succeeded, t.Retried))
	}
	if t := y.AfterFastFailure; t.Retried > 0 {
		p = append(p, fmt.Sprintf("after other errors %d/%d", t.Succeeded, t.Retried))
	}
	if len(p) == 0 {
		return ""
	}
	return "retry yield " + strings.Join(p, ", ")
}

// echoSentence looks at the failed calls that retried and timed out on
// every attempt: with persistent slowness each ends at k×T plus the
// backoffs between its attempts (the article's 9 s = 3 × 3 s). The backoff
// is the median observed gap between attempts of the hop.
func echoSentence(cs []*span.Call, T int64, tol float64) string {
	if T <= 0 {
		return ""
	}
	var gaps []int64
	for _, c := range cs {
		for i := 0; i+1 < len(c.Attempts); i++ {
			gaps = append(gaps, max(0, c.Attempts[i+1].Span.Start-c.Attempts[i].Span.End()))
		}
	}
	if len(gaps) == 0 {
		return ""
	}
	quantile.SortInt64(gaps)
	b := gaps[len(gaps)/2]
	total, within := 0, 0
	byK := map[int]int{}
	for _, c := range cs {
		k := len(c.Attempts)
		if k < 2 || !c.Failed() {
			continue
		}
		total++
		target := int64(k)*T + int64(k-1)*b
		if near(c.End()-c.Start(), target) {
			within++
			byK[k]++
		}
	}
	if total == 0 {
		return ""
	}
	bestK, bestN := 0, -1
	for k, n := range byK {
		if n > bestN || (n == bestN && k < bestK) {
			bestK, bestN = k, n
		}
	}
	s := fmt.Sprintf("%d of %d retried failed calls end within %s of k×%s + (k−1)×%s backoff", within, total, units.PercentWholeEven(tol),
		units.Duration(time.Duration(T)), units.Duration(time.Duration(b)))
	if bestN > 0 {
		s += fmt.Sprintf(" (%s at k = %d)", units.Duration(time.Duration(int64(bestK)*T+int64(bestK-1)*b)), bestK)
	}
	return s
}
