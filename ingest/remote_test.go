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
}

func (n *noted) Close() error    { return nil }
func (n *noted) Notes() []string { return n.notes }

func TestRemote(t *testing.T) {
	otlp := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"a"}}]},"scopeSpans":[{"spans":[` +
		`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"x","startTimeUnixNano":"1000","endTimeUnixNano":"2000"}]}]}]}` + "\n"
	zipkin := `[[{"traceId":"1","id":"2","name":"y","timestamp":1,"duration":5,"localEndpoint":{"serviceName":"b"}}]]` + "\n"
	r := memRemote{"mem://one?q={}": otlp, "mem://two": zipkin}
	var got []string
	st, err := ingest.Read([]string{"mem://one?q={}", "mem://two"}, ingest.Options{Remote: r}, func(s *span.Span) { got = append(got, s.Service+"/"+s.Name) })
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
	if _, err := ingest.Read([]string{"mem://three"}, ingest.Options{Remote: r}, func(*span.Span) {}); err == nil || err.Error() != "mem://three: HTTP 404" {
		t.Errorf("a stream that cannot be opened: %v", err)
	}
	// Without the remote, the same path is a missing file.
	if _, err := ingest.Read([]string{"mem://two"}, ingest.Options{}, func(*span.Span) {}); err == nil {
		t.Error("mem://two read without a remote")
	}
}
