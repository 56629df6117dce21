// Package policy reads and writes the timeout/retry policy file (docs/DESIGN.md §6):
// an end-to-end budget, a default per-hop policy and per-hop overrides.
//
// Parsing reports every problem of a file with its line and key, not just
// the first, so a user fixes a file in one pass. The package does not know
// the logs: whether a hop exists is for the check command to say.
package policy

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tailscope/tailscope/internal/glyph"
	"github.com/tailscope/tailscope/internal/units"
)

// Jitter kinds for backoff.
const (
	JitterNone  = "none"
	JitterFull  = "full"  // uniform in [0, d]
	JitterEqual = "equal" // d/2 + uniform in [0, d/2]
)

// Backoff is the wait before retry k (k = 1, 2, …): min(Max, Base×2^(k−1)),
// jittered. A scalar in the file is a constant wait (Max = Base). Jitter ""
// means none, so that the zero Backoff is "no backoff" and two equal
// policies compare equal.
type Backoff struct {
	Base   time.Duration
	Max    time.Duration
	Jitter string
}

// Delay returns the wait before retry k given u, a uniform draw in [0, 1)
// used by jitter (the replay passes a deterministic draw).
func (b Backoff) Delay(k int, u float64) time.Duration {
	if b.Base <= 0 || k < 1 {
		return 0
	}
	d := b.Base
	for i := 1; i < k && d < b.Max; i++ {
		d *= 2
	}
	if b.Max > 0 && d > b.Max {
		d = b.Max
	}
	switch b.Jitter {
	case JitterFull:
		return time.Duration(u * float64(d))
	case JitterEqual:
		return d/2 + time.Duration(u*float64(d/2))
	}
	return d
}

// MaxDelay is the longest wait before retry k (jitter at its top).
func (b Backoff) MaxDelay(k int) time.Duration {
	c := b
	c.Jitter = JitterNone
	return c.Delay(k, 0)
}

func (b Backoff) String() string {
	if b.Base == 0 {
		return "0s"
	}
	if b.Max == b.Base && (b.Jitter == "" || b.Jitter == JitterNone) {
		return b.Base.String()
	}
	s := fmt.Sprintf("%s..%s exp", b.Base, b.Max)
	if b.Jitter != "" && b.Jitter != JitterNone {
		s += ", " + b.Jitter + " jitter"
	}
	return s
}

// Hop is the policy of one hop. Timeout 0 means no per-attempt timeout.
type Hop struct {
	Timeout     time.Duration
	Retries     int
	Backoff     Backoff
	BudgetAware bool
	// Hedge sends extra attempts while one is slow to answer; the zero
	// Hedge is none.
	Hedge Hedge
	// Idempotent says whether the hop's calls may be sent again after
	// they reached the called service (a retry on a server error or a
	// timeout, a hedge). Unset, the emitted configs decide per endpoint
	// by IdempotentRule. The replay does not read it.
	Idempotent Idempotence
}

// Idempotence is a hop's idempotent key: unset, true or false.
type Idempotence int8

const (
	// IdempotenceUnset leaves it to IdempotentRule.
	IdempotenceUnset Idempotence = iota
	// Idempotent: the calls may be repeated.
	Idempotent
	// NotIdempotent: a call is sent again only when it cannot have
	// reached the called service.
	NotIdempotent
)

// Set reports whether the policy says it.
func (i Idempotence) Set() bool { return i != IdempotenceUnset }

// RetryFits reports whether the hop may send a retry with left of the
// request's time remaining, after waiting backoff: a budget-aware hop
// sends it only when the backoff and one whole attempt at its timeout fit
// in what is left, since a retry that cannot finish only delays the
// failure; any other hop always may (the budget then cuts the retry where
// it runs out). The replay and the run-time enforcement both ask it, so
// that what the replay predicts is what enforcement does. A need too
// large for a Duration fits in no time left.
func (h Hop) RetryFits(left, backoff time.Duration) bool {
	if !h.BudgetAware {
		return true
	}
	if h.Timeout > math.MaxInt64-backoff {
		return false
	}
	return left >= backoff+h.Timeout
}

// Hedge is a hop's hedging: when an attempt has not answered after Delay,
// another is sent (up to Max in flight beyond the first, one every Delay);
// the first answer wins and the others are cancelled. Delay 0 means no
// hedging.
type Hedge struct {
	Delay time.Duration
	Max   int
}

// DefaultHedgeMax is a hedge's Max when the file does not give it.
const DefaultHedgeMax = 1

// MaxHedges bounds Hedge.Max (gRPC caps hedging's maxAttempts at 5).
const MaxHedges = 4

