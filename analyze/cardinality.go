package analyze

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/secret"
	"github.com/tailscope/tailscope/span"
)

// Hop names that carry ids (docs/DESIGN.md §4, "Unbounded hop names").
//
// Instrumentation that names a span by its URL path rather than by its
// route template ("GET /users/12345" instead of "GET /users/{id}") makes
// every id its own hop: the hop table grows with the traffic, each hop is
// seen a handful of times (too few for any percentile), and a policy
// listing them is as long as the logs. The analysis still runs in time
// and memory linear in the hops; the report says what happened and which
// --hop-by would bound the hops.

// WarnUnboundedHops is the code of the warning that the hop names look
// unbounded (a contract, like every warning code).
const WarnUnboundedHops = "unbounded-hops"

// The rule, from the definition rather than from one generator: a hop
// name is id-laden when one of its segments is an id (see idSegment), and
// its template is the name with every id segment replaced by {id}. The
// hops look unbounded when
//
//   - at least minIDHops hops share a template with another hop (names
//     that differ only in ids: one id-looking name alone proves nothing),
//   - they are at least half of all hops (a few id-laden hops among many
//     named ones do not make the table unbounded), and
//   - their templates are at most a quarter as many as they are (each
//     template stands for several ids on average: the names are ids of a
//     few routes, not a few routes that happen to carry a version number).
const (
	minIDHops        = 20
	idCollapseFactor = 4
)

// shownHops is how many hops the text, Markdown and HTML reports show
// when the hop names look unbounded: a display limit, which report owns
// (report.MaxShownHops). The unbounded-hops warning states it, in JSON
// too, and report sits above analyze and cannot be asked, so the number
// is written here as well; report's tests hold the two equal.
const shownHops = 50

// hopSeen is what the cardinality rule reads of one hop: its name, its
// attempts, and the fields of its first span that could name it instead.
type hopSeen struct {
	name     string
	attempts int
	first    hopFirst
}

// hopFirst is what a hop's first span says besides the hop name: the
// candidates of a bounded --hop-by.
type hopFirst struct {
	service, name, route string
	// routeKey is the attribute route came from (one of routeKeys).
	routeKey string
}

// routeKeys are the span attributes that hold a route template (OTel's
// http.route, url.template; the bounded name of a request's endpoint).
var routeKeys = []string{"http.route", "url.template"}

// Unbounded describes hop names that look unbounded; nil when they do not.
type Unbounded struct {
	// Hops is the number of hops, IDHops how many of them differ from
	// another only in id segments, under Templates templates.
	Hops, IDHops, Templates int
	// Few is how many of the IDHops have fewer than MinSamplesP99
	// attempts.
	Few int
	// Examples are a few id-laden names, one per template first.
	Examples []string
	// HopBy are the --hop-by values that would bound the id-laden hops,
	// best first (an attribute holding a route template, then the span
	// name when the hop is not it, then the service).
	HopBy []string
	// Unlisted is how many id-laden hops the recommended policy leaves to
	// its default (see collapseIDHops).
	Unlisted int
	// templ is the template of each id-laden hop.
	templ map[string]string
}

// IDLaden reports whether hop is one of the hops whose names differ only
// in ids.
func (u *Unbounded) IDLaden(hop string) bool {
	if u == nil {
		return false
	}
	_, ok := u.templ[hop]
	return ok
}

// unboundedHops applies the rule to the hops; it is linear in their
// number and total name length, plus a sort of the templates.
func unboundedHops(hops []hopSeen) *Unbounded {
	if len(hops) < minIDHops {
		return nil
	}
	type group struct {
		members []int
	}
	groups := map[string]*group{}
	var order []string
	templ := make([]string, len(hops))
	for i := range hops {
		t, ok := idTemplate(hops[i].name)
		if !ok {
			continue
		}
		templ[i] = t
		g := groups[t]
		if g == nil {
			g = &group{}
			groups[t] = g
			order = append(order, t)
		}
		g.members = append(g.members, i)
	}
	u := &Unbounded{Hops: len(hops), templ: map[string]string{}}
	for _, g := range groups {
		if len(g.members) < 2 {
			continue
		}
		u.Templates++
		u.IDHops += len(g.members)
	}
	if u.IDHops < minIDHops || 2*u.IDHops < len(hops) || idCollapseFactor*u.Templates > u.IDHops {
		return nil
	}
	// Largest templates first, for the examples.
	sort.SliceStable(order, func(i, j int) bool { return len(groups[order[i]].members) > len(groups[order[j]].members) })
	distinct := map[string]map[string]bool{"route": {}, "name": {}, "service": {}}
	known := map[string]int{} // id-laden hops whose first span gave the field
	for _, t := range order {
		g := groups[t]
		if len(g.members) < 2 {
			continue
		}
		for _, i := range g.members {
			h := &hops[i]
			u.templ[h.name] = t
			if h.attempts < MinSamplesP99 {
				u.Few++
			}
			for _, f := range [...]struct{ k, v string }{{"route", h.first.route}, {"name", h.first.name}, {"service", h.first.service}} {
				if f.v != "" {
					distinct[f.k][f.v] = true
					known[f.k]++
				}
			}
		}
	}
	for _, t := range order {
		if g := groups[t]; len(g.members) >= 2 && len(u.Examples) < 3 {
			u.Examples = append(u.Examples, hops[g.members[0]].name)
		}
	}
	// A --hop-by bounds the hops when, over the id-laden hops that say
	// (a reader may leave a field undecoded outside the trace sample, and
	// not every span has a route), it gives at most as many values as the
	// rule allows templates.
	bounds := func(key string) bool {
		n := len(distinct[key])
		return known[key] >= minIDHops && n > 0 && idCollapseFactor*n <= known[key]
	}
	if bounds("route") {
		u.HopBy = append(u.HopBy, "attr:"+u.routeKey(hops))
	}
	if bounds("name") {
		u.HopBy = append(u.HopBy, "name")
	}
	if bounds("service") {
		u.HopBy = append(u.HopBy, "service")
	}
	return u
}

