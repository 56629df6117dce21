package flat

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/tailscope/tailscope/ingest/internal/jsonscan"
	"github.com/tailscope/tailscope/ingest/internal/record"
)

// fastAgrees decodes line with the fast path (layout ly carried over from
// earlier lines) and with the general path, and fails when the fast path
// answers something the general path does not. It reports whether the
// fast path answered.
func fastAgrees(t testing.TB, tab *fieldTable, ly *layout, line []byte) bool {
	t.Helper()
	// Both ways: interning everything, and deferring service and name
	// (lazy) until materialize.
	lazy := &flatRecord{intern: &record.Interner{}, lazy: true}
	lazyOK := tab.fastLine(lazy, ly, line)
	fast := &flatRecord{intern: &record.Interner{}}
	if !tab.fastLine(fast, ly, line) {
		if lazyOK {
			t.Fatalf("%q: taken only when lazy", line)
		}
		return false
	}
	if !lazyOK {
		t.Fatalf("%q: taken only when not lazy", line)
	}
	lazy.finish()
	lazy.materialize()
	fr, fd := fast.finish()
	if !reflect.DeepEqual(lazy.sp, fast.sp) {
		t.Fatalf("%q:\nlazy  %+v\neager %+v", line, lazy.sp, fast.sp)
	}
	slow := &flatRecord{intern: &record.Interner{}}
	var sc jsonscan.Scanner
	sr, sd := tab.decodeLine(&sc, slow, line)
	if fr != sr || fd != sd || !reflect.DeepEqual(fast.sp, slow.sp) {
		t.Fatalf("%q:\nfast    %+v %q %q\ngeneral %+v %q %q", line, fast.sp, fr, fd, slow.sp, sr, sd)
	}
	// Borrowing (attributes as views of the line): the same span.
	borrowed := &flatRecord{intern: &record.Interner{}, block: line, at: record.AttrSet{Borrow: true}}
	if !tab.fastLine(borrowed, ly, line) {
		t.Fatalf("%q: not taken when borrowing", line)
	}
	borrowed.finish()
	if !reflect.DeepEqual(fast.sp, borrowed.sp) {
		t.Fatalf("%q:\nowned    %+v\nborrowed %+v", line, fast.sp, borrowed.sp)
	}
	return true
}