// Policy is a parsed policy file.
type Policy struct {
	// Name is a short label (the file name without extension).
	Name string
	// Path is where it was read from ("" when built in memory).
	Path string
	// Budget is the end-to-end deadline per request; 0 means none.
	Budget  time.Duration
	Default Hop
	Hops    map[string]Hop
	// Lines gives the line of each hop entry, for messages that point into
	// the file.
	Lines map[string]int
	// Comments are written above each hop by Marshal (the recommendation's
	// basis); ignored on read.
	Comments map[string]string
	// RetryBudgets are recommended retry budgets by hop, for the emitted
	// Envoy and gRPC configs; not part of the policy file (the replay does
	// not model them).
	RetryBudgets map[string]RetryBudget
	// Ejections are the hops whose tail or failures concentrate on one
	// instance, for the emitted Envoy outlier_detection; not part of the
	// policy file.
	Ejections map[string]Ejection
	// Config is set when the file was a deployed config (Envoy, gRPC,
	// Istio, Linkerd) rather than a policy file: its routes, which only
	// the logs' endpoints map to hops (check does), and Hops is empty.
	Config *Config
}

// Ejection is an instance that outlier detection should eject from a
// hop's cluster: the attribute and value that name it, what it is an
// outlier in ("tail" or "failures"), its lift and share of them, and how
// many instances the hop has.
type Ejection struct {
	Key, Value, Of string
	Lift, Share    float64
	Instances      int
}

// RetryBudget caps a hop's retries (and hedges) in a storm, in the two
// forms proxies and RPC libraries take: Envoy's retry_budget (retries in
// flight at most Percent of the requests in flight, but always
// MinConcurrency) and gRPC's retryThrottling (a token bucket of MaxTokens
// that each failure drains by 1 and each success refills by TokenRatio;
// retries stop below half).
type RetryBudget struct {
	Percent        float64
	MinConcurrency int
	MaxTokens      int
	TokenRatio     float64
	// What the budget was derived from, as logged: retries per call,
	// failed attempts per attempt, attempts in flight on average and at
	// the peak.
	RetryRate, FailureRate, InFlightMean float64
	InFlightPeak                         int
	// Linkerd's budget: retries may add RetryRatio of the requests, and
	// MinRetriesPerSecond are always allowed (over a 10s window);
	// RetriesPerSecond is the logged rate it rests on.
	RetryRatio          float64
	MinRetriesPerSecond int
	RetriesPerSecond    float64
}

// For returns the policy of a hop: its own entry, or the default.
func (p *Policy) For(hop string) Hop {
	if h, ok := p.Hops[hop]; ok {
		return h
	}
	return p.Default
}

// ForCall returns the policy of a call to hop. callerSide says whether the
// call's spans are the caller's record (see span.CallerSide): a callee's
// own span (a SERVER span under its CLIENT span) is not timed out or
// retried by default — the caller's timeout on the span above bounds it —
// so it gets no timeout and no retries unless the policy lists its hop.
func (p *Policy) ForCall(hop string, callerSide bool) Hop {
	if h, ok := p.Hops[hop]; ok {
		return h
	}
	if !callerSide {
		return Hop{}
	}
	return p.Default
}

// CallTimeouts is ForCall's timeout and retries for a hop, with the
// longest backoff before each retry (Backoff.MaxDelay of retry 1, 2, …):
// what the analysis reads of the policy a log was recorded under
// (analyze.InForce). A nil policy gives nothing.
func (p *Policy) CallTimeouts(hop string, callerSide bool) (timeout time.Duration, retries int, backoff []time.Duration) {
	if p == nil {
		return 0, 0, nil
	}
	h := p.ForCall(hop, callerSide)
	for k := 1; k <= h.Retries; k++ {
		backoff = append(backoff, h.Backoff.MaxDelay(k))
	}
	return h.Timeout, h.Retries, backoff
}

// Listed reports whether the hop has its own entry.
func (p *Policy) Listed(hop string) bool { _, ok := p.Hops[hop]; return ok }

