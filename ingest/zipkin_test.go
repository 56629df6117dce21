package ingest_test

import (
	"strconv"
	"strings"
	"testing"
)

func zkSpan(extra string) string {
	s := `{"traceId":"00000000000000aa","id":"0000000000000001","name":"get","timestamp":1000,"duration":250,"localEndpoint":{"serviceName":"svc"}`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

const zkT = "T=000000000000000000000000000000aa S=0000000000000001"

func TestZipkinVariants(t *testing.T) {
	one := zkT + " svc|get 1000000+250000 unset"
	cases := []tjCase{
		{name: "array", in: "[" + zkSpan("") + "]", want: []string{one}, sniff: "zipkin"},
		{name: "array of arrays", in: "[[" + zkSpan("") + "," + zkSpan("") + "],[" + zkSpan("") + "],[]]", want: []string{one, one, one}, sniff: "zipkin"},
		{name: "lone span object", format: "zipkin", in: zkSpan("") + "\n" + zkSpan(""), want: []string{one, one}},
		{name: "no timestamp keeps the span at 0", in: `[{"traceId":"aa","id":"1","name":"get","duration":250,"localEndpoint":{"serviceName":"svc"}}]`,
			want: []string{zkT + " svc|get 0+250000 unset"}},
		{name: "error tag presence", in: "[" + strings.Join([]string{
			zkSpan(`"tags":{"error":""}`),
			zkSpan(`"tags":{"error":"404","http.status_code":"404"}`),
			zkSpan(`"tags":{"error":"java.net.SocketTimeoutException: Read timed out"}`),
			zkSpan(`"tags":{"http.status_code":"504"}`),
		}, ",") + "]",
			want: []string{
				zkT + " svc|get 1000000+250000 error",
				zkT + " svc|get 1000000+250000 error code=404",
				zkT + " svc|get 1000000+250000 error timeout",
				zkT + " svc|get 1000000+250000 error timeout code=504",
			}},
		{name: "kinds, peers, attempts", in: "[" + strings.Join([]string{
			zkSpan(`"kind":"CLIENT","remoteEndpoint":{"serviceName":"db","ipv4":"10.0.0.1"},"tags":{"peer.service":"other","x-envoy-attempt-count":"2"}`),
			zkSpan(`"kind":"PRODUCER","remoteEndpoint":{"ipv4":"10.0.0.1"},"tags":{"server.address":"kafka"}`),
			zkSpan(`"kind":"CONSUMER"`),
		}, ",") + "]",
			want: []string{
				zkT + " svc|get|client 1000000+250000 unset attempt=2 peer=db",
				zkT + " svc|get|producer 1000000+250000 unset peer=kafka",
				zkT + " svc|get|consumer 1000000+250000 unset",
			}},
		{name: "shared server half", in: "[" + zkSpan(`"parentId":"0000000000000009","kind":"CLIENT"`) + "," +
			`{"traceId":"aa","parentId":"9","id":"1","kind":"SERVER","name":"get","timestamp":1010,"duration":200,"localEndpoint":{"serviceName":"api"},"shared":true}]`,
			want: []string{
				zkT + " P=0000000000000009 svc|get|client 1000000+250000 unset",
				"T=000000000000000000000000000000aa S=0000000000000001:server P=0000000000000001 api|get|server 1010000+200000 unset",
			}},
		{name: "attr hop from tags", hopBy: "attr:http.route", in: "[" + zkSpan(`"tags":{"http.route":"/a"}`) + "]", want: []string{one + " hop=/a"}},
	}
	tjRunCases(t, cases)
}

func TestZipkinBadInput(t *testing.T) {
	one := zkT + " svc|get 1000000+250000 unset"
	good := zkSpan("")
	cases := []tjCase{
		{name: "empty input", format: "zipkin", in: ""},
		{name: "empty array", in: "[]"},
		{name: "bad spans", in: "[" + strings.Join([]string{good,
			`{"traceId":"aa","id":"1","name":"get","timestamp":1000}`,
			zkSpan(`"kind":"SIDEWAYS"`),
			zkSpan(`"tags":{"a":{"b":1}}`),
			zkSpan(`"duration":"x"`),
			zkSpan(`"localEndpoint":"svc"`),
			`5`, `"s"`, `null`,
			`[5]`,
		}, ",") + "]",
			// Only the duration is required: a kind, tags or an endpoint
			// that cannot be read cost the span those values.
			want:  []string{one, one, one, one},
			skips: map[string]int64{"missing duration": 1, "bad value": 1, "not a span": 4},
			errHas: []string{"in.json:1: span 2: missing duration: at byte " + strconv.Itoa(len("["+good+",")), "span 5: bad value: at byte",
				"span 7: not a span", "span 8: not a span", "span 9: not a span", "span 10: not a span"},
			ignored: map[string]int64{"kind": 1, "localEndpoint": 1, "tags": 1}, ignHas: []string{"span 3: kind", "span 4: tags", "span 6: localEndpoint"}},
		{name: "truncated", in: tjCut("["+good+","+good+","+good+"]", good+","+good, 20),
			want: []string{one, one}, skips: map[string]int64{"truncated JSON": 1}, errHas: []string{"in.json:1: span 3: truncated JSON: at byte"}},
		// The bad element costs itself: the walker finds its end by its
		// brackets and goes on with the next.
		{name: "syntax error in the array", in: "[" + good + ",{\"id\":}," + good + "]",
			want: []string{one, one}, skips: map[string]int64{"bad JSON": 1}, errHas: []string{"in.json:1: span 2: bad JSON: at byte "}},
	}
	tjRunCases(t, cases)
}
