package policy

import (
	"fmt"
	"strings"
	"unicode"
)

// Idempotency decides which calls an emitted config may send again after
// they reached the called service: a retry on a server error, on a reset
// or on a per-attempt timeout, and a hedge, all resend a request the
// service may already have acted on (a second Charge, a second
// PlaceOrder). A call that is not idempotent is retried only when it
// cannot have reached the service (a connection that failed, a stream the
// server refused, a reset before the request was sent) and never hedged.
//
// The policy file's idempotent key says it for a hop (a hop inherits the
// default's like any key); without it, IdempotentRule decides from the
// endpoint.

// idempotentVerbs are the leading words of gRPC method names that read
// (Get, List, Read, Query, Check, Watch and their kin): repeating them
// changes nothing.
var idempotentVerbs = wordSet("Get", "List", "Read", "Query", "Check", "Watch", "Search", "Find", "Lookup",
	"Fetch", "Describe", "Count", "Exists", "Stat")

// mutatingVerbs are leading words of gRPC method names that change state
// (Charge, Place, Create, Send, Add, Empty, Update and their kin): named
// in the reason; any verb not known to read is taken as not idempotent.
var mutatingVerbs = wordSet("Charge", "Place", "Create", "Send", "Add", "Empty", "Update", "Delete", "Remove",
	"Insert", "Set", "Put", "Post", "Patch", "Submit", "Ship", "Pay", "Cancel", "Refund", "Transfer", "Write",
	"Increment", "Append", "Publish", "Push", "Upload", "Register", "Process", "Execute", "Run", "Start",
	"Stop", "Reserve", "Book", "Order", "Buy", "Apply", "Commit", "Save", "Store", "Modify", "Replace", "Upsert")

func wordSet(ws ...string) map[string]bool {
	m := map[string]bool{}
	for _, w := range ws {
		m[strings.ToLower(w)] = true
	}
	return m
}

// idempotentHTTP are the HTTP methods RFC 9110 defines as idempotent.
var idempotentHTTP = map[string]bool{"GET": true, "HEAD": true, "OPTIONS": true, "TRACE": true, "PUT": true, "DELETE": true}

// IdempotentRule is the documented default of the idempotent key for an
// endpoint, and why: an HTTP call by its method (GET, HEAD, OPTIONS,
// TRACE, PUT and DELETE are idempotent, POST, PATCH and any other not); a
// gRPC call by the verb its method name starts with (Get, List, Read,
// Query, Check, Watch, Search, Find, Lookup, Fetch, Describe, Count,
// Exists, Stat are; Charge, Place, Create, Send, Add, Empty, Update and
// every other verb are not); a call whose method is not known (a whole
// service, an HTTP route without a method) is not.
func IdempotentRule(e Endpoint) (bool, string) {
	switch {
	case e.IsGRPC():
		v := leadingVerb(e.GRPCMethod)
		lv := strings.ToLower(v)
		switch {
		case idempotentVerbs[lv]:
			return true, fmt.Sprintf("gRPC method %s reads (%s)", e.GRPCMethod, v)
		case mutatingVerbs[lv]:
			return false, fmt.Sprintf("gRPC method %s changes state (%s)", e.GRPCMethod, v)
		}
		return false, fmt.Sprintf("gRPC method %s: %s is not a verb known to read, so taken as not idempotent", e.GRPCMethod, v)
	case e.Method != "":
		m := strings.ToUpper(e.Method)
		if idempotentHTTP[m] {
			return true, "HTTP " + m + " is idempotent"
		}
		return false, "HTTP " + m + " is not idempotent"
	}
	return false, "no method known, so taken as not idempotent"
}

// idempotentFor is whether calls of e under the hop's policy h may be
// sent again after they reached the service, and why: the policy's
// idempotent key, else IdempotentRule.
func idempotentFor(h Hop, e Endpoint) (bool, string) {
	if h.Idempotent.Set() {
		return h.Idempotent == Idempotent, fmt.Sprintf("the policy says idempotent: %t", h.Idempotent == Idempotent)
	}
	return IdempotentRule(e)
}

// idempotentDefault is the same for the policy's default, which a config
// applies to calls of methods the logs did not show: not idempotent
// unless the policy's default says it is.
func idempotentDefault(d Hop) (bool, string) {
	if d.Idempotent.Set() {
		return d.Idempotent == Idempotent, fmt.Sprintf("the policy's default says idempotent: %t", d.Idempotent == Idempotent)
	}
	return false, "methods not in the logs are taken as not idempotent"
}

// leadingVerb is the first word of a method name: "GetCart" → "Get",
// "get_cart" → "get", "Charge" → "Charge".
func leadingVerb(m string) string {
	rs := []rune(m)
	for i := 1; i < len(rs); i++ {
		if rs[i] == '_' || unicode.IsUpper(rs[i]) && !unicode.IsUpper(rs[i-1]) {
			return string(rs[:i])
		}
	}
	return m
}
