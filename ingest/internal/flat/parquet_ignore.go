package flat

import (
	"math"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/record"
)

// Attribute columns the Branch no longer reads, left off the fast rows.
//
// An attribute column with a distinct value a row (a start time written
// again as start_unix_nano, a request id) is dropped by the analysis's
// attribution after AttrMaxValues values on a hop, yet the first pass
// would spell it as text for every row, and the Branch walk past it: on
// a 10M-span file with such a column, a tenth of the reader. When the
// Branch is a record.AttrIgnorer, the first pass asks it, per hop of the
// hop column's dictionary, which attribute columns it ignores on that
// hop, and leaves those out of the rows of that hop that it hands to Take.
// Every row that goes on to the record path (the trace sample, odd and
// filtered rows) gets its attributes again from every column, in column
// order, before records builds it: so Take sees a value only where it
// would ignore it, and every span that goes on is the span of the reader
// that does not ask. The answers only turn from false to true, so a
// remembered true is never stale; a false is asked again after
// ignoreEvery batches, and after twice as many each time the answers did
// not change, up to ignoreMaxEvery (the questions cost map lookups, a
// few hundred thousand of them on ten million rows asked every four
// batches; the analysis drops a key within its first few thousand spans
// of a hop, so the wait is short while it matters).
type attrIgnore struct {
	by   record.AttrIgnorer
	hopJ int      // the hop column
	bit  []uint64 // per column: its bit among the attribute columns (0: not one, or past 64)
	all  uint64   // the bits of every attribute column
	// Per entry of the hop dictionary the masks are of (dict): the
	// columns the Branch ignores on that hop, and the batch from which
	// to ask again.
	dict parquet.Dictionary
	mask []uint64
	next []uint32
	wait []uint32 // batches to the next question after this one
	// The batch: its number, and per row the columns left off it (skip),
	// the bits some row left off (some).
	batch uint32
	skip  []uint64
	some  uint64
	every uint64  // bits every row with a hop left off
	rows  []int32 // reattr's rows
	// changed is set when an answer turned to true (planUnread may then
	// leave another column unread).
	changed bool
}

// ignoreEvery is how many batches a hop's "not ignored" answer is kept
// before the Branch is asked again, doubled while the answers stay the
// same up to ignoreMaxEvery: the questions cost two map lookups each, a
// batch of rows many more.
const (
	ignoreEvery    = 4
	ignoreMaxEvery = 256
)

// planIgnore sets up the ignored columns when the Branch answers and the
// table has attribute columns (called by fastPlan, roles set).
func (w *pqWorker) planIgnore() {
	by, ok := w.branch.(record.AttrIgnorer)
	if !ok || w.nattr == 0 {
		return
	}
	g := &attrIgnore{by: by, hopJ: -1, bit: make([]uint64, len(w.curs)), skip: make([]uint64, pqBatchRows)}
	n := 0
	for j, r := range w.roles {
		switch {
		case r == roleHop:
			g.hopJ = j
		case r == roleAttr && n < 64:
			g.bit[j] = 1 << n
			g.all |= g.bit[j]
			n++
		}
	}
	if g.hopJ >= 0 && g.all != 0 {
		w.ign = g
	}
}

// pos is where row i of the batch has its value in column j's page, -1
// for a null.
func (w *pqWorker) pos(j, i int) int32 {
	if d := w.dense[j]; d >= 0 {
		return d + int32(i)
	}
	return w.vidx[j][i]
}

// ignoreBatch sets, for the m rows of the batch, the attribute columns to
// leave off each (skip, some, every), from the hop of each row. A row
// without a hop string (null, blank, or a value the setter keeps) goes to
// the records whatever its other values, and reattr gives it all its
// attributes there: it leaves every column off, and so decides nothing.
func (w *pqWorker) ignoreBatch(m int) {
	g := w.ign
	c := &w.curs[g.hopJ]
	g.renew(c)
	g.batch++
	g.some, g.every = 0, math.MaxUint64
	skip := g.skip[:m]
	for i := range skip {
		v := w.pos(g.hopJ, i)
		if v < 0 || c.ops[c.idx[v]] != opString {
			skip[i] = g.all
			g.some |= g.all
			continue
		}
		x := c.idx[v]
		if g.next[x] <= g.batch {
			g.ask(x, c.strs[x], w.curs)
		}
		skip[i] = g.mask[x]
		g.some |= skip[i]
		g.every &= skip[i]
	}
	if g.some == 0 {
		g.every = 0
	}
}

// ask renews the mask of hop dictionary entry x (hop name hop).
func (g *attrIgnore) ask(x int32, hop string, curs []pqCursor) {
	m := g.mask[x]
	for j, b := range g.bit {
		if b != 0 && m&b == 0 && g.by.AttrIgnored(hop, curs[j].col.name) {
			m |= b
		}
	}
	wait := uint32(ignoreEvery)
	if m == g.mask[x] && g.wait[x] > 0 {
		wait = min(2*g.wait[x], ignoreMaxEvery)
	}
	g.changed = g.changed || m != g.mask[x]
	g.mask[x], g.wait[x] = m, wait
	g.next[x] = g.batch + wait
	if m == g.all {
		g.next[x] = math.MaxUint32 // nothing left to ask
	}
}

// attrColumn is the first pass over attribute column j: all rows, none
// (every row leaves it off), or the rows that do not leave it off. As
// applyAttr: the dictionary's prepared strings, or a plain page's values
// in the batch's text (fast rows are borrowed).
func (w *pqWorker) attrColumn(j int, m int) {
	c := &w.curs[j]
	var b, some, every uint64
	if g := w.ign; g != nil {
		b, some, every = g.bit[j], g.some, g.every
	}
	switch {
	case b&every != 0:
		return
	case b&some != 0:
		sel, vals := w.sel[:0], w.vals[:0]
		for i, s := range w.ign.skip[:m] {
			if s&b != 0 {
				continue
			}
			if v := w.pos(j, i); v >= 0 {
				sel, vals = append(sel, int32(i)), append(vals, v)
			}
		}
		w.applyAttr(c, sel, vals)
	case w.dense[j] >= 0:
		d := w.dense[j]
		vals := w.vals[:m]
		for i := range vals {
			vals[i] = d + int32(i)
		}
		w.applyAttr(c, w.iota[:m], vals)
	default:
		vx := w.vidx[j][:m]
		w.applyAttr(c, w.selOf(vx), w.valsOf(vx))
	}
}

// reattr gives the rows of need that the first pass left attributes off
// all their attributes again, from every attribute column in column
// order: what the first pass gives them when nothing is left off.
func (w *pqWorker) reattr(need []int32) {
	g := w.ign
	if g == nil || g.some == 0 {
		return
	}
	rows := g.rows[:0]
	for _, row := range need {
		if g.skip[row] != 0 {
			w.attrs[row] = w.attrs[row][:0]
			rows = append(rows, row)
		}
	}
	g.rows = rows
	if len(rows) == 0 {
		return
	}
	for j := range w.curs {
		if w.roles[j] != roleAttr || w.unread[j] {
			continue
		}
		sel, vals := w.sel[:0], w.vals[:0]
		for _, row := range rows {
			if v := w.pos(j, int(row)); v >= 0 {
				sel, vals = append(sel, row), append(vals, v)
			}
		}
		w.applyAttr(&w.curs[j], sel, vals)
	}
}
