package policy

import (
	"strconv"
	"strings"

	"github.com/tailscope/tailscope/route"
)

// Endpoint is where the calls of one hop go (package route, where the
// analysis that maps hops to endpoints and the emitters that route by
// them meet; an alias here, so that a policy's users need not import it).
type Endpoint = route.Endpoint

// AnyCaller is how an endpoint without a known caller is named in a
// config (route.AnyCaller).
const AnyCaller = route.AnyCaller

// ValidHost reports whether s can name a called service in a config's
// hosts or domains: a DNS name (RFC 1123: labels of letters, digits and
// '-', not starting or ending with '-', at most 63 each, joined by '.',
// at most 253 in all; DNS is case-insensitive, so upper case letters
// are taken), with ":PORT" after it when port is set.
func ValidHost(s string, port bool) bool {
	if i := strings.LastIndexByte(s, ':'); port && i >= 0 {
		p := s[i+1:]
		if p == "" || len(p) > 5 {
			return false
		}
		for _, c := range p {
			if c < '0' || c > '9' {
				return false
			}
		}
		s = s[:i]
	}
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if !dnsLabel(l, true) {
			return false
		}
	}
	return true
}

// DNSLabel reports whether s is a DNS-1123 label in lower case, as a
// Kubernetes namespace must be.
func DNSLabel(s string) bool { return dnsLabel(s, false) }

func dnsLabel(l string, upper bool) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
		case upper && c >= 'A' && c <= 'Z':
		default:
			return false
		}
	}
	return true
}

// routable is eps with each mapped endpoint whose called service is not
// a valid host name (ValidHost) marked unmapped: no config routes it, and
// the config's notes list it.
func routable(eps []Endpoint, port bool) []Endpoint {
	out := eps
	for i, e := range eps {
		if e.Unmapped != "" || ValidHost(e.Service, port) {
			continue
		}
		if &out[0] == &eps[0] {
			out = append([]Endpoint(nil), eps...)
		}
		out[i].Unmapped = "not a valid host name (" + strconv.Quote(e.Service) + "): a called service must be a DNS name (RFC 1123)"
	}
	return out
}