// The fast path gives the general path's record on every line it takes,
// and takes the lines loggers write (with or without spaces, keys in any
// order, optional keys missing); it leaves escapes, nesting, bad values
// and bad syntax to the general path.
func TestFastLineAgrees(t *testing.T) {
	tab := newFieldTable(&record.Options{})
	take := []string{
		`{"trace_id":"t1","span_id":"s1","hop":"auth","start":1767225600000000000,"duration_ms":12.5,"status":"ok","code":200}`,
		`{"trace_id":"t1","span_id":"s2","parent_id":"s1","hop":"auth","start":1767225600000000001,"duration_ms":3000,"status":"error","timeout":true,"code":504,"attempt":2,"timeout_ms":3000}`,
		`{ "hop" : "x" , "duration" : "1.5s" , "weight" : 0.5 , "error" : null , "unknown" : false }`,
		`{"hop":"y","duration_ns":7,"kind":"SPAN_KIND_CLIENT","status":"STATUS_CODE_ERROR","error.type":"deadline exceeded"}`,
		`{"service":"s","name":"n","duration_us":1e3,"start":"2026-01-01T00:00:00Z"}`,
		`{"hop":"z","duration_ms":-1}`,          // negative: Emit's business, not the decoder's
		`{"hop":"z","start":5,"end":3}`,         // end before start: finish decides
		`{"hop":"z"}`,                           // missing duration: finish decides
		`{"hop":"z","duration_ms":1,"hop":"w"}`, // duplicate key: the last wins on both paths
		`{"service":"a","service":12,"name":"n","name":null,"duration_ms":1}`,
		"{\"service\":12,\"service\":\"b\xffc\",\"duration_ms\":1}", // eager, then deferred and invalid UTF-8
		`{"hop":"né","duration_ms":1}`,
		"{\"hop\":\"bad\xffutf8\",\"duration_ms\":1}",
		"\t{\"hop\":\"ws\",\"duration_ms\":1}\t",
		// Fields no span field takes: attributes, as the general path has them.
		`{"hop":"a","duration_ms":1,"pod":"p-1","zone":"eu-1","n":12.5,"big":1e400,"ok":true,"off":false,"none":null,"empty":""}`,
		"{\"hop\":\"a\",\"duration_ms\":1,\"bad\":\"x\xffy\",\"k\xfe\":2}",
		`{"hop":"a","duration_ms":1,"otel.status_description":"gone"}`,
		// Ids and the hop as the fast path stores them itself: empty,
		// numbers (to set), null, repeated.
		`{"trace_id":"","span_id":"","parent_id":"","hop":"","duration_ms":1}`,
		`{"trace_id":12,"span_id":3.5,"parent_id":null,"hop":7,"duration_ms":1}`,
		`{"trace_id":"a","trace_id":"b","span_id":"s","span_id":null,"hop":"h","hop":"i","duration_ms":1}`,
	}
	leave := []string{
		`{}`,
		`{"hop":"a\"b","duration_ms":1}`,
		`{"h\u006fp":"x","duration_ms":1}`,
		`{"hop":"x","duration_ms":1,"attributes":{"code":500}}`,
		`{"hop":"x","duration_ms":1,"resource":{"k8s.pod.name":"p"}}`,
		`{"hop":"x","duration_ms":1,"path":"a\/b"}`,
		`{"hop":"x","duration_ms":[1]}`,
		`{"hop":"x","duration_ms":"fast"}`,
		`{"hop":"x","duration_ms":1,}`,
		`{"hop":"x","duration_ms":1} trailing`,
		`{"hop":"x","duration_ms":1`,
		`{"hop":"x" "duration_ms":1}`,
		`{"hop":"x","duration_ms":tru}`,
		`[1,2]`,
		"{\"hop\":\"x\x01\",\"duration_ms\":1}",
	}
	var ly layout
	for _, l := range take {
		if !fastAgrees(t, tab, &ly, []byte(l)) {
			t.Errorf("fast path did not take %s", l)
		}
	}
	for _, l := range leave {
		if fastAgrees(t, tab, &ly, []byte(l)) {
			t.Errorf("fast path took %s", l)
		}
	}
	// Under --map and --hop-by attr:KEY the keys mean something else.
	tab = newFieldTable(&record.Options{Map: map[string]string{"hop": "route", "duration_ms": "ms"}, HopBy: "attr:peer"})
	ly = layout{}
	for _, l := range []string{`{"route":"a","ms":5,"hop":"ignored","peer":"p1"}`, `{"route":"a","ms":5,"peer":12}`} {
		if !fastAgrees(t, tab, &ly, []byte(l)) {
			t.Errorf("fast path did not take %s", l)
		}
	}
	if fastAgrees(t, tab, &ly, []byte(`{"route":"a","ms":5,"peer":true}`)) {
		t.Error("fast path took a boolean --hop-by attr value")
	}
}

// Mutated lines (bytes flipped, inserted, deleted) never make the two
// paths disagree, with the layout learnt from earlier lines in place.
func TestFastLineMutations(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	lines := bytes.Split(bytes.TrimSpace(flatBenchLines(200)), []byte("\n"))
	alphabet := []byte(`{}[]":,. \-+eE0123456789abtrufalsn\x` + "\x01\xff")
	tab := newFieldTable(&record.Options{})
	var ly layout
	taken := 0
	for range 50_000 {
		l := append([]byte(nil), lines[r.IntN(len(lines))]...)
		for range 1 + r.IntN(3) {
			p := r.IntN(len(l))
			c := alphabet[r.IntN(len(alphabet))]
			switch r.IntN(3) {
			case 0:
				l[p] = c
			case 1:
				l = append(l[:p], append([]byte{c}, l[p:]...)...)
			default:
				l = append(l[:p], l[p+1:]...)
			}
		}
		if fastAgrees(t, tab, &ly, l) {
			taken++
		}
	}
	if taken == 0 {
		t.Error("the fast path took no mutated line")
	}
}

