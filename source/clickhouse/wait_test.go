package clickhouse

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tailscope/tailscope/option"
)

// TestAggregateWait: an answer that begins after --fetch-timeout fails a
// pulled read's request, but not a push-down's, whose wait for the
// server's aggregation is bounded by begin instead.
func TestAggregateWait(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(400 * time.Millisecond)
		io.WriteString(w, "ok\n")
	}))
	defer s.Close()
	tg, err := Parse("clickhouse://" + strings.TrimPrefix(s.URL, "http://") + "/otel")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Timeout: 100 * time.Millisecond, Retries: -1, Names: func(o option.Option) string { return "<" + o.String() + ">" }}.withDefaults(time.Now())
	c := &client{t: tg, o: o, report: func(func(*Progress)) {}}
	if _, err := c.queryAll(context.Background(), "SELECT 1"); err == nil || !strings.Contains(err.Error(), "no answer within 100ms (<FetchTimeout>)") {
		t.Errorf("pulled: %v", err)
	}
	c = &client{t: tg, o: o, begin: 2 * time.Second, report: func(func(*Progress)) {}}
	if b, err := c.queryAll(context.Background(), "SELECT 1"); err != nil || string(b) != "ok\n" {
		t.Errorf("pushed down: %q, %v", b, err)
	}
}
