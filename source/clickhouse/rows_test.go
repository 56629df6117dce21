package clickhouse

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/span"
)

// A row as the query gives it, for the seeds and the tests.
const sampleRow = `{"s":1675080360123456789,"d":"5000","t":"5b8efff798038103d269b633813fc60c","i":"eee19b7ec3c1b174","p":"eee19b7ec3c1b173","n":"GET /x","sv":"api","k":"Client","c":"Error","m":"context deadline exceeded","ts":"ot=th:8","sn":"lib","sr":"1.0","rk":["service.name","zone"],"rv":["api","a"],"ak":["http.response.status_code","retry.attempt"],"av":["504","2"],"ek":[["exception.type"]],"ev":[["java.net.SocketTimeoutException"]]}`

// TestRowRead: a row read back through the OTLP reader is the span the
// row describes.
func TestRowRead(t *testing.T) {
	var c converter
	line, err := c.row([]byte(sampleRow))
	if err != nil {
		t.Fatal(err)
	}
	var got []span.Span
	if _, err := ingest.ReadStream("row", bytes.NewReader(line), ingest.Options{}, ingest.SinkFunc(func(sp *span.Span) { got = append(got, *sp) })); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("%d spans from %s", len(got), line)
	}
	sp := got[0]
	if sp.Service != "api" || sp.Name != "GET /x" || sp.Kind != "client" || sp.Start != 1675080360123456789 || sp.Duration != 5000 ||
		sp.Status != span.Error || !sp.Timeout || sp.Code != 504 || !sp.AttemptSet || sp.Attempt != 2 || sp.ParentID == "" {
		t.Errorf("read back as %+v\nfrom %s", sp, line)
	}
}

func TestKindAndStatus(t *testing.T) {
	for in, want := range map[string]int{"Server": 2, "SPAN_KIND_CLIENT": 3, "producer": 4, "5": 5, "": 0, "Unspecified": 0, "weird": 0} {
		if got := kindNumber(in); got != want {
			t.Errorf("kindNumber(%q) = %d, want %d", in, got, want)
		}
	}
	for in, want := range map[string]int{"Ok": 1, "STATUS_CODE_ERROR": 2, "Unset": 0, "2": 2, "x": 0} {
		if got := statusNumber(in); got != want {
			t.Errorf("statusNumber(%q) = %d, want %d", in, got, want)
		}
	}
}

// FuzzRow feeds any line as a row of the answer. The property: no
// panic, and a row that converts is one valid JSON document on a line,
// which the OTLP reader reads without an error.
func FuzzRow(f *testing.F) {
	f.Add([]byte(sampleRow))
	f.Add([]byte(`{"s":"1","d":"-5","t":"","i":""}`))
	f.Add([]byte(`{"s":9223372036854775807,"d":9223372036854775807,"n":"\u0000\ud800","rk":["a"],"rv":[],"ek":[[]],"ev":[]}`))
	f.Add([]byte(`Code: 241. DB::Exception: Memory limit exceeded`))
	f.Add([]byte(`{"s":1,"d":1,"ak":["k","k"],"av":["\xff","v"]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var c converter
		out, err := c.row(b)
		if err != nil {
			return
		}
		if !valid(out) || bytes.Count(out, []byte("\n")) != 1 || !bytes.HasSuffix(out, []byte("\n")) {
			t.Fatalf("not one JSON line: %q", out)
		}
		if _, err := ingest.ReadStream("row", bytes.NewReader(out), ingest.Options{}, ingest.SinkFunc(func(*span.Span) {})); err != nil && !strings.Contains(err.Error(), "row") {
			t.Fatalf("the reader failed on %q: %v", out, err)
		}
	})
}
