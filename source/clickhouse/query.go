package clickhouse

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tailscope/tailscope/internal/units"
	"github.com/tailscope/tailscope/option"
	"github.com/tailscope/tailscope/source"
)

// client makes the requests of one read.
type client struct {
	t      *Target
	o      Options
	report func(func(*Progress))
	wire   atomic.Int64 // the bytes of the answers as they came over the wire
	// attrAgain counts the attribute values whose examples were asked
	// for again (attr.go).
	attrAgain int
	// attrPerKey counts the attribute values' queries asked attribute by
	// attribute (attr.go: the spans' combinations were too many).
	attrPerKey int
	// censusScans counts the scans for the attribute values' census
	// (censusScan); traceList the samples read by the traces' ids.
	censusScans, traceList int
	// bare is set once the server refused the settings the requests
	// carry (a readonly user may set none): they go without them, and
	// the answers come uncompressed.
	bare bool
	// begin, when above the timeout, bounds the wait for an answer to
	// begin instead: the push-down's aggregations answer only once the
	// server has aggregated the window (a pause in an answer once begun
	// is still bounded by the timeout).
	begin time.Duration
}

// plan is the query of a read and what the notes say about it.
type plan struct {
	sql    string
	notes  []string
	pushed []string // what the server applies, for the summary note
	table  string
	// sel is each field's expression over the table's columns (the
	// aggregates' queries build on it: pushdown.go).
	sel map[string]string
}

// summary is the note a read ends with.
func (p *plan) summary(rows, bytes int64) string {
	return fmt.Sprintf("ClickHouse: %d spans read from %s (%s of rows over the wire); the server applied %s",
		rows, p.table, units.Bytes(bytes), strings.Join(p.pushed, ", "))
}

// plan checks the table and builds the query.
func (c *client) plan(ctx context.Context) (*plan, error) {
	t := c.t
	db, tbl := quoteString(t.Database), quoteString(t.Table)
	body, err := c.query(ctx, "SELECT 'd' AS w, name AS name, '' AS type FROM system.databases WHERE name = "+db+
		" UNION ALL SELECT 'c' AS w, name, type FROM system.columns WHERE database = "+db+" AND table = "+tbl+" FORMAT JSONEachRow")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.Raw, err)
	}
	var hasDB bool
	cols := map[string]string{}
	for _, line := range bytes.Split(body, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r struct{ W, Name, Type string }
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("%s: the server's list of columns is not JSON rows: %q", t.Raw, source.Quote(line))
		}
		switch r.W {
		case "d":
			hasDB = true
		case "c":
			cols[r.Name] = r.Type
		}
	}
	full := t.Database + "." + t.Table
	if !hasDB {
		return nil, fmt.Errorf("%s: no database %q on %s (databases there: %s)", t.Raw, t.Database, t.Base.Host, c.names(ctx, "SELECT name FROM system.databases ORDER BY name LIMIT 51 FORMAT JSONEachRow"))
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("%s: no table %q in database %q (tables there: %s); name it with ?table=", t.Raw, t.Table, t.Database,
			c.names(ctx, "SELECT name FROM system.tables WHERE database = "+db+" ORDER BY name LIMIT 51 FORMAT JSONEachRow"))
	}
	p := &plan{table: full}
	sel := map[string]string{}
	var missing, badType, absent []string
	for _, f := range fields {
		col := t.Schema.Columns[f.name]
		if col == "" {
			if f.required {
				missing = append(missing, f.name+" (no column mapped: col."+f.name+"=COLUMN)")
			}
			continue
		}
		// An attribute field may join several Map columns (a,b): their
		// pairs, in that order.
		var keys, vals []string
		for _, col := range strings.Split(col, ",") {
			typ, ok := cols[col]
			if !ok {
				if f.required {
					missing = append(missing, fmt.Sprintf("%s (column %s)", f.name, col))
				} else {
					absent = append(absent, col)
				}
				continue
			}
			e := expr(f.name, col, typ)
			if e == "" {
				badType = append(badType, fmt.Sprintf("%s is %s, want %s for %s", col, typ, wantType[f.name], f.name))
				continue
			}
			if f.name != FieldResource && f.name != FieldAttrs {
				sel[f.name] = e
				continue
			}
			k, v, _ := strings.Cut(e, pairSep)
			keys, vals = append(keys, k), append(vals, v)
		}
		switch {
		case len(keys) == 1:
			sel[f.name] = keys[0] + pairSep + vals[0]
		case len(keys) > 1:
			sel[f.name] = "arrayConcat(" + strings.Join(keys, ", ") + ")" + pairSep + "arrayConcat(" + strings.Join(vals, ", ") + ")"
		}
	}
	if len(missing) > 0 || len(badType) > 0 {
		var parts []string
		if len(missing) > 0 {
			parts = append(parts, "lacks what tailscope needs: "+strings.Join(missing, ", "))
		}
		if len(badType) > 0 {
			parts = append(parts, "has columns of another type: "+strings.Join(badType, "; "))
		}
		return nil, fmt.Errorf("%s: table %s %s (schema %q; map other columns with col.FIELD=COLUMN, see docs/clickhouse.md)", t.Raw, full, strings.Join(parts, "; "), t.Schema.Name)
	}
	if len(absent) > 0 {
		p.notes = append(p.notes, fmt.Sprintf("%s: table %s has no column %s: read without it", t.Raw, full, strings.Join(absent, ", ")))
	}
	if (sel[FieldEventNames] == "") != (sel[FieldEventAttrs] == "") {
		delete(sel, FieldEventNames)
		delete(sel, FieldEventAttrs)
	}
	p.sql, p.pushed = c.build(sel, cols)
	p.sel = sel
	return p, nil
}

