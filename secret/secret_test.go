package secret

import (
	"strings"
	"testing"
)

func TestKey(t *testing.T) {
	for _, k := range []string{"Authorization", "authorization", "http.request.header.authorization", "Proxy-Authorization",
		"cookie", "Set-Cookie", "http.response.header.set-cookie", "password", "db.password", "userPassword", "PASSWD",
		"api_key", "apiKey", "X-Api-Key", "x-api-key", "access_token", "accessToken", "refresh-token", "id_token", "csrf_token",
		"client_secret", "clientSecret", "aws.secret", "private_key", "privateKey", "session", "session.id", "sessionid", "jwt",
		"X-Amz-Signature", "credentials", "auth", "auth.token", "token"} {
		if !Key(k) {
			t.Errorf("Key(%q) = false, want true", k)
		}
	}
	for _, k := range []string{"k8s.pod.name", "host.name", "service.version", "cloud.zone", "http.route", "http.url", "url.full",
		"gen_ai.usage.input_tokens", "max_tokens", "author", "oauth.provider.name", "db.statement", "user.id", "peer.service", "keyspace", "cache.key", ""} {
		if Key(k) {
			t.Errorf("Key(%q) = true, want false", k)
		}
	}
}

func TestScrub(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"https://api.example.com/v1/items?access_token=abc123&page=2", "https://api.example.com/v1/items?access_token=[redacted]&page=2"},
		{"/login?user=bob&password=hunter2#top", "/login?user=bob&password=[redacted]#top"},
		{"https://x/?api_key=K1&apiKey=K2&X-Amz-Signature=deadbeef", "https://x/?api_key=[redacted]&apiKey=[redacted]&X-Amz-Signature=[redacted]"},
		{"Authorization: Bearer eyJhbGciOi.eyJzdWIi.sig", "Authorization: [redacted]"},
		{"Bearer abcdef123456", "Bearer [redacted]"},
		{"basic dXNlcjpwYXNz", "basic [redacted]"},
		{"postgres://admin:s3cret@db:5432/app", "postgres://admin:[redacted]@db:5432/app"},
		{`{"user":"bob","password":"hunter2","n":1}`, `{"user":"bob","password":"[redacted]","n":1}`},
		{"session=xyz; theme=dark", "session=[redacted]; theme=dark"},
		{"token is eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc here", "token is [redacted] here"},
		{"key AKIAABCDEFGHIJKLMNOP used", "key [redacted] used"},
		{"ghp_0123456789abcdefghijABCDEFGHIJ", "[redacted]"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "[redacted]"},
		// Left alone: ordinary values.
		{"checkout-7d9f8b-x2x4z", "checkout-7d9f8b-x2x4z"},
		{"https://shop/cart?item=12&qty=3", "https://shop/cart?item=12&qty=3"},
		{"GET /users/{id}", "GET /users/{id}"},
		{"12:30:00", "12:30:00"},
		{"eu-west-1a", "eu-west-1a"},
		{"basic", "basic"},
	} {
		got := Scrub(c.in)
		if got != c.want {
			t.Errorf("Scrub(%q) = %q, want %q", c.in, got, c.want)
		}
		if again := Scrub(got); again != got {
			t.Errorf("Scrub is not idempotent on %q: %q", got, again)
		}
	}
}

func TestAttr(t *testing.T) {
	if got := Attr("http.request.header.authorization", "opaque"); got != Redacted {
		t.Errorf("by key: %q", got)
	}
	if got := Attr("k8s.pod.name", "cart-1"); got != "cart-1" {
		t.Errorf("instance attribute: %q", got)
	}
	if got := Attr("url.full", "https://x/?token=abc"); strings.Contains(got, "abc") {
		t.Errorf("by value: %q", got)
	}
}

// FuzzScrub: never panics, is idempotent, and leaves text without a
// separator or token shape as it is.
func FuzzScrub(f *testing.F) {
	for _, s := range []string{"", "a=b", "password=x", "Authorization: Bearer x", "://u:p@h", "eyJa.eyJb.c", "'password'='", `"token":"`, "token:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Scrub(s)
		if again := Scrub(got); again != got {
			t.Fatalf("not idempotent: %q → %q → %q", s, got, again)
		}
		Key(s)
	})
}
