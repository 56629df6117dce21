package ingest_test

import (
	"testing"
)

func FuzzJaeger(f *testing.F) {
	f.Add([]byte(`{"data":[` + jgTrace(jgSpan("1", `"tags":[`+jgTag("error", "bool", "true")+`],"references":[{"refType":"CHILD_OF","spanID":"2"}]`)) + `]}`))
	f.Add([]byte("[" + jgTrace(jgSpan("1", `"startTime":"2020-01-01T00:00:00Z","duration":"1s"`)) + "]"))
	f.Add([]byte(jgTrace(jgSpan("1", `"process":{"serviceName":"x"},"tags":[`+jgTag("response_flags", "string", `"UT"`)+`]`))))
	f.Add([]byte("\xef\xbb\xbf{\"data\": [\n" + jgTrace(jgSpan("1", `"tags":[`+jgTag("http.status_code", "string", `"ECONNRESET"`)+`]`)) + " ,\n\n {\"traceID\":\"1\"}]}\n{\"other\":1}"))
	f.Fuzz(func(t *testing.T, data []byte) { tjFuzzProperty(t, "jaeger", data) })
}
