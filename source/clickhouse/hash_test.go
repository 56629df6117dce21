package clickhouse_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/tailscope/tailscope/analyze"
)

// traceHashSQL is analyze.TraceHash of the text expression s, in
// ClickHouse SQL: the length times the golden ratio, then each 8-byte
// little-endian word of s xored in and mixed, then the rest of s (zero
// padded) and 0xff, mixed once more. It is what a server-side trace
// sample (docs/clickhouse.md) would filter on; here it is checked against
// the Go hash, so that the next step starts from a tested rule.
func traceHashSQL(s string) string {
	mix := func(x string) string {
		x = "bitXor(" + x + ", bitShiftRight(" + x + ", 30))"
		x = "(" + x + " * 13787848793156543929)"
		x = "bitXor(" + x + ", bitShiftRight(" + x + ", 27))"
		x = "(" + x + " * 10723151780598845931)"
		return "bitXor(" + x + ", bitShiftRight(" + x + ", 31))"
	}
	h0 := "(toUInt64(length(" + s + ")) * 11400714819323198485)"
	words := "arrayMap(i -> reinterpretAsUInt64(substring(" + s + ", i * 8 + 1, 8)), range(intDiv(length(" + s + "), 8)))"
	h := "arrayFold((acc, v) -> " + mix("bitXor(acc, v)") + ", " + words + ", " + h0 + ")"
	rest := "reinterpretAsUInt64(substring(" + s + ", intDiv(length(" + s + "), 8) * 8 + 1))"
	return mix("bitXor(bitXor(" + h + ", " + rest + "), 255)")
}

// TestTraceHashSQL: the SQL trace hash equals analyze.TraceHash, bit for
// bit, on ids of every length from 0 to 40 bytes and on the fixtures'.
func TestTraceHashSQL(t *testing.T) {
	e := startEngine(t, "")
	var ids []string
	for n := 0; n <= 40; n++ {
		ids = append(ids, strings.Repeat("0123456789abcdef\xff\x00é", 3)[:n])
	}
	for _, fx := range fixtures[:2] {
		for i, sp := range spansOf(t, fx.path, fx.opt) {
			if i%50 == 0 {
				ids = append(ids, toHex(sp.TraceID, 16), sp.TraceID)
			}
		}
	}
	var lits []string
	for _, id := range ids {
		lits = append(lits, "unhex('"+fmt.Sprintf("%x", id)+"')")
	}
	out := e.exec(t, "SELECT "+traceHashSQL("s")+" FROM (SELECT arrayJoin(["+strings.Join(lits, ", ")+"]) AS s) FORMAT TSV")
	got := strings.Fields(out)
	if len(got) != len(ids) {
		t.Fatalf("%d hashes for %d ids", len(got), len(ids))
	}
	for i, id := range ids {
		if h, _ := strconv.ParseUint(got[i], 10, 64); h != analyze.TraceHash(id) {
			t.Errorf("%q: SQL %d, Go %d", id, h, analyze.TraceHash(id))
		}
	}
}
