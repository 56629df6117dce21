// Package secret hides credentials in text that tailscope shows: attribute
// values in reports and partial summaries, and the details of skipped
// records. Spans carry whatever the instrumentation put in them — an
// Authorization header, a session cookie, a URL with access_token in its
// query — and attribution reports the values that stand out, so a
// credential that one client sends on every request would be printed in a
// pull-request comment or kept in a summary file.
//
// Two rules, both applied wherever text from the input is shown:
//
//   - by key (Key): an attribute whose key names a credential (authorization,
//     cookie, password, secret, token, api key, session, signature, private
//     key, in any case and spelling: x-api-key, accessToken, client_secret)
//     shows as [redacted] whatever its value;
//   - by value (Scrub): inside any text, the value of a name=value or
//     name: value pair whose name is such a key (a URL's query, a header
//     line, a JSON fragment), the credentials of a URL's user:password@,
//     the token after Bearer, Basic or Digest, and text shaped like a known
//     token (a JWT, AWS access key ids, GitHub, Slack and Stripe-style keys,
//     PEM private keys) become [redacted], the rest of the text kept.
//
// Ordinary attributes (k8s.pod.name, zone, version) are not touched. The
// package only rewrites text; it must not decide what is shown.
package secret

import (
	"regexp"
	"strings"
)

// Redacted replaces a hidden value.
const Redacted = "[redacted]"

// words are key segments (lower case, letters and digits only) that name a
// credential; a segment ending in one of suffixes does too (userPassword,
// csrf_token), and so does a pair of adjacent segments that joins into a
// word (api-key, access.token).
var words = map[string]bool{
	"authorization": true, "auth": true, "authtoken": true, "cookie": true, "cookies": true, "setcookie": true,
	"password": true, "passwd": true, "pwd": true, "passphrase": true, "secret": true, "secrets": true,
	"token": true, "accesstoken": true, "refreshtoken": true, "idtoken": true, "sessiontoken": true,
	"apikey": true, "apitoken": true, "xapikey": true, "privatekey": true, "credential": true, "credentials": true,
	"session": true, "sessionid": true, "jwt": true, "bearer": true, "signature": true, "clientsecret": true,
}

var suffixes = []string{"password", "passwd", "secret", "token", "apikey", "cookie", "credential", "credentials", "privatekey", "authorization", "sessionid"}

// Key reports whether an attribute key names a credential.
func Key(key string) bool {
	var segs [16]string
	n := 0
	lower := strings.ToLower(key)
	start := -1
	for i := 0; i <= len(lower); i++ {
		alnum := i < len(lower) && (lower[i] >= 'a' && lower[i] <= 'z' || lower[i] >= '0' && lower[i] <= '9')
		switch {
		case alnum && start < 0:
			start = i
		case !alnum && start >= 0:
			if n < len(segs) {
				segs[n] = lower[start:i]
				n++
			}
			start = -1
		}
	}
	for i := range n {
		s := segs[i]
		if words[s] {
			return true
		}
		for _, suf := range suffixes {
			if strings.HasSuffix(s, suf) {
				return true
			}
		}
		if i+1 < n && words[s+segs[i+1]] {
			return true
		}
	}
	return false
}

var (
	// scheme is the token after an Authorization scheme.
	scheme = regexp.MustCompile(`(?i)\b(bearer|basic|digest)(\s+)[A-Za-z0-9._~+/=\-]{4,}`)
	// userinfo is a URL's user:password@.
	userinfo = regexp.MustCompile(`(://[^/?#@\s:]*):[^/?#@\s]+@`)
	// shaped is text shaped like a known kind of token.
	shaped = regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*` +
		`|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b` +
		`|\bgh[pousr]_[A-Za-z0-9]{20,}` +
		`|\bxox[abposr]-[A-Za-z0-9\-]{10,}` +
		`|\b[sr]k_(?:live|test)_[A-Za-z0-9]{10,}` +
		`|\bsk-[A-Za-z0-9_\-]{20,}` +
		`|-----BEGIN[A-Z ]*PRIVATE KEY-----(?s:.*?)(?:-----END[A-Z ]*PRIVATE KEY-----|$)`)
)

// Scrub returns s with the credentials in it replaced by [redacted] (see
// the package comment). Text with none is returned as it is, without a
// copy; Scrub of its own result changes nothing.
func Scrub(s string) string {
	if !mayHold(s) {
		return s
	}
	s = pairs(s)
	s = userinfo.ReplaceAllString(s, "$1:"+Redacted+"@")
	// The scheme and the white space after it (any \s: a form feed too,
	// which a hand-written list once missed) stay; the token goes.
	s = scheme.ReplaceAllString(s, "${1}${2}"+Redacted)
	return shaped.ReplaceAllString(s, Redacted)
}

// mayHold is a cheap test that s could hold something Scrub replaces:
// most attribute values (pod names, zones, versions, numbers) do not, and
// skip the regular expressions.
func mayHold(s string) bool {
	if strings.ContainsAny(s, "=:") {
		return true
	}
	for _, x := range []string{"eyJ", "AKIA", "ASIA", "gh", "xox", "k_live_", "k_test_", "sk-", "-----BEGIN"} {
		if strings.Contains(s, x) {
			return true
		}
	}
	if strings.ContainsAny(s, " \t\r\n") {
		l := strings.ToLower(s)
		return strings.Contains(l, "bearer") || strings.Contains(l, "basic") || strings.Contains(l, "digest")
	}
	return false
}

// pairs hides the value of every name=value and name: value pair whose
// name is a credential key. The name is the run of letters, digits and
// _ . - [ ] before the separator (a quote around it allowed); the value
// runs to the closing quote when quoted, else to the next & # ; , or
// space after =, and to the next & ; , or line end after : (so that
// "Authorization: Bearer x" loses both words).
func pairs(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '=' && c != ':' {
			continue
		}
		// The name before the separator.
		e := i
		for e > 0 && s[e-1] == ' ' {
			e--
		}
		if e > 0 && (s[e-1] == '"' || s[e-1] == '\'') {
			e--
		}
		st := e
		for st > 0 && nameByte(s[st-1]) {
			st--
		}
		if st == e || !Key(s[st:e]) {
			continue
		}
		// The value after it.
		v := i + 1
		for v < len(s) && s[v] == ' ' {
			v++
		}
		var end int
		if v < len(s) && (s[v] == '"' || s[v] == '\'') {
			q := s[v]
			v++
			end = strings.IndexByte(s[v:], q)
			if end < 0 {
				end = len(s)
			} else {
				end += v
			}
		} else {
			stop := "&#;, \t\r\n\"'"
			if c == ':' {
				stop = "&;,\r\n\"'"
			}
			end = v
			for end < len(s) && strings.IndexByte(stop, s[end]) < 0 {
				end++
			}
			for end > v && s[end-1] == ' ' {
				end--
			}
		}
		if end <= v || s[v:end] == Redacted {
			continue
		}
		b.WriteString(s[last:v])
		b.WriteString(Redacted)
		last = end
		i = end - 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-' || c == '[' || c == ']'
}

// Attr is the value to show for attribute key=value: [redacted] when the
// key names a credential, else the value scrubbed.
func Attr(key, value string) string {
	if Key(key) {
		return Redacted
	}
	return Scrub(value)
}
