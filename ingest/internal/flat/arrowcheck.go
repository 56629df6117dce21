package flat

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/tailscope/tailscope/option"
)

// arrow-go trusts the vector lengths inside an IPC schema: a corrupt file
// claiming billions of fields makes it allocate hundreds of GB and the
// process dies (found by FuzzArrow). Before the library sees a schema,
// checkArrowSchema walks its flatbuffer and rejects any vector longer than
// the bytes that could hold it. Field ids follow Arrow's Schema.fbs and
// Message.fbs (Message.header = Schema; Schema.fields; Field.children;
// custom_metadata); panics on out-of-range offsets are recovered by the
// decoder's noPanic.

const maxArrowDepth = 64

func fbVector(t *flatbuffers.Table, field int, elem int) (start, n int, err error) {
	o := flatbuffers.UOffsetT(t.Offset(flatbuffers.VOffsetT(4 + 2*field)))
	if o == 0 {
		return 0, 0, nil
	}
	n = t.VectorLen(o)
	start = int(t.Vector(o))
	if n < 0 || start < 0 || start+n*elem > len(t.Bytes) || start+n*elem < start {
		return 0, 0, fmt.Errorf("corrupt Arrow schema: a vector of %d entries overruns its %d-byte message", n, len(t.Bytes))
	}
	return start, n, nil
}

func checkArrowField(buf []byte, pos flatbuffers.UOffsetT, depth int) error {
	if depth > maxArrowDepth {
		return fmt.Errorf("corrupt Arrow schema: fields nested deeper than %d", maxArrowDepth)
	}
	t := &flatbuffers.Table{Bytes: buf, Pos: pos}
	if _, _, err := fbVector(t, 6, 4); err != nil { // custom_metadata
		return err
	}
	start, n, err := fbVector(t, 5, 4) // children
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		p := flatbuffers.UOffsetT(start + 4*i)
		if err := checkArrowField(buf, t.Indirect(p), depth+1); err != nil {
			return err
		}
	}
	return nil
}

func checkArrowSchema(buf []byte, pos flatbuffers.UOffsetT) error {
	t := &flatbuffers.Table{Bytes: buf, Pos: pos}
	if _, _, err := fbVector(t, 2, 4); err != nil { // custom_metadata
		return err
	}
	if _, _, err := fbVector(t, 3, 8); err != nil { // features
		return err
	}
	start, n, err := fbVector(t, 1, 4) // fields
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := checkArrowField(buf, t.Indirect(flatbuffers.UOffsetT(start+4*i)), 1); err != nil {
			return err
		}
	}
	return nil
}

// checkArrowStream reads the first IPC message (the schema) of a stream,
// checks it, and returns a reader that replays it before the rest.
func checkArrowStream(r *bufio.Reader, max int, names option.Names) (io.Reader, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:4]); err != nil {
		return nil, fmt.Errorf("truncated Arrow stream: %v", err)
	}
	head := pre[:4]
	n := binary.LittleEndian.Uint32(pre[:4])
	if n == 0xFFFFFFFF { // continuation marker, then the length
		if _, err := io.ReadFull(r, pre[4:8]); err != nil {
			return nil, fmt.Errorf("truncated Arrow stream: %v", err)
		}
		head = pre[:8]
		n = binary.LittleEndian.Uint32(pre[4:8])
	}
	if int64(n) > int64(max) {
		return nil, fmt.Errorf("corrupt Arrow stream: schema message of %d bytes (limit %d, see %s)", n, max, names.Of(option.MaxRecord))
	}
	meta := make([]byte, n)
	if _, err := io.ReadFull(r, meta); err != nil {
		return nil, fmt.Errorf("truncated Arrow stream: %v", err)
	}
	if n >= 4 {
		msg := &flatbuffers.Table{Bytes: meta, Pos: flatbuffers.GetUOffsetT(meta)}
		if int(msg.Pos) >= len(meta) {
			return nil, fmt.Errorf("corrupt Arrow stream: schema message points outside itself")
		}
		// bodyLength (field 3): arrow-go allocates it for the schema
		// message before any size limit applies.
		if o := flatbuffers.UOffsetT(msg.Offset(10)); o != 0 {
			if bl := msg.GetInt64(o + msg.Pos); bl < 0 || bl > maxArrowBody {
				return nil, fmt.Errorf("corrupt Arrow stream: schema message claims a body of %d bytes", bl)
			}
		}
		if o := flatbuffers.UOffsetT(msg.Offset(6)); o != 0 && msg.GetByte(o+msg.Pos) == 1 { // header_type Schema
			if o := flatbuffers.UOffsetT(msg.Offset(8)); o != 0 {
				if err := checkArrowSchema(meta, msg.Indirect(o+msg.Pos)); err != nil {
					return nil, err
				}
			}
		}
	}
	return io.MultiReader(bytes.NewReader(append(append([]byte{}, head...), meta...)), r), nil
}

