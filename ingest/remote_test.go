package ingest_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/span"
)

// memRemote serves "mem://" paths from memory, as package source serves
// URLs: the readers must take its streams as files' content and keep its
// notes.
type memRemote map[string]string

func (m memRemote) Claims(path string) bool { return strings.HasPrefix(path, "mem://") }

func (m memRemote) Open(path string) (io.ReadCloser, error) {
	data, ok := m[path]
	if !ok {
		return nil, errors.New(path + ": HTTP 404")
	}
	return &noted{Reader: strings.NewReader(data), notes: []string{path + ": a sample"}}, nil
}

type noted struct {
	io.Reader
	notes []string
	err   error
}

func (n *noted) Close() error    { return nil }
func (n *noted) Notes() []string { return n.notes }
func (n *noted) Err() error      { return n.err }

// failing reads some of a document, then fails as a fetch does.
type failing struct{ n int }

func (f *failing) Read(p []byte) (int, error) {
	if f.n > 0 {
		f.n = 0
		return copy(p, "{\"resourceSpans\":[{\"scopeSpans\":["), nil
	}
	return 0, errors.New("GET http://x/api: HTTP 503")
}

func TestRemote(t *testing.T) {
	otlp := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"a"}}]},"scopeSpans":[{"spans":[` +
		`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"x","startTimeUnixNano":"1000","endTimeUnixNano":"2000"}]}]}]}` + "\n"
	zipkin := `[[{"traceId":"1","id":"2","name":"y","timestamp":1,"duration":5,"localEndpoint":{"serviceName":"b"}}]]` + "\n"
	r := memRemote{"mem://one?q={}": otlp, "mem://two": zipkin}
	var got []string
	st, err := ingest.Read([]string{"mem://one?q={}", "mem://two"}, ingest.Options{Remote: r}, ingest.SinkFunc(func(s *span.Span) { got = append(got, s.Service+"/"+s.Name) }))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "a/x,b/y" || st.Used != 2 {
		t.Errorf("read %v (%d used), want a/x, b/y", got, st.Used)
	}
	if strings.Join(st.Files, ",") != "mem://one?q={},mem://two" || st.Formats["mem://one?q={}"] != "otlp" || st.Formats["mem://two"] != "zipkin" {
		t.Errorf("files %v formats %v", st.Files, st.Formats)
	}
	if strings.Join(st.Notes, "|") != "mem://one?q={}: a sample|mem://two: a sample" {
		t.Errorf("notes %q: want each stream's", st.Notes)
	}
	if _, err := ingest.Read([]string{"mem://three"}, ingest.Options{Remote: r}, ingest.SinkFunc(func(*span.Span) {})); err == nil || err.Error() != "mem://three: HTTP 404" {
		t.Errorf("a stream that cannot be opened: %v", err)
	}
	// A fetch that fails mid-stream is reported as its own error, not at
	// the position where the decoder met it.
	fr := failRemote{}
	if _, err := ingest.Read([]string{"mem://four"}, ingest.Options{Remote: fr}, ingest.SinkFunc(func(*span.Span) {})); err == nil || err.Error() != "mem://four: GET http://x/api: HTTP 503" {
		t.Errorf("a failed fetch: %v", err)
	}
	// Without the remote, the same path is a missing file.
	if _, err := ingest.Read([]string{"mem://two"}, ingest.Options{}, ingest.SinkFunc(func(*span.Span) {})); err == nil {
		t.Error("mem://two read without a remote")
	}
}

type failRemote struct{}

func (failRemote) Claims(path string) bool { return strings.HasPrefix(path, "mem://") }

func (failRemote) Open(path string) (io.ReadCloser, error) {
	return &noted{Reader: &failing{n: 1}, err: errors.New("GET http://x/api: HTTP 503")}, nil
}
