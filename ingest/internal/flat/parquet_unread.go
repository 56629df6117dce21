package flat

import (
	"sync/atomic"

	"github.com/parquet-go/parquet-go"
	"github.com/tailscope/tailscope/ingest/internal/record"
)

// Unread columns: attribute columns a row group need not decompress.
//
// A column the analysis ignores on every hop (a start written again as
// start_unix_nano, a request id: dropped after AttrMaxValues values) was
// still decompressed page after page — a tenth of a 10M-span file's read
// — only for the rows that go on to the records: the trace sample, and
// rows whose hop is derived. When the Fork says Ordered does not read the
// key (record.OrderedKeys) and the Branch ignores it on every hop of a
// row group's hop dictionary (record.AttrIgnorer), the column is left
// closed for that row group: every row with a hop from the dictionary
// ignores it, and the sample does not read it. A batch with a row whose
// hop is derived (a null or blank hop) — whose Take may read every
// attribute — opens the column again at that row (an offset index makes
// that a seek) and reads it from there on, as does a batch the fast rows
// do not take.

// planUnread marks the droppable attribute columns every hop of the row
// group ignores as unread, and closes them: at the row group's first
// batch, after its hop dictionary is loaded (a load error is left to the
// batch's own loads), and at the first batch after a Branch's answer
// turned (a column the row group opened again for a derived hop stays
// open: it would be opened again at the next one).
func (w *pqWorker) planUnread(in *record.Interner) {
	g := w.ign
	if g == nil {
		return
	}
	if g.changed = false; w.droppable&^w.revived == 0 {
		return
	}
	c := &w.curs[g.hopJ]
	for c.di >= c.dn {
		if c.load(in) != nil {
			return
		}
	}
	if c.dict == nil {
		return
	}
	g.renew(c)
	ign := w.droppable &^ w.revived
	for j, u := range w.unread {
		if u {
			ign &^= g.bit[j]
		}
	}
	if ign == 0 {
		return
	}
	for x, op := range c.ops {
		if op != opString {
			continue
		}
		if g.next[x] <= g.batch {
			g.ask(int32(x), c.strs[x], w.curs)
		}
		if ign &= g.mask[x]; ign == 0 {
			return
		}
	}
	for j := range w.curs {
		if b := g.bit[j]; b != 0 && ign&b != 0 {
			w.curs[j].close()
			w.unread[j] = true
			w.nunread++
			unreadChunks.Add(1)
		}
	}
}

// unreadChunks counts the column chunks planUnread left closed, over the
// process. Nothing a Branch or Ordered reads shows whether a column was
// read (that is the point), so a test that must know the columns were
// left unread asks UnreadChunks.
var unreadChunks atomic.Int64

// UnreadChunks is how many column chunks the Parquet reader has left
// unread (closed for the rest of a row group, or until a row reopened
// them) since the process started.
func UnreadChunks() int64 { return unreadChunks.Load() }

// hopless reports whether one of the next m rows of the hop column has
// no hop of the dictionary (null, blank, or a plain page): its Take may
// read every attribute.
func (w *pqWorker) hopless(m int) bool {
	c := &w.curs[w.ign.hopJ]
	if c.dict == nil {
		return true
	}
	v := c.vi
	for t := range m {
		if c.defs != nil && c.defs[c.di+t] != c.maxDef {
			return true
		}
		if c.ops[c.idx[v]] != opString {
			return true
		}
		v++
	}
	return false
}

// revive opens the unread columns again at row base of the file (their
// next load reads the page holding it, from that row).
func (w *pqWorker) revive(base int64) error {
	for j := range w.curs {
		if !w.unread[j] {
			continue
		}
		c := &w.curs[j]
		c.open(w.chunks[w.cols[j].idx])
		w.unread[j] = false
		w.nunread--
		w.revived |= w.ign.bit[j]
		if err := c.pages.SeekToRow(base - w.rgFirst); err != nil {
			return pqRowError(base+1, c.col.name, err)
		}
	}
	return nil
}

// renew resets the masks for hop dictionary d's entries when it is not
// the one they are of (a new row group's).
func (g *attrIgnore) renew(c *pqCursor) {
	if c.dict == g.dict {
		return
	}
	g.dict = c.dict
	g.mask = append(g.mask[:0], make([]uint64, len(c.entries))...)
	g.next = append(g.next[:0], make([]uint32, len(c.entries))...)
	g.wait = append(g.wait[:0], make([]uint32, len(c.entries))...)
}

// startRowGroup readies the unread columns' state for a row group whose
// first row is first (0-based in the file).
func (w *pqWorker) startRowGroup(chunks []parquet.ColumnChunk, first int64) {
	w.chunks, w.rgFirst, w.rgFresh = chunks, first, true
	clear(w.unread)
	w.nunread, w.revived = 0, 0
}