// HopNames returns the listed hops, sorted.
func (p *Policy) HopNames() []string {
	names := make([]string, 0, len(p.Hops))
	for n := range p.Hops {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Problem is one mistake in a policy file.
type Problem struct {
	File string
	Line int
	Col  int
	Key  string
	Msg  string
}

func (p Problem) Error() string {
	pos := p.File
	if p.Line > 0 {
		pos = fmt.Sprintf("%s:%d", p.File, p.Line)
		if p.Col > 0 {
			pos += fmt.Sprintf(":%d", p.Col)
		}
	}
	if p.Key != "" {
		return fmt.Sprintf("%s: %s: %s", pos, p.Key, p.Msg)
	}
	return pos + ": " + p.Msg
}

// Problems is every mistake found in a file.
type Problems []Problem

func (ps Problems) Error() string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

// Marshal writes the policy as YAML in the file's own layout, with each
// hop's comment above it. Durations are written in their shortest form.
func (p *Policy) Marshal() []byte {
	var b bytes.Buffer
	if p.Budget > 0 {
		fmt.Fprintf(&b, "budget: %s\n", units.GoDuration(p.Budget))
	} else {
		b.WriteString("budget: 0s\n")
	}
	b.WriteString("default:\n")
	writeHop(&b, "  ", p.Default, false)
	if len(p.Hops) > 0 {
		b.WriteString("hops:\n")
		for _, name := range p.HopNames() {
			if c := p.Comments[name]; c != "" {
				// Every YAML line break ends a comment: \r, NEL and the
				// Unicode separators too, not only \n.
				c = commentText(commentBreaks.Replace(c))
				for _, line := range strings.Split(c, "\n") {
					fmt.Fprintf(&b, "  # %s\n", line)
				}
			}
			if k := quoteKey(name); len(k) < maxImplicitKey {
				fmt.Fprintf(&b, "  %s:\n", k)
			} else {
				// YAML allows an implicit key of at most 1024 characters;
				// a longer one is written as an explicit key.
				fmt.Fprintf(&b, "  ? %s\n  :\n", k)
			}
			// A hop without a hedge says so when the default has one:
			// it would inherit it on read.
			writeHop(&b, "    ", p.Hops[name], p.Default.Hedge.Delay > 0)
		}
	}
	return b.Bytes()
}

// maxImplicitKey is YAML's limit on the length of a key written as
// "key:" (an implicit key), with room to spare.
const maxImplicitKey = 1000

// commentBreaks turns every YAML line break into "\n", which Marshal
// splits comments on.
var commentBreaks = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u0085", "\n", "\u2028", "\n", "\u2029", "\n")

// commentText makes s printable in a YAML comment: YAML allows no
// control characters (but tab) and only valid UTF-8 anywhere in a file, so
// those are written as escapes (\x1b, \u0085) and bad bytes as U+FFFD.
func commentText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", r)
		case r >= 0x80 && r <= 0x9f, r == 0xfeff, r >= 0xfffe && r <= 0xffff:
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func writeHop(b *bytes.Buffer, ind string, h Hop, hedgeNone bool) {
	fmt.Fprintf(b, "%stimeout: %s\n", ind, units.GoDuration(h.Timeout))
	fmt.Fprintf(b, "%sretries: %d\n", ind, h.Retries)
	switch {
	case h.Backoff.Base == 0:
		fmt.Fprintf(b, "%sbackoff: 0s\n", ind)
	case h.Backoff.Max == h.Backoff.Base && (h.Backoff.Jitter == "" || h.Backoff.Jitter == JitterNone):
		fmt.Fprintf(b, "%sbackoff: %s\n", ind, units.GoDuration(h.Backoff.Base))
	default:
		j := h.Backoff.Jitter
		if j == "" {
			j = JitterNone
		}
		fmt.Fprintf(b, "%sbackoff: {base: %s, max: %s, jitter: %s}\n", ind, units.GoDuration(h.Backoff.Base), units.GoDuration(h.Backoff.Max), j)
	}
	fmt.Fprintf(b, "%sbudget_aware: %t\n", ind, h.BudgetAware)
	switch {
	case h.Hedge.Delay > 0:
		fmt.Fprintf(b, "%shedge: {delay: %s, max: %d}\n", ind, units.GoDuration(h.Hedge.Delay), h.Hedge.Max)
	case hedgeNone:
		fmt.Fprintf(b, "%shedge: none\n", ind)
	}
	if h.Idempotent.Set() {
		fmt.Fprintf(b, "%sidempotent: %t\n", ind, h.Idempotent == Idempotent)
	}
}

// quoteKey writes a string from the logs (a hop name, a service, a route)
// as a YAML scalar that every YAML reader reads back as that string: bare
// only when it is identifier-like and not a word YAML 1.1 or 1.2 reads as
// a boolean or null in any case (True, NULL, yes, on, y, ~…; a number
// cannot start with a letter), else double-quoted with every character
// YAML does not allow raw (C0, DEL, C1 — JSON quoting leaves DEL and C1
// raw —, a BOM, U+FFFE/U+FFFF) and every one a reader cannot see
// (glyph.Invisible: bidi overrides, zero-width characters, line
// separators) as an escape, so that any name — spaces, colons, "#",
// Unicode spaces, control characters — reads back as itself and shows
// what it holds.
func quoteKey(k string) string {
	if plainScalar(k) {
		return k
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(k); {
		r, n := utf8.DecodeRuneInString(k[i:])
		i += n
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case glyph.Invisible(r, n) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case glyph.Invisible(r, n):
			fmt.Fprintf(&b, `\u%04x`, r) // bytes that are not UTF-8 as U+FFFD
		case r >= 0x20 && r <= 0x7e, r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd && r != 0xfeff, r >= 0x10000 && r <= 0x10ffff:
			b.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// plainScalar reports whether s can be written bare in YAML and read
// back as the same string by YAML 1.1 and 1.2 readers alike.
func plainScalar(s string) bool {
	if s == "" || yamlWords[strings.ToLower(s)] {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(i > 0 && ((c >= '0' && c <= '9') || c == '-' || c == '.' || c == '/'))
		if !ok {
			return false
		}
	}
	return true
}

// yamlWords are the words YAML 1.1 (PyYAML, older Go and Ruby readers)
// or 1.2 read as booleans or null, in lower case.
var yamlWords = map[string]bool{"y": true, "yes": true, "n": true, "no": true, "true": true, "false": true,
	"on": true, "off": true, "null": true}

// ErrNoPolicy is returned when a command needs a policy and none was given.
var ErrNoPolicy = errors.New("no policy given")