func FuzzFastLine(f *testing.F) {
	for _, l := range bytes.Split(flatBenchLines(5), []byte("\n")) {
		f.Add(l)
	}
	f.Add([]byte(`{"hop":"x","duration":"1.5s","attempt":2,"error":"boom"}`))
	f.Add([]byte(`{"hop":"x","duration_ms":1,"pod":"p-1","n":-2.5e3,"ok":true,"x":null}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		tab := newFieldTable(&record.Options{})
		var ly layout
		fastAgrees(t, tab, &ly, line)
		fastAgrees(t, tab, &ly, line) // again, with the layout it taught
		// A field's key named by --hop-by attr: takes the hop, whatever
		// the value's kind, and sets no field (the entry's action, on the
		// learnt opening's path too).
		for _, key := range []string{"code", "service"} {
			tab := newFieldTable(&record.Options{HopBy: "attr:" + key})
			var ly layout
			fastAgrees(t, tab, &ly, line)
			fastAgrees(t, tab, &ly, line)
		}
	})
}

// BenchmarkFastLine decodes lines of bench/'s shape on one goroutine: the
// decoder alone, without splitting, hand-off or consumers.
func BenchmarkFastLine(b *testing.B) {
	data := bytes.TrimSpace(flatBenchLines(10_000))
	lines := bytes.Split(data, []byte("\n"))
	tab := newFieldTable(&record.Options{})
	rec := &flatRecord{intern: &record.Interner{}, block: data} // ids borrowed, as analyze reads them
	var ly layout
	n := 0
	for _, l := range lines {
		n += len(l) + 1
	}
	b.SetBytes(int64(n))
	for b.Loop() {
		for _, l := range lines {
			if !tab.fastLine(rec, &ly, l) {
				b.Fatal("not taken")
			}
			rec.finish()
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(lines))/b.Elapsed().Seconds(), "lines/s")
}

// A number scanned once answers as atoiBytes and atofBytes do on its
// text, and ends where scanner.value ends it.
func TestScanNumberAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	cases := []string{"0", "-0", "1", "12.5", "0.001", "1.", "1e3", "1E-3", "-", "--1", "1-2", "123456789012345", "1234567890123456",
		"9223372036854775807", "9223372036854775808", "-9223372036854775807", "99999999999999999999", "1.2.3", "0.1234567890123456789012345",
		"12345678", "-12345678", "123456789.5", "1234567812345678.1", "1234567e10", "12345678-", "00000000000000000001", "1767225600001000000"}
	alphabet := []byte("0123456789.-+eE")
	for range 20000 {
		b := make([]byte, 1+r.IntN(24))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		if b[0] != '-' && (b[0] < '0' || b[0] > '9') {
			b[0] = '1'
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		// Tails long and short: a number followed by eight bytes or more
		// is read a word at a time, one near the end a byte at a time.
		for _, tail := range []string{"", ",", "}", " x", `,"attempt":1}`, "\x00\xff\xfa\x3a\x2f\x40`\xfa\x39", "0123456789.123456789,\"x\":1}", ".5e3,\"abcdefgh\"", "\xfa\xfb\xff0000000000"} {
			in := []byte(c + tail)
			var nt numText
			scanNumber(in, 0, &nt)
			var sc jsonscan.Scanner
			sc.Buf = in
			_, want, _ := sc.Value()
			if string(nt.text) != string(want) {
				t.Fatalf("%q: scanned %q, scanner.value %q", in, nt.text, want)
			}
			var ref numText
			scanNumberBytes(in, 0, &ref)
			if string(ref.text) != string(nt.text) || ref.m != nt.m || ref.nd != nt.nd || ref.frac != nt.frac || ref.neg != nt.neg || ref.plain != nt.plain || ref.dot != nt.dot {
				t.Fatalf("%q: scanned %+v, byte by byte %+v", in, nt, ref)
			}
			n, ok := nt.int()
			wn, wok := record.AtoiBytes(nt.text)
			if ok != wok || n != wn {
				t.Errorf("%q: int %d %v, atoiBytes %d %v", nt.text, n, ok, wn, wok)
			}
			x, ok := nt.dec()
			wx, wok := atofBytes(nt.text)
			if ok != wok || x != wx {
				t.Errorf("%q: dec %v %v, atofBytes %v %v", nt.text, x, ok, wx, wok)
			}
		}
	}
}

// scaled gives what the float arithmetic of parseDuration and atofAlloc
// gives (int64(math.Round(x*10^exp))), wherever it answers: on random
// numbers of every length and decimals, and at the edges (2^50, 15 digits,
// more decimals than the scale, negative zero).
func TestScaledAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	cases := []string{"0", "-0", "-0.0", "7.514", "9921.447", "3000", "1.000001", "1.0000001", "0.000001", "-2.5",
		"1125899906.842623", "1125899906.842624", "1125899906842623", "1125899906842624", "999999999999999", "9999999999999999",
		"1125899.906842", "112589990684262.3", "1.", "1e3", "123456789012345.6"}
	for range 200_000 {
		var b []byte
		if r.IntN(4) == 0 {
			b = append(b, '-')
		}
		nd := 1 + r.IntN(17)
		dot := -1
		if r.IntN(3) > 0 {
			dot = r.IntN(nd + 1)
		}
		for k := range nd {
			if k == dot {
				b = append(b, '.')
			}
			b = append(b, byte('0'+r.IntN(10)))
		}
		cases = append(cases, string(b))
	}
	answered := 0
	for _, c := range cases {
		var nt numText
		scanNumber([]byte(c), 0, &nt)
		for _, exp := range []int{0, 3, 6} {
			got, ok := nt.scaled(exp)
			if !ok {
				continue
			}
			answered++
			x, xok := 0.0, false
			if n, iok := nt.int(); iok {
				x, xok = float64(n), true
			} else {
				x, xok = nt.dec()
			}
			if !xok {
				t.Fatalf("%q: scaled(%d) answered %d where int and dec do not", c, exp, got)
			}
			if want := int64(math.Round(x * pow10[exp])); got != want {
				t.Fatalf("%q: scaled(%d) = %d, float path %d", c, exp, got, want)
			}
		}
	}
	if answered < len(cases) {
		t.Errorf("scaled answered only %d times over %d numbers", answered, len(cases))
	}
}

