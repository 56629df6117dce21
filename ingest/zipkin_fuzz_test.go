package ingest_test

import (
	"testing"
)

func FuzzZipkin(f *testing.F) {
	f.Add([]byte("[" + zkSpan(`"kind":"CLIENT","tags":{"error":""},"remoteEndpoint":{"serviceName":"db"}`) + "]"))
	f.Add([]byte(`[[{"traceId":"aa","id":"1","shared":true,"kind":"SERVER","duration":5}],[]]`))
	f.Add([]byte(zkSpan("") + "\n" + `[{"id":}]`))
	f.Add([]byte("\xef\xbb\xbf[  \n" + zkSpan(`"tags":{"grpc.status_code":"deadline exceeded","retry.attempt":"0"}`) + " ,\n [" + zkSpan("") + "]]"))
	f.Fuzz(func(t *testing.T, data []byte) { tjFuzzProperty(t, "zipkin", data) })
}
