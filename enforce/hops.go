package enforce

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/policy"
)

// maxWarned bounds the hop names a Policy warns of (and remembers): a
// service whose hop names carry ids would otherwise grow the set forever.
const maxWarned = 1000

// unknownHops are the names a Policy has warned of.
type unknownHops struct {
	seen sync.Map // name → struct{}
	n    atomic.Int64
}

// UnknownHopError is a hop name that the policy does not list (from Check
// and LoadWith): its calls would run under the default.
type UnknownHopError struct {
	// Hop is the name.
	Hop string
	// Policy names the policy: its file, else its name.
	Policy string
	// Suggest is the listed hop whose name is closest, or "".
	Suggest string
}

func (e *UnknownHopError) Error() string {
	s := fmt.Sprintf("enforce: hop %q is not in policy %s", e.Hop, e.Policy)
	if e.Suggest != "" {
		s += fmt.Sprintf(" (did you mean %q?)", e.Suggest)
	}
	return s
}

// Check reports each of hops (the names a service calls) that the policy
// does not list and Options.DefaultHops does not name, as an
// *UnknownHopError, joined: a mistyped name that would run under the
// default. A policy that lists no hop at all runs every hop under its
// default by design, and Check accepts any name.
func (p *Policy) Check(hops ...string) error {
	if len(p.pol.Hops) == 0 {
		return nil
	}
	var errs []error
	seen := map[string]bool{}
	for _, h := range hops {
		if seen[h] {
			continue
		}
		seen[h] = true
		if _, ok := p.pol.Hops[h]; ok || p.defaults[h] {
			continue
		}
		errs = append(errs, &UnknownHopError{Hop: h, Policy: p.label(), Suggest: p.closest(h)})
	}
	return errors.Join(errs...)
}

// label names the policy in a message.
func (p *Policy) label() string {
	switch {
	case p.pol.Path != "":
		return p.pol.Path
	case p.pol.Name != "":
		return fmt.Sprintf("%q", p.pol.Name)
	}
	return "(unnamed)"
}

// unknownHop warns, the first time, of a call to a hop the policy does not
// list.
func (p *Policy) unknownHop(hop string) {
	u := &p.unknown
	if _, ok := u.seen.Load(hop); ok || u.n.Load() >= maxWarned {
		return
	}
	if _, loaded := u.seen.LoadOrStore(hop, struct{}{}); loaded {
		return
	}
	n := u.n.Add(1)
	if n > maxWarned {
		return
	}
	suggest := p.closest(hop)
	p.observe(Event{Kind: KindUnknownHop, Hop: hop, Suggest: suggest})
	msg := fmt.Sprintf("enforce: hop %q is not in policy %s: its calls run under the default (%s)", hop, p.label(), describe(p.pol.Default))
	if suggest != "" {
		msg += fmt.Sprintf("; did you mean %q?", suggest)
	}
	if n == maxWarned {
		msg += fmt.Sprintf(" (%d unknown hop names reported: further ones are not)", n)
	}
	p.warn(msg)
}

// describe is a hop's policy in a few words.
func describe(h policy.Hop) string {
	t := "no timeout"
	if h.Timeout > 0 {
		t = h.Timeout.String() + " timeout"
	}
	return t + ", " + units.Count(h.Retries, "retry", "retries")
}

// closest returns the listed hop most like name: the same but for case;
// else the nearest by edit distance, within a third of the name's length
// (at most 3; not looked for among more than 20,000 hops); else the one
// hop whose name holds name (case aside), or "".
func (p *Policy) closest(name string) string {
	names := make([]string, 0, len(p.pol.Hops))
	for h := range p.pol.Hops {
		names = append(names, h)
	}
	sort.Strings(names)
	for _, h := range names {
		if strings.EqualFold(h, name) {
			return h
		}
	}
	lname := strings.ToLower(name)
	if len(names) <= 20_000 {
		most := min(3, max(1, len([]rune(name))/3))
		best, bestD := "", most+1
		for _, h := range names {
			if d := editDistance(lname, strings.ToLower(h), most); d < bestD {
				best, bestD = h, d
			}
		}
		if best != "" {
			return best
		}
	}
	if len(lname) >= 3 {
		found := ""
		for _, h := range names {
			if strings.Contains(strings.ToLower(h), lname) {
				if found != "" {
					return "" // several: none is the one
				}
				found = h
			}
		}
		return found
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b (in runes), or
// most+1 once it is sure to exceed most.
func editDistance(a, b string, most int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > most || -d > most {
		return most + 1
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		low := cur[0]
		for j := 1; j <= len(rb); j++ {
			sub := prev[j-1]
			if ra[i-1] != rb[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
			low = min(low, cur[j])
		}
		if low > most {
			return most + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