// The interner's front cache answers with the string of the bytes asked
// for, whatever the bytes around them (a short name is compared as one
// masked word, read past its end when the buffer allows).
func TestInternerFront(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	var in record.Interner
	alphabet := []byte("ab\xff")
	for range 200_000 {
		n := r.IntN(12)
		buf := make([]byte, n+r.IntN(10))
		for i := range buf {
			buf[i] = alphabet[r.IntN(len(alphabet))]
		}
		b := buf[:n]
		if r.IntN(2) == 0 {
			b = buf[:n:n] // no room to read past the end
		}
		if got, want := in.Get(b), record.ValidText(b); got != want {
			t.Fatalf("get(%q) = %q, want %q", b, got, want)
		}
	}
}

// reset leaves a record as new but for the state kept across lines.
func TestRecordReset(t *testing.T) {
	var r flatRecord
	// Every field non-zero, through reflection, so that a field added
	// later shows here if reset does not clear it (or clears kept state).
	v := reflect.ValueOf(&r).Elem()
	var fill func(reflect.Value)
	fill = func(f reflect.Value) {
		switch f.Kind() {
		case reflect.Struct:
			for i := range f.NumField() {
				g := f.Field(i)
				fill(reflect.NewAt(g.Type(), g.Addr().UnsafePointer()).Elem())
			}
		case reflect.String:
			f.SetString("x")
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64, reflect.Uint8, reflect.Uint64:
			if f.CanInt() {
				f.SetInt(1)
			} else {
				f.SetUint(1)
			}
		case reflect.Float64:
			f.SetFloat(1)
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		}
	}
	for i := range v.NumField() {
		if f := v.Field(i); f.CanSet() {
			fill(f)
		} else {
			fill(reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem())
		}
	}
	r.reset()
	want := flatRecord{intern: r.intern, hops: r.hops, names: r.names, block: r.block, keys: r.keys, lazy: r.lazy, soft: r.soft, units: r.units, probe: r.probe, at: r.at, nested: r.nested}
	if !reflect.DeepEqual(r, want) || !r.lazy || r.intern == nil || len(r.soft) != 0 || cap(r.soft) == 0 || len(r.nested) != 0 {
		t.Errorf("after reset: %+v", r)
	}
	// The attributes are emptied, their buffers and mode kept.
	if a := r.at; len(a.List) != 0 || len(a.Tier) != 0 || cap(a.List) == 0 || !a.Borrow || a.In == nil || a.Chunk == nil {
		t.Errorf("attributes after reset: %+v", a)
	}
}

// flatBenchLines makes n flat JSON lines of the shape bench/ generates.
func flatBenchLines(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	hops := []string{"auth", "search", "retrieve", "rank", "generate", "render"}
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, `{"trace_id":"%016x%016x","span_id":"%016x","parent_id":"%016x","service":"svc","name":"op","kind":"client","hop":"%s","start":%d,"duration_ms":%.3f,"status":"ok","code":200,"attempt":1,"timeout_ms":3000}`+"\n",
			r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64(), hops[i%len(hops)], 1767225600000000000+int64(i)*1000, 10+r.Float64()*500)
	}
	return b.Bytes()
}

// stringEnd answers what jsonscan.PlainString answers, whatever length it
// looks at first.
func TestStringEnd(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	alphabet := []byte("ab\"\\\x01\x1f \x7f\xc3\xa9xyz0123456789")
	for range 200_000 {
		line := make([]byte, r.IntN(40))
		for k := range line {
			if r.IntN(4) == 0 {
				line[k] = alphabet[r.IntN(len(alphabet))]
			} else {
				line[k] = 'a' + byte(r.IntN(26))
			}
		}
		i := 0
		if len(line) > 0 {
			i = r.IntN(len(line))
		}
		n := r.IntN(len(line) + 2)
		if r.IntN(2) == 0 && i+n < len(line) {
			line[i+n] = '"'
		}
		wj, wok := jsonscan.PlainString(line, i)
		j, ok := stringEnd(line, i, n)
		if j != wj || ok != wok {
			t.Fatalf("stringEnd(%q, %d, %d) = %d, %v; PlainString gives %d, %v", line, i, n, j, ok, wj, wok)
		}
	}
}