// Warning is the unbounded-hops warning; it says how many hops the
// recommended policy left to its default (Unlisted), so it is made once
// the recommendation has run. It names HopBy by names.
func (u *Unbounded) Warning(names option.Names) Warning {
	hopBy := names.Of(option.HopBy)
	var b strings.Builder
	fmt.Fprintf(&b, "%d of the %d hops are names that differ only in ids (%d %s, e.g. %s); %d of them have fewer than %d attempts, too few for a p99",
		u.IDHops, u.Hops, u.Templates, units.Plural(u.Templates, "pattern", "patterns"), quoteJoin(u.Examples), u.Few, MinSamplesP99)
	if len(u.HopBy) > 0 {
		fmt.Fprintf(&b, ": the hop names look unbounded; group the spans by a bounded name with %s %s", hopBy, strings.Join(u.HopBy, " or "+hopBy+" "))
	} else {
		fmt.Fprintf(&b, ": the hop names look unbounded; give the spans a route name without ids (OTel's http.route) and group by it with %s attr:KEY", hopBy)
	}
	fmt.Fprintf(&b, ". Text, Markdown and HTML show the first %d hops, JSON all of them", shownHops)
	if u.Unlisted > 0 {
		fmt.Fprintf(&b, "; the recommended policy leaves %d id-laden %s measured too rarely for a timeout of their own to its default", u.Unlisted, units.Plural(u.Unlisted, "hop", "hops"))
	}
	return Warning{Code: WarnUnboundedHops, Message: b.String()}
}

func quoteJoin(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

// idTemplate returns name with every id segment replaced by {id}, and
// whether there was one. Segments are the runs between separators that
// do not occur inside ids (space, / ? & = : ; , . @ # | and brackets);
// within a segment that is not a whole id, parts between - and _ are
// looked at too ("order-12345").
func idTemplate(name string) (string, bool) {
	var b strings.Builder
	found := false
	start := 0
	flush := func(end int) {
		seg := name[start:end]
		switch {
		case seg == "":
		case idSegment(seg) || isUUID(seg):
			b.WriteString("{id}")
			found = true
		default:
			ps := 0
			for j := 0; j <= len(seg); j++ {
				if j < len(seg) && seg[j] != '-' && seg[j] != '_' {
					continue
				}
				if part := seg[ps:j]; part != "" && idSegment(part) {
					b.WriteString("{id}")
					found = true
				} else {
					b.WriteString(part)
				}
				if j < len(seg) {
					b.WriteByte(seg[j])
				}
				ps = j + 1
			}
		}
	}
	for i := 0; i < len(name); i++ {
		if isSep(name[i]) {
			flush(i)
			b.WriteByte(name[i])
			start = i + 1
		}
	}
	flush(len(name))
	if !found {
		return name, false
	}
	return b.String(), true
}

func isSep(c byte) bool {
	switch c {
	case ' ', '\t', '/', '?', '&', '=', ':', ';', ',', '.', '@', '#', '|', '(', ')', '[', ']', '{', '}', '<', '>', '"', '\'':
		return true
	}
	return false
}

// idSegment reports whether s (no separators, no - or _ unless a UUID's)
// is an id: all digits; hex of 8 or more with a digit (object ids,
// hashes); or 16 or more letters and digits that alternate at least three
// times (opaque tokens, base62 and base64url ids: their digits fall
// anywhere). Words, versions (v2), short codes and a word with a counter
// (PlaceOrder07) are not.
func idSegment(s string) bool {
	digits, hex, alnum, turns := 0, 0, 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i > 0 && isDigit(c) != isDigit(s[i-1]) {
			turns++
		}
		switch {
		case c >= '0' && c <= '9':
			digits++
			hex++
			alnum++
		case c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F':
			hex++
			alnum++
		case c >= 'g' && c <= 'z' || c >= 'G' && c <= 'Z':
			alnum++
		default:
			return false
		}
	}
	switch {
	case len(s) == 0:
		return false
	case digits == len(s):
		return true
	case hex == len(s) && len(s) >= 8 && digits > 0:
		return true
	}
	return alnum == len(s) && len(s) >= 16 && turns >= 3
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isUUID reports whether s is 8-4-4-4-12 hex digits.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
			continue
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// firstOf copies what a hop's first span says besides the hop name (sp's
// strings may be borrowed).
func firstOf(sp *span.Span) hopFirst {
	f := hopFirst{service: strings.Clone(sp.Service), name: strings.Clone(sp.Name)}
	for _, k := range routeKeys {
		for _, a := range sp.Attrs {
			if a.Key == k && a.Value != "" {
				f.route, f.routeKey = strings.Clone(secret.Scrub(a.Value)), k
				return f
			}
		}
	}
	return f
}

// UnboundedHops returns what the report found about unbounded hop names,
// nil when they look bounded.
func (r *Report) UnboundedHops() *Unbounded { return r.unbounded }

// routeKey is the route attribute most of the id-laden hops carry.
func (u *Unbounded) routeKey(hops []hopSeen) string {
	count := map[string]int{}
	for i := range hops {
		if _, ok := u.templ[hops[i].name]; ok && hops[i].first.routeKey != "" {
			count[hops[i].first.routeKey]++
		}
	}
	best := routeKeys[0]
	for _, k := range routeKeys {
		if count[k] > count[best] {
			best = k
		}
	}
	return best
}