// checkArrowFooter checks the schema in an IPC file's footer.
func checkArrowFooter(ra io.ReaderAt, size int64) error {
	if size < 18 {
		return fmt.Errorf("not a readable Arrow file: %d bytes (truncated?)", size)
	}
	var tail [10]byte
	if _, err := ra.ReadAt(tail[:], size-10); err != nil {
		return err
	}
	if string(tail[4:]) != "ARROW1" {
		return fmt.Errorf("not a readable Arrow file: no ARROW1 magic at the end (truncated?)")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n <= 0 || n > size-18 {
		return fmt.Errorf("not a readable Arrow file: footer length %d does not fit the file (truncated or corrupt?)", n)
	}
	buf := make([]byte, n)
	if _, err := ra.ReadAt(buf, size-10-n); err != nil {
		return err
	}
	ft := &flatbuffers.Table{Bytes: buf, Pos: flatbuffers.GetUOffsetT(buf)}
	for _, f := range []struct{ field, elem int }{{2, 24}, {3, 24}} { // dictionaries, recordBatches (Block structs)
		if _, _, err := fbVector(ft, f.field, f.elem); err != nil {
			return err
		}
	}
	if o := flatbuffers.UOffsetT(ft.Offset(6)); o != 0 { // schema
		return checkArrowSchema(buf, ft.Indirect(o+ft.Pos))
	}
	return nil
}

// arrowFrames passes an Arrow IPC stream through while checking each
// message's framing before arrow-go sees it: arrow-go allocates a message's
// metadata and body at the lengths the stream claims, before any limit
// applies, so a corrupt length would cost that much memory. A message whose
// metadata is over maxMeta or whose body is over maxBody ends the stream
// with an error instead.
type arrowFrames struct {
	r                *bufio.Reader
	maxMeta, maxBody int64
	names            option.Names // for the limit's setting (MaxRecord)
	left             int64        // bytes of the current message still to pass through
	pending          []byte
	err              error
}

func (f *arrowFrames) Read(p []byte) (int, error) {
	for len(f.pending) == 0 && f.left == 0 {
		if f.err != nil {
			return 0, f.err
		}
		f.err = f.frame()
	}
	if len(f.pending) > 0 {
		n := copy(p, f.pending)
		f.pending = f.pending[n:]
		return n, nil
	}
	if int64(len(p)) > f.left {
		p = p[:f.left]
	}
	n, err := f.r.Read(p)
	f.left -= int64(n)
	if err == io.EOF && f.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// frame reads one message's prefix and metadata, checks them, and queues
// them; the body then streams through.
func (f *arrowFrames) frame() error {
	var pre [8]byte
	if _, err := io.ReadFull(f.r, pre[:4]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return err
		}
		return io.EOF
	}
	head := pre[:4]
	n := binary.LittleEndian.Uint32(pre[:4])
	if n == 0xFFFFFFFF {
		if _, err := io.ReadFull(f.r, pre[4:8]); err != nil {
			return io.ErrUnexpectedEOF
		}
		head = pre[:8]
		n = binary.LittleEndian.Uint32(pre[4:8])
	}
	if n == 0 { // end of stream marker
		f.pending = append([]byte{}, head...)
		return io.EOF
	}
	if int64(n) > f.maxMeta {
		return fmt.Errorf("corrupt Arrow stream: a message of %d bytes of metadata (limit %d, see %s)", n, f.maxMeta, f.names.Of(option.MaxRecord))
	}
	meta := make([]byte, n)
	if _, err := io.ReadFull(f.r, meta); err != nil {
		return io.ErrUnexpectedEOF
	}
	var body int64
	if n >= 4 {
		msg := &flatbuffers.Table{Bytes: meta, Pos: flatbuffers.GetUOffsetT(meta)}
		if int(msg.Pos)+4 > len(meta) {
			return fmt.Errorf("corrupt Arrow stream: a message points outside itself")
		}
		if o := flatbuffers.UOffsetT(msg.Offset(10)); o != 0 {
			body = msg.GetInt64(o + msg.Pos)
		}
		// Message.custom_metadata (field 4), on every message: arrow-go
		// sizes a slice by its length before reading an entry, and a
		// record batch whose message claimed billions made it allocate
		// 64 GB (found by FuzzArrow).
		if _, _, err := fbVector(msg, 4, 4); err != nil {
			return err
		}
	}
	if body < 0 || body > f.maxBody {
		return fmt.Errorf("corrupt Arrow stream: a message claims a body of %d bytes (limit %d)", body, f.maxBody)
	}
	f.pending = append(append(f.pending[:0], head...), meta...)
	f.left = body
	return nil
}

// arrowAllocator bounds what arrow-go may allocate while reading one input:
// no single buffer over maxArrowBody, and no more than maxArrowLive bytes
// alive at once. arrow-go sizes buffers from lengths the input claims (a
// message body, a compressed buffer's uncompressed length); a corrupt claim
// becomes a panic here, which decodeArrow turns into an error naming the
// file, instead of an out-of-memory crash. Not safe for concurrent use; the
// readers here use it from one goroutine.
type arrowAllocator struct {
	mem  memory.Allocator
	live int64
}

// maxArrowLive bounds the bytes arrow-go holds at once for one input.
const maxArrowLive = 4 * maxArrowBody

func (a *arrowAllocator) check(n int, old int) {
	if n < 0 || int64(n) > maxArrowBody || a.live-int64(old)+int64(n) > maxArrowLive {
		panic(fmt.Sprintf("the input claims a buffer of %d bytes (limit %d)", n, int64(maxArrowBody)))
	}
}

func (a *arrowAllocator) Allocate(n int) []byte {
	a.check(n, 0)
	a.live += int64(n)
	return a.mem.Allocate(n)
}

func (a *arrowAllocator) Reallocate(n int, b []byte) []byte {
	a.check(n, len(b))
	a.live += int64(n - len(b))
	return a.mem.Reallocate(n, b)
}

func (a *arrowAllocator) Free(b []byte) {
	a.live -= int64(len(b))
	a.mem.Free(b)
}