// scanNumberBytes is scanNumber a byte at a time, as it was before it read
// words: the reference its every field is held to.
func scanNumberBytes(b []byte, i int, nt *numText) {
	start := i
	nt.neg = b[i] == '-'
	if nt.neg {
		i++
	}
	var m uint64
	nd, frac := 0, 0
	dot, other := false, false
	for ; i < len(b); i++ {
		c := b[i]
		if d := c - '0'; d < 10 {
			m = m*10 + uint64(d)
			nd++
			if dot {
				frac++
			}
		} else if c == '.' && !dot {
			dot = true
		} else if jsonscan.IsNumberByte(c) {
			other = true
		} else {
			break
		}
	}
	nt.text, nt.m, nt.nd, nt.frac, nt.dot, nt.plain = b[start:i], m, nd, frac, dot, !other && nd > 0
}

// flatMixedLines are n lines of the shape bench/ writes (gen.go): traces
// of a gateway root (no parent_id, attempt or timeout_ms) and its calls to
// a dozen services, whose names, hops and durations vary in length from
// line to line as a real log's do, some failing with 503 or timing out
// (a "timeout" key between status and code). flatBenchLines repeats one
// shape, which lets a branch predictor learn every value's length.
func flatMixedLines(n int) []byte {
	r := rand.New(rand.NewPCG(7, 11))
	svcs := [][2]string{{"auth", "auth"}, {"session", "session"}, {"catalog", "catalog"}, {"search", "search"}, {"retrieval", "retrieve"},
		{"ranker", "rank"}, {"llm", "generate"}, {"pricing", "price"}, {"inventory", "inventory"}, {"render", "render"}, {"billing", "billing.Export"}, {"ledger-2", "ledger-2.Search"}}
	var b bytes.Buffer
	start := int64(1767225600000000000)
	trace, calls := "", 0
	for range n {
		if calls == 0 {
			trace = fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64())
			calls = 6 + r.IntN(5)
			fmt.Fprintf(&b, `{"trace_id":"%s","span_id":"%016x","service":"gateway","name":"gateway","kind":"server","hop":"gateway","start":%d,"duration_ms":%.3f,"status":"ok","code":200}`+"\n",
				trace, r.Uint64(), start, math.Exp(5+r.NormFloat64()))
			continue
		}
		calls--
		s := svcs[r.IntN(len(svcs))]
		d := math.Exp(2 + 2*r.Float64() + 0.5*r.NormFloat64())
		status, code, timeout := "ok", 200, ""
		switch x := r.IntN(100); {
		case x < 2:
			status, code, timeout, d = "error", 504, `"timeout":true,`, 3000+r.Float64()
		case x < 4:
			status, code = "error", 503
		}
		start += int64(r.IntN(50_000_000))
		fmt.Fprintf(&b, `{"trace_id":"%s","span_id":"%016x","parent_id":"%016x","service":"%s","name":"%s","kind":"client","hop":"%s","start":%d,"duration_ms":%.3f,"status":"%s",%s"code":%d,"attempt":%d,"timeout_ms":3000}`+"\n",
			trace, r.Uint64(), r.Uint64(), s[0], s[1], s[1], start, d, status, timeout, code, 1+r.IntN(2))
	}
	return b.Bytes()
}

// BenchmarkFastLineMixed is BenchmarkFastLine on flatMixedLines.
func BenchmarkFastLineMixed(b *testing.B) {
	data := bytes.TrimSpace(flatMixedLines(10_000))
	lines := bytes.Split(data, []byte("\n"))
	tab := newFieldTable(&record.Options{})
	// As analyze reads them: ids borrowed, service and name deferred
	// (hops named by the hop field).
	rec := &flatRecord{intern: &record.Interner{}, block: data, lazy: true}
	var ly layout
	b.SetBytes(int64(len(data) + 1))
	for b.Loop() {
		for _, l := range lines {
			if !tab.fastLine(rec, &ly, l) {
				b.Fatal("not taken")
			}
			rec.finish()
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(lines))/b.Elapsed().Seconds(), "lines/s")
}