// names lists the names a query returns, for an error message.
func (c *client) names(ctx context.Context, q string) string {
	body, err := c.query(ctx, q)
	if err != nil {
		return "not listed: " + err.Error()
	}
	var out []string
	for _, line := range bytes.Split(body, []byte("\n")) {
		var r struct{ Name string }
		if json.Unmarshal(line, &r) == nil && r.Name != "" {
			out = append(out, fmt.Sprintf("%q", r.Name))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	if len(out) > 50 {
		out = append(out[:50], "…")
	}
	return strings.Join(out, ", ")
}

// Aliases of the query's columns: the row decoder's keys.
const (
	aStart, aDur, aTrace, aSpan, aParent = "s", "d", "t", "i", "p"
	aName, aService, aKind, aStatus      = "n", "sv", "k", "c"
	aMessage, aState, aScope, aScopeVer  = "m", "ts", "sn", "sr"
	aResKeys, aResVals, aKeys, aVals     = "rk", "rv", "ak", "av"
	aExcKeys, aExcVals                   = "ek", "ev"
)

// build is the query over the columns chosen, and what it pushes down.
func (c *client) build(sel map[string]string, cols map[string]string) (string, []string) {
	t, o := c.t, c.o
	var out []string
	// Every column is converted to the type the decoder expects of its
	// alias (rowbinary.go), whatever the table's own type.
	add := func(alias, e string) {
		switch aliasType[alias] {
		case tInt64:
			e = "ifNull(toInt64(" + e + "), 0)"
		case tString:
			e = "ifNull(toString(" + e + "), '')"
		}
		out = append(out, e+" AS "+alias)
	}
	one := map[string]string{
		FieldStart: aStart, FieldDuration: aDur, FieldTraceID: aTrace, FieldSpanID: aSpan, FieldParentID: aParent,
		FieldName: aName, FieldService: aService, FieldKind: aKind, FieldStatus: aStatus,
		FieldStatusMessage: aMessage, FieldTraceState: aState, FieldScopeName: aScope, FieldScopeVersion: aScopeVer,
	}
	for _, f := range fields {
		if a, ok := one[f.name]; ok && sel[f.name] != "" {
			add(a, sel[f.name])
		}
	}
	for _, m := range []struct{ f, k, v string }{{FieldResource, aResKeys, aResVals}, {FieldAttrs, aKeys, aVals}} {
		if e := sel[m.f]; e != "" {
			k, v, _ := strings.Cut(e, pairSep)
			add(m.k, k)
			add(m.v, v)
		}
	}
	if sel[FieldEventNames] != "" {
		// Only the exception events say anything tailscope reads (a
		// timeout named in their type or message): the others stay on
		// the server.
		exc := "arrayFilter((x, n) -> n = 'exception', " + sel[FieldEventAttrs] + ", " + sel[FieldEventNames] + ")"
		add(aExcKeys, "arrayMap(x -> arrayMap(y -> toString(y), mapKeys(x)), "+exc+")")
		add(aExcVals, "arrayMap(x -> arrayMap(y -> toString(y), mapValues(x)), "+exc+")")
	}
	startCol := t.Schema.Columns[FieldStart]
	where := []string{startCond(startCol, cols[startCol], o.Since.UnixNano(), o.Until.UnixNano())}
	pushed := []string{"the window"}
	if h := c.hopExpr(sel); h != "" {
		for _, x := range []struct {
			re  *regexp.Regexp
			not bool
		}{{o.Hops, false}, {o.ExcludeHops, true}} {
			if x.re == nil || !pushable(x.re) {
				continue
			}
			// A span without a hop is the readers' to skip, with its
			// reason: the filter never drops it here.
			cond := "(" + h + " = '' OR match(" + h + ", " + quoteString(x.re.String()) + "))"
			if x.not {
				cond = "(" + h + " = '' OR NOT match(" + h + ", " + quoteString(x.re.String()) + "))"
				pushed = append(pushed, c.o.Names.Of(option.ExcludeHops))
			} else {
				pushed = append(pushed, c.o.Names.Of(option.Hops))
			}
			where = append(where, cond)
		}
	}
	var order []string
	for _, x := range t.Schema.Order {
		if usable(x, cols) {
			order = append(order, x)
		}
	}
	order = append(order, aStart, aTrace, aSpan)
	if sel[FieldParentID] != "" {
		order = append(order, aParent)
	}
	order = append(order, aDur)
	q := "SELECT " + strings.Join(out, ", ") + " FROM " + quoteIdent(t.Database) + "." + quoteIdent(t.Table) +
		" WHERE " + strings.Join(where, " AND ") + " ORDER BY " + strings.Join(order, ", ") + " FORMAT RowBinaryWithNamesAndTypes"
	return q, pushed
}

// usable reports whether an ORDER BY term of a schema names only columns
// the table has (a bare column, or f(column)).
func usable(term string, cols map[string]string) bool {
	name := term
	if i := strings.IndexByte(term, '('); i >= 0 && strings.HasSuffix(term, ")") {
		name = term[i+1 : len(term)-1]
	}
	_, ok := cols[name]
	return ok
}

// hopExpr is the SQL of the hop a span is counted in, when the hop is a
// function of columns the query reads (DeriveHop: service, name, or
// service and name with the caller's kind), or "".
func (c *client) hopExpr(sel map[string]string) string {
	if key, ok := strings.CutPrefix(c.o.HopBy, "attr:"); ok {
		return attrHop(sel, key)
	}
	if sel[FieldService] == "" || sel[FieldName] == "" {
		return ""
	}
	sv, n := sel[FieldService], sel[FieldName]
	switch c.o.HopBy {
	case "service":
		return sv
	case "name":
		return n
	case "", "service+name":
		// What the readers name a hop by default for a trace format: the
		// service and the name, and for the caller's side of a call its
		// kind (client, producer, consumer), as kindNumber reads it.
		base := "multiIf(" + sv + " = '', " + n + ", " + n + " = '', " + sv + ", concat(" + sv + ", ' ', " + n + "))"
		if sel[FieldKind] == "" {
			return base
		}
		k := sel[FieldKind]
		kind := "multiIf(" + kindSQL(k, 3) + ", 'client', " + kindSQL(k, 4) + ", 'producer', " + kindSQL(k, 5) + ", 'consumer', '')"
		return "if(" + base + " != '' AND " + kind + " != '', concat(" + base + ", ' (', " + kind + ", ')'), " + base + ")"
	}
	return ""
}

// attrHop is the hop of --hop-by attr:KEY in SQL: the span's attribute
// KEY, else the resource's, the last of each when a key repeats, as the
// OTLP reader takes them; "" when the query reads neither map.
func attrHop(sel map[string]string, key string) string {
	k := quoteString(key)
	pick := func(field, rest string) string {
		keys, vals, ok := strings.Cut(sel[field], pairSep)
		if !ok {
			return rest
		}
		i := "arrayLastIndex(x -> x = " + k + ", " + keys + ")"
		return "if(" + i + " > 0, arrayElement(" + vals + ", " + i + "), " + rest + ")"
	}
	if sel[FieldAttrs] == "" && sel[FieldResource] == "" {
		return ""
	}
	return pick(FieldAttrs, pick(FieldResource, "''"))
}

// kindSQL tests kind text e for OTLP kind number n, as kindNumber does.
func kindSQL(e string, n int) string {
	var names []string
	for k, v := range kindNames {
		if v == n {
			names = append(names, quoteString(k))
		}
	}
	sort.Strings(names)
	return "replaceRegexpOne(lower(" + e + "), '^span_kind_', '') IN (" + strings.Join(names, ", ") + ", '" + strconv.Itoa(n) + "')"
}

// pushable reports whether re means the same to ClickHouse's match (RE2,
// on UTF-8) as to Go: patterns of ASCII literals and the common syntax.
// Others are applied by the readers only.
func pushable(re *regexp.Regexp) bool {
	s := re.String()
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	if strings.Contains(s, `\p`) || strings.Contains(s, `\P`) || strings.Contains(s, `\C`) || strings.Contains(s, `(?U`) {
		return false
	}
	_, err := syntax.Parse(s, syntax.Perl)
	return err == nil
}

// serverError is an answer of the server that is not a result.
type serverError struct {
	status int
	code   int    // ClickHouse's exception code, 0 when not given
	text   string // masked, quoted
}

// query POSTs q and returns the whole answer (for the small queries).
func (c *client) query(ctx context.Context, q string) ([]byte, error) {
	resp, err := c.post(ctx, q)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	wire := c.wire.Load()
	c.report(func(p *Progress) { p.Bytes = wire })
	return b, err
}

// post sends q and returns a response whose status is 200, trying again
// on 429, a 5xx or a network error, as the other sources do. Its errors
// name the request, not the source (the caller adds it).
func (c *client) post(ctx context.Context, q string) (*http.Response, error) {
	wait := c.o.Backoff
	for try := 0; ; try++ {
		c.report(func(p *Progress) { p.Requests++ })
		resp, err := c.once(ctx, q)
		if err == nil && resp.StatusCode == http.StatusOK {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var out error
		retry := true
		if err != nil {
			out = fmt.Errorf("POST %s: %v: is ClickHouse's HTTP interface there (port %s, %s for clickhouses://)?", c.t.Base.Redacted(), unwrap(err), DefaultPort, DefaultPortTLS)
		} else {
			se := c.serverError(resp)
			if se.code == codeReadonly && !c.bare {
				// Asked again at once, without the settings.
				c.bare = true
				try--
				continue
			}
			out = c.explain(se)
			retry = se.status == http.StatusTooManyRequests || se.status >= 500 && !fatalCode(se.code)
		}
		if !retry || try >= c.o.Retries {
			if try > 0 && retry {
				return nil, fmt.Errorf("%w (tried %d times)", out, try+1)
			}
			return nil, out
		}
		select {
		case <-time.After(min(wait, 30*time.Second)):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		wait *= 2
	}
}

// codeReadonly is ClickHouse's READONLY: a readonly user may change no
// setting.
const codeReadonly = 164

// compress says whether to ask for a compressed answer.
func (c *client) compress() bool { return c.t.Compress && !c.bare }

// settings are the settings a request carries in its URL: that a read
// the client gave up on (an error, ^C) is cancelled on the server instead
// of running to its end, and gzip when compress says so.
func (c *client) settings() string {
	if c.bare {
		return ""
	}
	s := "cancel_http_readonly_queries_on_client_close=1"
	if c.compress() {
		s += "&enable_http_compression=1"
	}
	return s
}

// fatalCode reports whether an exception code says the query itself is
// wrong, which asking again will not mend (ClickHouse answers some of
// these with a 500).
func fatalCode(code int) bool {
	switch code {
	case 0:
		return false
	case 159, 160, 241, 202, 203, 209, 210, 394: // timeouts, memory, too many queries, network: transient
		return false
	}
	return true
}

// unwrap drops the *url.Error wrapper (its message repeats the method
// and URL the error names).
func unwrap(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// once makes one request. Its answer must begin within the timeout; a
// pause in the body is bounded by the stream's idleReader.
func (c *client) once(ctx context.Context, q string) (*http.Response, error) {
	rctx, cancel := context.WithCancel(ctx)
	u := *c.t.Base
	u.RawQuery = c.settings()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, u.String(), strings.NewReader(q))
	if err != nil {
		cancel()
		return nil, err
	}
	for k, vs := range c.o.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if c.o.User != "" {
		req.Header.Set("X-ClickHouse-User", c.o.User)
	}
	if c.o.Password != "" {
		req.Header.Set("X-ClickHouse-Key", c.o.Password)
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	if c.compress() {
		// Asked for here, not by the transport, so that the bytes on
		// the wire can be counted before they are inflated.
		req.Header.Set("Accept-Encoding", "gzip")
	}
	timeout := c.o.Names.Of(option.FetchTimeout)
	wait, what := c.o.Timeout, timeout
	if c.begin > wait {
		wait, what = c.begin, "the server's aggregation; at most the longer of "+timeout+" and "+c.begin.String()
	}
	timer := time.AfterFunc(wait, cancel)
	resp, err := c.o.Client.Do(req)
	fired := !timer.Stop()
	if err == nil && fired {
		resp.Body.Close()
	}
	if err != nil || fired {
		cancel()
		if fired && ctx.Err() == nil {
			return nil, fmt.Errorf("no answer within %v (%s)", wait, what)
		}
		return nil, err
	}
	var r io.Reader = &countReader{r: resp.Body, n: &c.wire}
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		r = &inflater{r: r}
	}
	resp.Body = &cancelBody{r: r, c: resp.Body, cancel: cancel}
	return resp, nil
}

// inflater inflates a gzip body, opened at its first read (so that a
// body that stalls is bounded by the reader's timeout, as any other).
type inflater struct {
	r  io.Reader
	zr *gzip.Reader
}

func (z *inflater) Read(p []byte) (int, error) {
	if z.zr == nil {
		zr, err := gzip.NewReader(z.r)
		if err != nil {
			return 0, fmt.Errorf("a gzip answer that does not inflate: %v", err)
		}
		z.zr = zr
	}
	return z.zr.Read(p)
}

// cancelBody is an answer's body, inflated when it came compressed,
// whose Close also ends the request's context.
type cancelBody struct {
	r      io.Reader
	c      io.Closer
	cancel context.CancelFunc
}

func (b *cancelBody) Read(p []byte) (int, error) { return b.r.Read(p) }

func (b *cancelBody) Close() error { err := b.c.Close(); b.cancel(); return err }

// serverError reads a failed answer.
func (c *client) serverError(resp *http.Response) serverError {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	se := serverError{status: resp.StatusCode}
	se.code, _ = strconv.Atoi(resp.Header.Get("X-ClickHouse-Exception-Code"))
	text := c.mask(string(b))
	if se.code == 0 {
		se.code = exceptionCode(text)
	}
	se.text = source.Quote([]byte(text))
	return se
}

// mask hides the credentials sent in server text.
func (c *client) mask(s string) string {
	h := c.o.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if c.o.Password != "" {
		h.Add("X-ClickHouse-Key", c.o.Password)
	}
	return source.Mask(h, s)
}

var codeRE = regexp.MustCompile(`^\s*Code: (\d+)\.`)

// exceptionCode is N of a body that starts "Code: N.".
func exceptionCode(s string) int {
	if m := codeRE.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// explain is the error of a failed answer, saying what it means.
func (c *client) explain(se serverError) error {
	hint := ""
	switch {
	case se.status == http.StatusUnauthorized || se.status == http.StatusForbidden || se.code == 516 || se.code == 192 || se.code == 193 || se.code == 194:
		hint = " (the user is " + c.o.Names.Of(option.ClickHouseUser) + " or $CLICKHOUSE_USER, the password $CLICKHOUSE_PASSWORD)"
	case se.code == 497:
		hint = " (the user may not read the table, or system.columns)"
	}
	msg := fmt.Sprintf("POST %s: HTTP %d %s", c.t.Base.Redacted(), se.status, http.StatusText(se.status))
	if se.text != "" {
		msg += ": " + se.text
	}
	return errors.New(msg + hint)
}

// stream runs the plan's query and writes its rows to w as OTLP JSON
// lines, returning how many it wrote. Its errors do not name the source:
// the reader of the stream does (ingest names the path it read).
func (c *client) stream(ctx context.Context, p *plan, w io.Writer) (int64, error) {
	resp, err := c.post(ctx, p.sql)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body := &idleReader{r: resp.Body, timeout: c.o.Timeout, name: c.o.Names.Of(option.FetchTimeout), ctx: ctx}
	br := bufio.NewReaderSize(body, 1<<16)
	bw := bufio.NewWriterSize(w, 1<<16)
	var n int64
	fail := func(d *decoder, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d != nil {
			if x := d.exception(); x != "" {
				return fmt.Errorf("the query failed while its rows were read: %s", source.Quote([]byte(c.mask(x))))
			}
		}
		return fmt.Errorf("reading the answer after %d rows: %v", n, err)
	}
	d, err := newDecoder(br, c.o.MaxRow)
	if err == io.EOF {
		return 0, nil // no header: an empty answer
	}
	if err != nil {
		return 0, fail(nil, err)
	}
	for {
		line, err := d.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, fail(d, err)
		}
		if _, err := bw.Write(line); err != nil {
			return n, err
		}
		n++
		if n%8192 == 0 {
			wire := c.wire.Load()
			c.report(func(pr *Progress) { pr.Rows, pr.Bytes = n, wire })
		}
	}
	wire := c.wire.Load()
	c.report(func(pr *Progress) { pr.Rows, pr.Bytes = n, wire })
	if err := bw.Flush(); err != nil {
		return n, err
	}
	return n, nil
}

// errRowTooLong is a row over Options.MaxRow.
var errRowTooLong = errors.New("a row is longer than the limit")

// countReader counts the bytes read through it into n.
type countReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// idleReader fails a read that waits longer than timeout for a byte: a
// server that stopped answering mid-stream. Its first error stays.
type idleReader struct {
	r       io.ReadCloser
	timeout time.Duration
	name    string // the timeout's, for the error
	ctx     context.Context
	err     error
}

func (r *idleReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	t := time.AfterFunc(r.timeout, func() { r.r.Close() })
	n, err := r.r.Read(p)
	if !t.Stop() && err != nil && r.ctx.Err() == nil {
		err = &idleError{r.timeout, r.name}
	}
	r.err = err
	return n, err
}

// idleError is an answer that paused for longer than the timeout (named
// name).
type idleError struct {
	timeout time.Duration
	name    string
}

func (e *idleError) Error() string {
	return fmt.Sprintf("the answer paused for over %v (%s)", e.timeout, e.name)
}
