package clickhouse_test

import (
	"context"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/source/clickhouse"
)

// openErr is the error of opening (and reading) url.
func openErr(url string, o clickhouse.Options) error {
	o.Since, o.Until = time.Unix(0, 0), time.Unix(1, 0)
	o.Backoff = time.Millisecond
	s, err := clickhouse.Open(context.Background(), url, o)
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = io.Copy(io.Discard, s)
	return err
}

// TestErrors: a server that is down, a wrong database or table, a table
// without the columns needed and refused credentials each get an error
// that names what is missing, and never shows the password.
func TestErrors(t *testing.T) {
	e := startEngine(t, "s3cret-key")
	e.createExporterTable(t, "otel", "otel_traces")
	e.exec(t, "CREATE TABLE otel.partial (Timestamp DateTime64(9), TraceId String, SpanId String, SpanName String, ServiceName String, Duration String) ENGINE = MergeTree ORDER BY Timestamp")
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	down := ln.Addr().String()
	ln.Close()
	ok := clickhouse.Options{Password: "s3cret-key"}
	for _, c := range []struct {
		name, url string
		o         clickhouse.Options
		want      string
	}{
		{"down", "clickhouse://" + down + "/otel", clickhouse.Options{Retries: -1}, `connection refused: is ClickHouse's HTTP interface there \(port 8123`},
		{"no database", "clickhouse://" + e.host + "/nope", ok, `no database "nope" on .*databases there: .*"otel"`},
		{"no table", "clickhouse://" + e.host + "/otel?table=spans", ok, `no table "spans" in database "otel" \(tables there: "otel_traces", "partial"\); name it with \?table=`},
		{"columns", "clickhouse://" + e.host + "/otel?table=partial", ok, `table otel.partial lacks what tailscope needs: status \(column StatusCode\); has columns of another type: Duration is String, want an integer of ns for duration`},
		{"mapped", "clickhouse://" + e.host + "/otel?table=partial&col.duration=", ok, `lacks what tailscope needs: duration \(no column mapped: col.duration=COLUMN\), status`},
		{"password", "clickhouse://" + e.host + "/otel", clickhouse.Options{Password: "wrong-pass"}, `HTTP 401 Unauthorized: Code: 516\. .*AUTHENTICATION_FAILED.*\$CLICKHOUSE_PASSWORD`},
		{"in the url", "clickhouse://default:s3cret-key@" + e.host + "/otel", ok, `credentials in the URL would be printed`},
		{"unknown schema", "clickhouse://" + e.host + "/otel?schema=jaeger", ok, `unknown schema "jaeger" \(known: otel`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := openErr(c.url, c.o)
			if err == nil {
				t.Fatal("no error")
			}
			if !regexp.MustCompile(c.want).MatchString(err.Error()) {
				t.Errorf("error %q\nwant it to match %s", err, c.want)
			}
			for _, secret := range []string{"s3cret-key", "wrong-pass"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows the password: %v", err)
				}
			}
		})
	}
}
