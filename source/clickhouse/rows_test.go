package clickhouse

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/ingest"
	"github.com/tailscope/tailscope/span"
)

// encodeRowBinary writes rows as RowBinaryWithNamesAndTypes: each row
// maps an alias to an int64, a string, []string or [][]string; names
// gives the columns' order.
func encodeRowBinary(names []string, rows ...map[string]any) []byte {
	var b []byte
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, n := range names {
		str(n)
	}
	for _, n := range names {
		str(aliasType[n])
	}
	for _, r := range rows {
		for _, n := range names {
			switch v := r[n].(type) {
			case int64:
				b = binary.LittleEndian.AppendUint64(b, uint64(v))
			case int:
				b = binary.LittleEndian.AppendUint64(b, uint64(v))
			case string:
				str(v)
			case []string:
				b = binary.AppendUvarint(b, uint64(len(v)))
				for _, s := range v {
					str(s)
				}
			case [][]string:
				b = binary.AppendUvarint(b, uint64(len(v)))
				for _, a := range v {
					b = binary.AppendUvarint(b, uint64(len(a)))
					for _, s := range a {
						str(s)
					}
				}
			case nil:
				switch aliasType[n] {
				case tInt64:
					b = binary.LittleEndian.AppendUint64(b, 0)
				default:
					b = append(b, 0)
				}
			default:
				panic(fmt.Sprintf("%s: %T", n, v))
			}
		}
	}
	return b
}

// allAliases are the columns of a query over the exporter's table.
var allAliases = []string{aStart, aDur, aTrace, aSpan, aParent, aName, aService, aKind, aStatus, aMessage, aState, aScope, aScopeVer, aResKeys, aResVals, aKeys, aVals, aExcKeys, aExcVals}

var sampleRow = map[string]any{
	aStart: int64(1675080360123456789), aDur: int64(5000), aTrace: "5b8efff798038103d269b633813fc60c", aSpan: "eee19b7ec3c1b174",
	aParent: "eee19b7ec3c1b173", aName: "GET /x", aService: "api", aKind: "Client", aStatus: "Error", aMessage: "context deadline exceeded",
	aState: "ot=th:8", aScope: "lib", aScopeVer: "1.0", aResKeys: []string{"service.name", "zone"}, aResVals: []string{"api", "a"},
	aKeys: []string{"http.response.status_code", "retry.attempt"}, aVals: []string{"504", "2"},
	aExcKeys: [][]string{{"exception.type"}}, aExcVals: [][]string{{"java.net.SocketTimeoutException"}},
}

// decodeAll converts an answer into OTLP lines.
func decodeAll(b []byte, max int) ([]byte, error) {
	d, err := newDecoder(bufio.NewReader(bytes.NewReader(b)), max)
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []byte
	for {
		line, err := d.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, line...)
	}
}

// TestRowRead: a row read back through the OTLP reader is the span the
// row describes.
func TestRowRead(t *testing.T) {
	lines, err := decodeAll(encodeRowBinary(allAliases, sampleRow, sampleRow), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var got []span.Span
	if _, err := ingest.ReadStream("row", bytes.NewReader(lines), ingest.Options{}, ingest.SinkFunc(func(sp *span.Span) { got = append(got, *sp) })); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d spans from %s", len(got), lines)
	}
	sp := got[0]
	if sp.Service != "api" || sp.Name != "GET /x" || sp.Kind != "client" || sp.Start != 1675080360123456789 || sp.Duration != 5000 ||
		sp.Status != span.Error || !sp.Timeout || sp.Code != 504 || !sp.AttemptSet || sp.Attempt != 2 || sp.ParentID == "" {
		t.Errorf("read back as %+v\nfrom %s", sp, lines)
	}
}

// TestHeader: an answer whose header is not what the query asked for is
// refused, naming the column.
func TestHeader(t *testing.T) {
	b := encodeRowBinary([]string{aStart, aDur, aName})
	b = bytes.Replace(b, []byte("\x06String"), []byte("\x06UInt64"), 1)
	if _, err := decodeAll(b, 1<<20); err == nil || !strings.Contains(err.Error(), "column n is UInt64, want String") {
		t.Errorf("got %v", err)
	}
	if _, err := decodeAll(encodeRowBinary([]string{aName}), 1<<20); err == nil || !strings.Contains(err.Error(), "no start or duration") {
		t.Errorf("got %v", err)
	}
	if _, err := decodeAll(encodeRowBinary(allAliases, map[string]any{aName: strings.Repeat("x", 5000)}), 1000); err == nil || !strings.Contains(err.Error(), "longer than the limit") {
		t.Errorf("got %v", err)
	}
}

func TestKindAndStatus(t *testing.T) {
	for in, want := range map[string]int{"Server": 2, "SPAN_KIND_CLIENT": 3, "producer": 4, "5": 5, "": 0, "Unspecified": 0, "weird": 0} {
		if got := kindNumber([]byte(in)); got != want {
			t.Errorf("kindNumber(%q) = %d, want %d", in, got, want)
		}
	}
	for in, want := range map[string]int{"Ok": 1, "STATUS_CODE_ERROR": 2, "Unset": 0, "2": 2, "x": 0} {
		if got := statusNumber([]byte(in)); got != want {
			t.Errorf("statusNumber(%q) = %d, want %d", in, got, want)
		}
	}
}

// FuzzRowBinary feeds any bytes as the query's answer. The property: no
// panic, no allocation beyond the row's limit, and what converts is JSON
// lines that the OTLP reader reads without an error.
func FuzzRowBinary(f *testing.F) {
	f.Add(encodeRowBinary(allAliases, sampleRow))
	f.Add(encodeRowBinary([]string{aStart, aDur, aTrace, aSpan}, map[string]any{aStart: int64(-1), aDur: int64(-5)}))
	f.Add(encodeRowBinary(allAliases, map[string]any{aStart: int64(1<<63 - 1), aDur: int64(1<<63 - 1), aName: "\x00\xff\xfe", aResKeys: []string{"a"}, aExcKeys: [][]string{{}}}))
	f.Add(append(encodeRowBinary(allAliases, sampleRow), "Code: 241. DB::Exception: Memory limit exceeded\n"...))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, _ := decodeAll(b, 1<<16)
		if len(out) == 0 {
			return
		}
		if !valid(out) || !bytes.HasSuffix(out, []byte("\n")) {
			t.Fatalf("not JSON lines: %q", out)
		}
		if _, err := ingest.ReadStream("row", bytes.NewReader(out), ingest.Options{}, ingest.SinkFunc(func(*span.Span) {})); err != nil {
			t.Fatalf("the reader failed on %q: %v", out, err)
		}
	})
}

func BenchmarkRow(b *testing.B) {
	var rows []map[string]any
	for range 1000 {
		rows = append(rows, sampleRow)
	}
	in := encodeRowBinary(allAliases, rows...)
	b.SetBytes(int64(len(in)) / 1000)
	b.ResetTimer()
	for i := 0; i < b.N; i += 1000 {
		d, err := newDecoder(bufio.NewReader(bytes.NewReader(in)), 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := d.next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}
